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
#include "src/util/cm_json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CM_STATS_SCHEMA "cashmere-stats/1"

/* The columns of the schema's run and process members (docs/STATS.md), in its order: always
 * there, whichever files are read, so that a CSV of TreadMarks runs only has the variant's
 * and the mechanisms' columns too (empty). A file's other members follow, as first seen. */
static const char *const cm_stats_run_columns[] = {
    "file", "schema", "program", "binary", "args", "protocol", "variant", "mechanisms.fill",
    "mechanisms.write", "mechanisms.merge", "mechanisms.build", "mechanisms.fabric",
    "description", "job.nprocs", "job.nodes", "job.procs_per_node", "library.version",
    "library.commit", "machine.hostname", "machine.cores", "machine.kernel", "ucx.version",
    "ucx.tls", "ucx.transports", "time.start", "time.end",
};
static const char *const cm_stats_process_columns[] = {
    "rank", "host", "local_procs", "pid", "transports",
};

typedef struct {
    char   **cells; /* by column; NULL: empty */
    size_t ncells;
} cm_stats_row_t;

typedef struct {
    char           **columns;
    size_t         ncolumns;
    cm_stats_row_t *rows;
    size_t         nrows;
} cm_stats_table_t;

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

static void *cm_stats_grow(void *p, size_t n, size_t size)
{
    p = realloc(p, (n ? n : 1) * size);
    if (p == NULL) {
        cm_stats_die(1, "out of memory");
    }
    return p;
}

static char *cm_stats_strdup(const char *s)
{
    char *d = strdup(s);
    if (d == NULL) {
        cm_stats_die(1, "out of memory");
    }
    return d;
}

/* The column's index, added at the end when new. */
static size_t cm_stats_column(cm_stats_table_t *t, const char *name)
{
    for (size_t i = 0; i < t->ncolumns; i++) {
        if (strcmp(t->columns[i], name) == 0) {
            return i;
        }
    }
    t->columns = cm_stats_grow(t->columns, t->ncolumns + 1, sizeof(*t->columns));
    t->columns[t->ncolumns] = cm_stats_strdup(name);
    return t->ncolumns++;
}

/* Some column is name.something: name is an object of the schema (null here: "mechanisms"). */
static bool cm_stats_is_object(const cm_stats_table_t *t, const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; i < t->ncolumns; i++) {
        if (strncmp(t->columns[i], name, n) == 0 && t->columns[i][n] == '.') {
            return true;
        }
    }
    return false;
}

static void cm_stats_set(cm_stats_table_t *t, cm_stats_row_t *row, const char *name, const char *value)
{
    size_t c;

    if (value == NULL && cm_stats_is_object(t, name)) {
        return; /* its members' columns stay empty */
    }
    c = cm_stats_column(t, name);

    if (c >= row->ncells) {
        row->cells = cm_stats_grow(row->cells, c + 1, sizeof(*row->cells));
        memset(row->cells + row->ncells, 0, (c + 1 - row->ncells) * sizeof(*row->cells));
        row->ncells = c + 1;
    }
    free(row->cells[c]);
    row->cells[c] = (value != NULL) ? cm_stats_strdup(value) : NULL;
}

/* A scalar's text; NULL for null (an empty field). Arrays of scalars: joined with spaces. */
static char *cm_stats_scalar(const cm_json_t *v, bool *is_scalar)
{
    *is_scalar = true;
    switch (v->type) {
    case CM_JSON_NULL:   return NULL;
    case CM_JSON_FALSE:  return cm_stats_strdup("false");
    case CM_JSON_TRUE:   return cm_stats_strdup("true");
    case CM_JSON_NUMBER:
    case CM_JSON_STRING: return cm_stats_strdup(v->text);
    case CM_JSON_ARRAY: {
        size_t len = 1;
        char *out;
        for (const cm_json_t *e = v->child; e != NULL; e = e->next) {
            if (e->type != CM_JSON_STRING && e->type != CM_JSON_NUMBER) {
                *is_scalar = false;
                return NULL;
            }
            len += strlen(e->text) + 1;
        }
        out = cm_stats_grow(NULL, len, 1);
        out[0] = '\0';
        for (const cm_json_t *e = v->child; e != NULL; e = e->next) {
            strcat(out, e->text);
            if (e->next != NULL) {
                strcat(out, " ");
            }
        }
        return out;
    }
    default:
        *is_scalar = false;
        return NULL;
    }
}

/*
 * v's scalars into row. by_path: named by their path from the top ("job.nprocs"), where the
 * top's "processes" and "total" are left out (they hold the values); else by their own name
 * (a process's "rank", a timer's "fault_ns").
 */
