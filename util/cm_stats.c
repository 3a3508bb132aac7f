/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "util/cm_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__thread uint64_t *cm_stats_phase_acc __attribute__((tls_model("initial-exec")));
__thread uint64_t cm_stats_phase_t0 __attribute__((tls_model("initial-exec")));
cm_stats_t *cm_stats_phase_stats;

void cm_stats_total(const cm_stats_t *per_proc, int nprocs, cm_stats_t *total)
{
    memset(total, 0, sizeof(*total));
    for (int r = 0; r < nprocs; r++) {
#define CM_STATS_SUM(_name, _doc) total->_name += per_proc[r]._name;
        CM_STATS_TIMERS(CM_STATS_SUM)
        CM_STATS_COUNTERS(CM_STATS_SUM)
#undef CM_STATS_SUM
    }
    /* Wall time is not additive: the job's is the longest. */
    total->total_ns = 0;
    for (int r = 0; r < nprocs; r++) {
        if (per_proc[r].total_ns > total->total_ns) {
            total->total_ns = per_proc[r].total_ns;
        }
    }
}

/* A timer's row: its name with _ms for _ns, since the table prints milliseconds. */
static void cm_stats_row_ms(FILE *out, const char *ns_name)
{
    char label[48];

    snprintf(label, sizeof(label), "%.*s_ms", (int)strlen(ns_name) - 3, ns_name);
    fprintf(out, "%-22s", label);
}

static void cm_stats_table_to(FILE *out, const cm_stats_t *per_proc, int nprocs, const char *header)
{
    cm_stats_t total;
    int shown = (nprocs <= 16) ? nprocs : 0; /* beyond 16 processes only the total fits */
    int zero = 0; /* rows zero in every process: the other protocol's, mechanisms not in use */

    cm_stats_total(per_proc, nprocs, &total);
    fprintf(out, "# Cashmere-RMA statistics: %s\n", header);
    fprintf(out, "# total: the sum over the processes, except total_ms: the longest process\n");
    fprintf(out, "%-22s", "");
    for (int r = 0; r < shown; r++) {
        fprintf(out, " %11s%-2d", "rank", r);
    }
    fprintf(out, " %13s\n", "total");
#define CM_STATS_ROW_T(_name, _doc) \
    if (total._name == 0 && strcmp(#_name, "total_ns") != 0) { \
        zero++; \
    } else { \
        cm_stats_row_ms(out, #_name); \
        for (int r = 0; r < shown; r++) { \
            fprintf(out, " %13.3f", (double)per_proc[r]._name / 1e6); \
        } \
        fprintf(out, " %13.3f\n", (double)total._name / 1e6); \
    }
#define CM_STATS_ROW_C(_name, _doc) \
    if (total._name == 0) { \
        zero++; \
    } else { \
        fprintf(out, "%-22s", #_name); \
        for (int r = 0; r < shown; r++) { \
            fprintf(out, " %13" PRIu64, per_proc[r]._name); \
        } \
        fprintf(out, " %13" PRIu64 "\n", total._name); \
    }
    fprintf(out, "# times in milliseconds (NAME_ms here is NAME_ns, in nanoseconds, in the JSON)\n");
    CM_STATS_TIMERS(CM_STATS_ROW_T)
    fprintf(out, "# counts\n");
    CM_STATS_COUNTERS(CM_STATS_ROW_C)
#undef CM_STATS_ROW_T
#undef CM_STATS_ROW_C
    if (zero > 0) {
        fprintf(out, "# %d rows zero in every process not shown (the other protocol's, mechanisms "
                "not in use); CM_STATS=FILE.json keeps every row\n", zero);
    }
}

/*
 * The table goes out a whole line per write. Row by row, stderr (unbuffered) wrote each
 * column on its own, and a launcher forwarding a rank's stdout and stderr through separate
 * pipes once put a line of stdout ("litmus all: OK") inside a row of this table.
 */
void cm_stats_print_table(FILE *out, const cm_stats_t *per_proc, int nprocs, const char *header)
{
    char *buf = NULL, *line;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);

    if (mem == NULL) {
        cm_stats_table_to(out, per_proc, nprocs, header);
        return;
    }
    cm_stats_table_to(mem, per_proc, nprocs, header);
    if (fclose(mem) != 0 || buf == NULL) {
        free(buf);
        cm_stats_table_to(out, per_proc, nprocs, header);
        return;
    }
    for (line = buf; *line != '\0';) {
        char *nl = strchr(line, '\n');
        size_t n = (nl != NULL) ? (size_t)(nl - line) + 1 : strlen(line);
        fwrite(line, 1, n, out);
        fflush(out);
        line += n;
    }
    free(buf);
}
