/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_bench's output and options: the table, or one JSON object of schema cashmere-bench/1
 * (docs/STATS.md) that describes the run as the statistics do; --help, --version and a
 * one-line error for anything else.
 */
#include "config.h"
#include "src/tools/cm_bench.h"
#include "src/runtime/cm_check.h"
#include "util/cm_build.h"
#include "util/cm_json.h"
#include "util/cm_log.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void cm_bench_size_str(size_t size, char *buf, size_t len)
{
    if (size == 0) {
        snprintf(buf, len, "-");
    } else if (size >= (1u << 20) && size % (1u << 20) == 0) {
        snprintf(buf, len, "%zu MiB", size >> 20);
    } else if (size >= 1024 && size % 1024 == 0) {
        snprintf(buf, len, "%zu KiB", size >> 10);
    } else {
        snprintf(buf, len, "%zu B", size);
    }
}

/* A JSON number with decimals; null for what JSON cannot hold (infinities, NaN). */
static void cm_bench_json_number(double v, int decimals)
{
    if (isfinite(v)) {
        printf("%.*f", decimals, v);
    } else {
        printf("null");
    }
}

static void cm_bench_print_json(cm_bench_t *b, const char *transport)
{
    const cm_config_t *cfg = &cm_rt.config;
    cm_rma_stats_t st;
    cm_rt_run_t info;

    cm_rma_get_stats(b->rma, &st);
    cm_rt_run_describe(&info, NULL, 0);
    printf("{\n  \"schema\": \"cashmere-bench/1\",\n  \"tool\": \"cm_bench\", \"version\": ");
    cm_json_string(stdout, PACKAGE_VERSION);
    printf(",\n");
    cm_stats_json_run(stdout, &info.run);
    cm_rt_run_release(&info);
    printf("  \"initiator\": 0, \"target\": %d,\n  \"transport\": ", b->target);
    cm_json_string(stdout, transport);
    printf(", \"direct_mapped\": %s, \"progress_thread\": %s,\n",
           cm_rma_ptr(b->rma, b->target, b->remote) ? "true" : "false",
           cm_rma_progress_thread_running(b->rma) ? "true" : "false");
    printf("  \"delay\": {\"latency_ns\": %" PRIu64 ", \"bandwidth_Bps\": ", cfg->net_latency);
    cm_bench_json_number(cfg->net_bandwidth, 0);
    printf(", \"overhead_ns\": %" PRIu64 ", \"occupancy_ns\": %" PRIu64 ", \"packet_bytes\": %zu"
           ", \"interrupt_ns\": %" PRIu64 "},\n", cfg->net_overhead, cfg->net_occupancy,
           (size_t)cfg->net_packet, cfg->net_interrupt);
    printf("  \"batches\": %d, \"statistic\": \"median\",\n  \"results\": [\n", b->batches);
    for (int i = 0; i < b->nresults; i++) {
        cm_bench_result_t *r = &b->results[i];
        printf("    {\"name\": ");
        cm_json_string(stdout, r->name);
        printf(", \"size\": %zu, \"unit\": ", r->size);
        cm_json_string(stdout, r->unit);
        printf(", \"cm\": ");
        cm_bench_json_number(r->cm, 6);
        if (r->ref >= 0) {
            printf(", \"ref\": ");
            cm_bench_json_number(r->ref, 6);
            printf(", \"ref_name\": ");
            cm_json_string(stdout, r->ref_name);
            printf(", \"ratio\": ");
            cm_bench_json_number(r->cm / r->ref, 3);
        }
        printf("}%s\n", (i + 1 < b->nresults) ? "," : "");
    }
    printf("  ],\n  \"rma_stats\": {\"puts\": %" PRIu64 ", \"gets\": %" PRIu64
           ", \"atomics\": %" PRIu64 ", \"flushes\": %" PRIu64 ", \"delay_ns\": %" PRIu64
           ", \"progress_wakeups\": %" PRIu64 "}\n}\n",
           st.puts, st.gets, st.atomics, st.flushes, st.delay_ns, st.progress_wakeups);
}

