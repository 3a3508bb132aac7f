/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The statistics as JSON, schema "cashmere-stats/1" (docs/STATS.md): what ran, where and
 * on what, then each process's timers and counters and the job's total. Every string goes
 * through cm_json_string; a process's line and the total's are single lines.
 */
#include "config.h"
#include "util/cm_stats.h"
#include "util/cm_json.h"

#include <inttypes.h>
#include <time.h>

/* seconds since the epoch as ISO 8601 UTC, "2025-01-31T12:00:00.123Z"; NULL for 0. */
static void cm_stats_json_time(FILE *out, double t)
{
    char buf[64];
    time_t s = (time_t)t;
    struct tm tm;

    if (t <= 0 || gmtime_r(&s, &tm) == NULL) {
        fputs("null", out);
        return;
    }
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(out, "\"%s.%03dZ\"", buf, (int)((t - (double)s) * 1000) % 1000);
}

/* A positive count, else null (not known). */
static void cm_stats_json_count(FILE *out, int n)
{
    if (n > 0) {
        fprintf(out, "%d", n);
    } else {
        fputs("null", out);
    }
}

void cm_stats_json_run(FILE *out, const cm_stats_run_t *run)
{
    fputs("  \"program\": ", out);
    cm_json_string(out, run->program);
    fputs(",\n  \"binary\": ", out);
    cm_json_string(out, run->binary);
    fputs(",\n  \"args\": [", out);
    for (int i = 0; i < run->nargs; i++) {
        fputs(i ? ", " : "", out);
        cm_json_string(out, run->args[i]);
    }
    fputs("],\n  \"protocol\": ", out);
    cm_json_string(out, run->protocol);
    fputs(",\n  \"variant\": ", out);
    cm_json_string(out, run->variant);
    fputs(",\n  \"mechanisms\": ", out);
    if (run->variant == NULL) {
        fputs("null", out);
    } else {
        const char *names[] = {"fill", "write", "merge", "build", "fabric"};
        const char *values[] = {run->fill, run->write, run->merge, run->build, run->fabric};
        fputc('{', out);
        for (int i = 0; i < 5; i++) {
            fputs(i ? ", " : "", out);
            cm_json_key(out, names[i]);
            cm_json_string(out, values[i]);
        }
        fputc('}', out);
    }
    fputs(",\n  \"description\": ", out);
    cm_json_string(out, run->description);
    fprintf(out, ",\n  \"job\": {\"nprocs\": %d, \"nodes\": ", run->nprocs);
    cm_stats_json_count(out, run->nodes);
    fputs(", \"procs_per_node\": ", out);
    cm_stats_json_count(out, run->procs_per_node);
    fputs(", \"page_size\": ", out);
    cm_stats_json_count(out, (int)run->page_size);
    fputs("},\n  \"library\": {\"version\": ", out);
    cm_json_string(out, run->version);
    fputs(", \"commit\": ", out);
    cm_json_string(out, run->commit);
    fputs("},\n  \"machine\": {\"hostname\": ", out);
    cm_json_string(out, run->hostname);
    fputs(", \"cores\": ", out);
    cm_stats_json_count(out, run->cores);
    fputs(", \"kernel\": ", out);
    cm_json_string(out, run->kernel);
    fputs("},\n  \"ucx\": {\"version\": ", out);
    cm_json_string(out, run->ucx_version);
    fputs(", \"tls\": ", out);
    cm_json_string(out, run->ucx_tls);
    fputs(", \"transports\": ", out);
    cm_json_string(out, run->transports);
    fputs("},\n  \"time\": {\"start\": ", out);
    cm_stats_json_time(out, run->start);
    fputs(", \"end\": ", out);
    cm_stats_json_time(out, run->end);
    fputs("},\n", out);
}

/* "timers": {...}, "counters": {...} of one process or the total. */
static void cm_stats_json_values(FILE *out, const cm_stats_t *s)
{
    const char *sep = "";

    fputs("\"timers\": {", out);
#define CM_STATS_JSON(_name, _doc) \
    fprintf(out, "%s\"%s\": %" PRIu64, sep, #_name, s->_name); \
    sep = ", ";
    CM_STATS_TIMERS(CM_STATS_JSON)
    fputs("}, \"counters\": {", out);
    sep = "";
    CM_STATS_COUNTERS(CM_STATS_JSON)
#undef CM_STATS_JSON
    fputc('}', out);
}

void cm_stats_write_json(FILE *out, const cm_stats_run_t *run, const cm_stats_where_t *where,
                         const cm_stats_t *per_proc, int nprocs)
{
    cm_stats_t total;

    cm_stats_total(per_proc, nprocs, &total);
    fputs("{\n  \"schema\": \"cashmere-stats/1\",\n", out);
    cm_stats_json_run(out, run);
    fputs("  \"processes\": [\n", out);
    for (int r = 0; r < nprocs; r++) {
        fprintf(out, "    {\"rank\": %d, \"host\": ", r);
        cm_json_string(out, where[r].host);
        fputs(", \"local_procs\": ", out);
        cm_stats_json_count(out, where[r].local_procs);
        fprintf(out, ", \"pid\": %" PRId32 ", \"transports\": ", where[r].pid);
        cm_json_string(out, where[r].transports);
        fputs(", ", out);
        cm_stats_json_values(out, &per_proc[r]);
        fprintf(out, "}%s\n", (r + 1 < nprocs) ? "," : "");
    }
    fputs("  ],\n  \"total\": {", out);
    cm_stats_json_values(out, &total);
    fputs("}\n}\n", out);
}