static void cm_stats_flatten(cm_stats_table_t *t, cm_stats_row_t *row, const cm_json_t *v,
                             const char *path, bool by_path)
{
    for (const cm_json_t *m = v->child; m != NULL; m = m->next) {
        char *name, *text;
        bool scalar;
        size_t len = strlen(path) + strlen(m->key) + 2;

        if (by_path && path[0] == '\0' &&
            (strcmp(m->key, "processes") == 0 || strcmp(m->key, "total") == 0)) {
            continue;
        }

        name = cm_stats_grow(NULL, len, 1);
        snprintf(name, len, "%s%s%s", (by_path && path[0]) ? path : "", (by_path && path[0]) ? "." : "",
                 m->key);
        if (m->type == CM_JSON_OBJECT) {
            cm_stats_flatten(t, row, m, name, by_path);
        } else {
            text = cm_stats_scalar(m, &scalar);
            if (scalar) {
                cm_stats_set(t, row, name, text);
            }
            free(text);
        }
        free(name);
    }
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

/* The rows of one statistics file. */
static void cm_stats_file(cm_stats_table_t *t, const char *path, bool per_process)
{
    size_t len;
    char *text = cm_stats_read(path, &len), err[256];
    const cm_json_t *schema, *total, *procs;
    cm_json_t *top;
    cm_stats_row_t run = {NULL, 0};

    if (cm_json_parse(text, len, &top, err, sizeof(err)) != CM_OK) {
        cm_stats_die(1, "%s: not JSON: %s", path, err);
    }
    free(text);
    schema = cm_json_get(top, "schema");
    if (schema == NULL || schema->type != CM_JSON_STRING ||
        strncmp(schema->text, "cashmere-stats/", 15) != 0) {
        cm_stats_die(1, "%s: not a statistics file (no \"schema\": \"%s\")", path, CM_STATS_SCHEMA);
    }
    if (strcmp(schema->text, CM_STATS_SCHEMA) != 0) {
        cm_stats_die(1, "%s: schema %s: this cm_stats reads %s", path, schema->text,
                     CM_STATS_SCHEMA);
    }
    total = cm_json_get(top, "total");
    procs = cm_json_get(top, "processes");
    if (total == NULL || total->type != CM_JSON_OBJECT || procs == NULL ||
        procs->type != CM_JSON_ARRAY) {
        cm_stats_die(1, "%s: no \"total\" object or \"processes\" array", path);
    }

    /* The run's members: all but the two that hold the values. */
    cm_stats_set(t, &run, "file", path);
    cm_stats_flatten(t, &run, top, "", true);
    if (!per_process) {
        cm_stats_flatten(t, &run, total, "", false);
        t->rows = cm_stats_grow(t->rows, t->nrows + 1, sizeof(*t->rows));
        t->rows[t->nrows++] = run;
    } else {
        for (const cm_json_t *p = procs->child; p != NULL; p = p->next) {
            cm_stats_row_t row = {NULL, 0};
            if (p->type != CM_JSON_OBJECT) {
                cm_stats_die(1, "%s: a process that is not an object", path);
            }
            for (size_t c = 0; c < run.ncells; c++) {
                if (run.cells[c] != NULL) {
                    cm_stats_set(t, &row, t->columns[c], run.cells[c]);
                }
            }
            cm_stats_flatten(t, &row, p, "", false);
            t->rows = cm_stats_grow(t->rows, t->nrows + 1, sizeof(*t->rows));
            t->rows[t->nrows++] = row;
        }
        for (size_t c = 0; c < run.ncells; c++) {
            free(run.cells[c]);
        }
        free(run.cells);
    }
    cm_json_free(top);
}

/* One CSV field (RFC 4180): quoted where it holds a comma, a quote or a line break. */
static void cm_stats_field(const char *s)
{
    if (s == NULL) {
        return;
    }
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s != '\0'; s++) {
        if (*s == '"') {
            putchar('"');
        }
        putchar(*s);
    }
    putchar('"');
}

static void cm_stats_print(const cm_stats_table_t *t, const size_t *cols, size_t ncols)
{
    for (size_t i = 0; i < ncols; i++) {
        fputs(i ? "," : "", stdout);
        cm_stats_field(t->columns[cols[i]]);
    }
    putchar('\n');
    for (size_t r = 0; r < t->nrows; r++) {
        const cm_stats_row_t *row = &t->rows[r];
        for (size_t i = 0; i < ncols; i++) {
            fputs(i ? "," : "", stdout);
            cm_stats_field(cols[i] < row->ncells ? row->cells[cols[i]] : NULL);
        }
        putchar('\n');
    }
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
    cm_stats_table_t t = {NULL, 0, NULL, 0};
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
    for (size_t i = 0; i < sizeof(cm_stats_run_columns) / sizeof(cm_stats_run_columns[0]); i++) {
        cm_stats_column(&t, cm_stats_run_columns[i]);
    }
    for (size_t i = 0; per_process && i < sizeof(cm_stats_process_columns) /
                                               sizeof(cm_stats_process_columns[0]); i++) {
        cm_stats_column(&t, cm_stats_process_columns[i]);
    }
    for (size_t f = 0; f < nfiles; f++) {
        cm_stats_file(&t, files[f], per_process);
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
    cm_stats_print(&t, cols, ncols);
    for (size_t r = 0; r < t.nrows; r++) {
        for (size_t c = 0; c < t.rows[r].ncells; c++) {
            free(t.rows[r].cells[c]);
        }
        free(t.rows[r].cells);
    }
    for (size_t c = 0; c < t.ncolumns; c++) {
        free(t.columns[c]);
    }
    free(t.rows);
    free(t.columns);
    free(cols);
    free(files);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cm_stats_die(1, "cannot write the CSV: %s", strerror(errno));
    }
    return 0;
}