void cm_bench_print(cm_bench_t *b, bool json, const char *transport)
{
    const cm_config_t *cfg = &cm_rt.config;
    const char *variant = cm_variant_name();

    if (json) {
        cm_bench_print_json(b, transport);
        return;
    }
    printf("# cm_bench %s (commit %s): %d processes, rank 0 -> rank %d over %s (%s), progress "
           "thread %s, protocol %s%s%s\n", PACKAGE_VERSION, cm_build_commit(), cm_rt.nprocs,
           b->target, transport,
           cm_rma_ptr(b->rma, b->target, b->remote) ? "peer memory directly mapped"
                                                     : "no direct mapping",
           cm_rma_progress_thread_running(b->rma) ? "on" : "off", cm_protocol_name(),
           variant ? ", variant " : "", variant ? variant : "");
    if (cm_config_net_delayed(cfg)) {
        printf("# delay injection: latency %" PRIu64 " ns, bandwidth %.0f B/s (0 = unlimited), "
               "overhead %" PRIu64 " ns, occupancy %" PRIu64 " ns per %zu-byte packet, interrupt %"
               PRIu64 " ns; 'injected:' rows: what they add, against the model ('model'), the "
               "same operation with them paused in alternate batches\n", cfg->net_latency,
               cfg->net_bandwidth, cfg->net_overhead, cfg->net_occupancy, (size_t)cfg->net_packet,
               cfg->net_interrupt);
    } else {
        printf("# delay injection: off\n");
    }
    printf("# median of %d batches; reference 'ucx' = the same operation issued directly with ucp "
           "on the same endpoint; other references = the floor named, measured in this run\n",
           b->batches);
    printf("%-40s %8s %13s %13s %7s  %s\n", "operation", "size", "measured", "reference",
           "ratio", "reference is");
    for (int i = 0; i < b->nresults; i++) {
        cm_bench_result_t *r = &b->results[i];
        char size[32], cm[32], ref[32] = "-", ratio[16] = "-";
        cm_bench_size_str(r->size, size, sizeof(size));
        snprintf(cm, sizeof(cm), "%.3f %s", r->cm, r->unit);
        if (r->ref >= 0) {
            snprintf(ref, sizeof(ref), "%.3f %s", r->ref, r->unit);
            if (r->ref > 0) { /* (a model that adds nothing: no ratio) */
                snprintf(ratio, sizeof(ratio), "%.2f", r->cm / r->ref);
            }
        }
        printf("%-40s %8s %13s %13s %7s  %s\n", r->name, size, cm, ref, ratio, r->ref_name);
    }
}

/* ---- options --------------------------------------------------------------- */

/* Before cm_init every rank parses the options: only the first says anything. */
static bool cm_bench_speaks(void)
{
    return cm_log_get_rank() <= 0;
}

static int cm_bench_bad(const char *fmt, const char *arg)
{
    if (cm_bench_speaks()) {
        char msg[512];

        /* One write: under mpirun, three could be split by the launcher's own lines. */
        snprintf(msg, sizeof(msg), fmt, arg);
        fprintf(stderr, "cm_bench: %s (see cm_bench --help)\n", msg);
    }
    return 2;
}

/* A non-negative decimal integer up to max, else -1. */
static int cm_bench_int(const char *s, int max)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    return (*s == '\0' || *end != '\0' || errno != 0 || v < 0 || v > max) ? -1 : (int)v;
}

int cm_bench_options(int argc, char **argv, int *batches, int *target, bool *json, bool *link)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            if (cm_bench_speaks()) {
                printf("usage: cmrun -n P cm_bench [--json] [--link] [--batches N] [--target RANK]\n"
                       "  microbenchmarks of the one-sided layer (next to UCX's own), the local "
                       "floors and the\n  protocol (next to the floors it is built from), under "
                       "the run's CM_PROTOCOL and CM_VARIANT\n"
                       "  --json         one JSON object (schema cashmere-bench/1, "
                       "docs/STATS.md) instead of the table\n"
                       "  --link         only the link: get 8 B, the null message round trip and get "
                       "bandwidth\n                 (what the scoreboard's link limit needs; "
                       "seconds, where the whole takes minutes)\n"
                       "  --batches N    batches per figure, 1..%d (default 9): each figure is "
                       "their median\n"
                       "  --target RANK  the rank rank 0 measures against (default the last)\n"
                       "  -h, --help     this help\n"
                       "  --version      the version\n", CM_BENCH_MAX_BATCHES);
            }
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            if (cm_bench_speaks()) {
                printf("cm_bench (Cashmere-RMA) %s\n", PACKAGE_VERSION);
            }
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            *json = true;
        } else if (strcmp(a, "--link") == 0) {
            *link = true;
        } else if (strcmp(a, "--batches") == 0 || strcmp(a, "--target") == 0) {
            int v;
            if (i + 1 >= argc) {
                return cm_bench_bad("%s needs a value", a);
            }
            v = cm_bench_int(argv[++i], a[2] == 'b' ? CM_BENCH_MAX_BATCHES : 1 << 20);
            if (a[2] == 'b' && v < 1) {
                if (cm_bench_speaks()) {
                    fprintf(stderr, "cm_bench: --batches must be in 1..%d, not '%s'\n",
                            CM_BENCH_MAX_BATCHES, argv[i]);
                }
                return 2;
            } else if (v < 0) {
                return cm_bench_bad("--target needs a rank, not '%s'", argv[i]);
            }
            *(a[2] == 'b' ? batches : target) = v;
        } else {
            return cm_bench_bad("unknown option '%s'", a);
        }
    }
    return -1;
}
