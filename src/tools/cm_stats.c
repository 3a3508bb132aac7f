/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_stats: statistics files (CM_STATS=FILE, schema cashmere-stats/1, docs/STATS.md) of
 * several runs as one CSV, for spreadsheets, gnuplot and awk.
 *
 *   cm_stats [--per-process] [--columns LIST] FILE...
 *
 * One row per file (the job's total), or with --per-process one per process. Columns: the
 * file, the run's scalar members by their path (job.nprocs), then with --per-process the
 * process's, then every timer and counter by its name. The union over the files, in the
 * order first seen; null and missing are empty fields. Standalone: it reads JSON with the
 * library's parser and needs neither UCX nor a job.
 */
#include "config.h"
#include "src/tools/cm_stats_table.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void cm_stats_die(int status, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

static void cm_stats_die(int status, const char *fmt, ...)
{
    va_list ap;

    fputs("cm_stats: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(status);
}

static char *cm_stats_read(const char *path, size_t *len)
{
    FILE *f = (strcmp(path, "-") == 0) ? stdin : fopen(path, "r");
    size_t cap = 0, got;
    char *buf = NULL;

    if (f == NULL) {
        cm_stats_die(1, "%s: cannot read: %s", path, strerror(errno));
    }
    *len = 0;
    do {
        cap = cap ? 2 * cap : 65536;
        buf = cm_stats_grow(buf, cap, 1);
        got = fread(buf + *len, 1, cap - *len, f);
        *len += got;
    } while (*len == cap);
    if (ferror(f)) {
        cm_stats_die(1, "%s: cannot read: %s", path, strerror(errno));
    }
    if (f != stdin) {
        fclose(f);
    }
    return buf;
}

static void cm_stats_usage(void)
{
    printf("usage: cm_stats [--per-process] [--columns LIST] FILE...\n"
           "  statistics files of runs (CM_STATS=FILE, schema %s, docs/STATS.md) as one\n"
           "  CSV on stdout: a header, then one row per file with the job's total\n"
           "  FILE              a statistics file; - is standard input\n"
           "  -p, --per-process one row per process of each file instead\n"
           "  -c, --columns L   only the columns of the comma-separated list L, in its order\n"
           "  -h, --help        this help\n"
           "  --version         the version\n"
           "columns: file, the run's members by their path (program, protocol, variant,\n"
           "mechanisms.fill, job.nprocs, library.commit, machine.hostname, ...), with\n"
           "--per-process the process's (rank, host, ...), then every timer (NAME_ns, in ns)\n"
           "and counter by its name. Exit 1 with one line for a file that cannot be read or is\n"
           "not %s; 2 for a bad option.\n", CM_STATS_SCHEMA, CM_STATS_SCHEMA);
}

int main(int argc, char **argv)
{
    cm_stats_table_t t;
    bool per_process = false, options = true;
    const char *columns = NULL;
    size_t *cols, ncols = 0, nfiles = 0;
    const char **files = cm_stats_grow(NULL, (size_t)argc, sizeof(*files));

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options && strcmp(a, "--") == 0) {
            options = false;
        } else if (options && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            cm_stats_usage();
            return 0;
        } else if (options && strcmp(a, "--version") == 0) {
            printf("cm_stats (Cashmere-RMA) %s\n", PACKAGE_VERSION);
            return 0;
        } else if (options && (strcmp(a, "-p") == 0 || strcmp(a, "--per-process") == 0)) {
            per_process = true;
        } else if (options && (strcmp(a, "-c") == 0 || strcmp(a, "--columns") == 0)) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0') {
                cm_stats_die(2, "%s needs a comma-separated list of columns (see cm_stats --help)", a);
            }
            columns = argv[++i];
        } else if (options && a[0] == '-' && a[1] != '\0') {
            cm_stats_die(2, "unknown option '%s' (see cm_stats --help)", a);
        } else {
            files[nfiles++] = a;
        }
    }
    if (nfiles == 0) {
        cm_stats_die(2, "no statistics file given (see cm_stats --help)");
    }
    cm_stats_table_init(&t, per_process);
    for (size_t f = 0; f < nfiles; f++) {
        size_t len;
        char *text = cm_stats_read(files[f], &len), err[512];

        if (cm_stats_table_add(&t, files[f], text, len, per_process, err, sizeof(err)) != CM_OK) {
            cm_stats_die(1, "%s", err);
        }
        free(text);
    }
    /* As many as the columns, or as the list names (one more than its commas). */
    cols = cm_stats_grow(NULL, t.ncolumns + (columns ? strlen(columns) + 1 : 0), sizeof(*cols));
    if (columns == NULL) {
        for (ncols = 0; ncols < t.ncolumns; ncols++) {
            cols[ncols] = ncols;
        }
    } else {
        for (const char *p = columns; ; p += strcspn(p, ",") + 1) {
            size_t n = strcspn(p, ","), c;
            for (c = 0; c < t.ncolumns; c++) {
                if (strlen(t.columns[c]) == n && strncmp(t.columns[c], p, n) == 0) {
                    break;
                }
            }
            if (c == t.ncolumns) {
                /* A member's last name (nprocs for job.nprocs) is the likely slip: name it. */
                for (c = 0; c < t.ncolumns; c++) {
                    const char *dot = strrchr(t.columns[c], '.');
                    if (dot != NULL && strlen(dot + 1) == n && strncmp(dot + 1, p, n) == 0) {
                        cm_stats_die(2, "--columns: no column '%.*s' in these files (did you mean "
                                     "%s?)", (int)n, p, t.columns[c]);
                    }
                }
                cm_stats_die(2, "--columns: no column '%.*s' in these files (see cm_stats --help)",
                             (int)n, p);
            }
            cols[ncols++] = c;
            if (p[n] == '\0') {
                break;
            }
        }
    }
    cm_stats_table_print(stdout, &t, cols, ncols);
    cm_stats_table_free(&t);
    free(cols);
    free(files);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cm_stats_die(1, "cannot write the CSV: %s", strerror(errno));
    }
    return 0;
}
