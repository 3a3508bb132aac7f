/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_bench's shared declarations: the benchmark's state and results, and what its three files
 * give each other (cm_bench.c: one-sided layer, floors, main; cm_bench_protocol.c: the
 * protocol's rows; cm_bench_print.c: the table, the JSON and the options).
 */
#ifndef CM_BENCH_H
#define CM_BENCH_H

#include "src/runtime/cm_runtime.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CM_BENCH_MAX_BATCHES 63
#define CM_BENCH_MAX_RESULTS 40
#define CM_BENCH_FAULTS      64   /* page faults per batch */
#define CM_BENCH_BW_WINDOW   16
#define CM_BENCH_BATCH_NS    2000000ull /* aim for 2 ms per batch */

typedef struct {
    const char *name;
    size_t     size;
    const char *unit;     /* "us" or "ns" per operation, or "MB/s" */
    double     cm;
    double     ref;       /* < 0: no reference */
    const char *ref_name; /* "ucx" (the same operation through UCX) or the floor it is built from */
} cm_bench_result_t;

typedef struct {
    cm_rma_t          *rma;
    int               target;
    ucp_worker_h      worker;
    ucp_ep_h          ep;
    ucp_rkey_h        rkey;
    char              *remote;  /* target's shared region (same VA here) */
    char              *local;   /* private source/destination buffer */
    int               batches;
    uint64_t          iter;     /* operation counter, shared by cm and ucx batches */
    cm_bench_result_t results[CM_BENCH_MAX_RESULTS];
    int               nresults;
} cm_bench_t;

typedef int (*cm_bench_op_fn_t)(cm_bench_t *b, size_t size, uint64_t iter);

/* Ends the job with one line unless status is CM_OK. */
void cm_bench_check(cm_status_t status, const char *what);

/* The median of v[0..n) (sorts v). */
double cm_bench_median(double *v, int n);

/* Records a row: cm in unit, next to ref (< 0: none) named ref_name. */
void cm_bench_add(cm_bench_t *b, const char *name, size_t size, const char *unit, double cm,
                  double ref, const char *ref_name);

/* A figure measured earlier in this run (for references built from floors). */
double cm_bench_value(cm_bench_t *b, const char *name, size_t size);

/* The protocol's rows: Cashmere's (the run's variant), or TreadMarks' basic costs. Every rank
 * takes part. */
void cm_bench_protocol(cm_bench_t *b);
void cm_bench_tmk(cm_bench_t *b);

/* The table, or with json the cashmere-bench/1 object (docs/STATS.md), on stdout (rank 0). */
void cm_bench_print(cm_bench_t *b, bool json, const char *transport);

/* The options: batches and target set; returns -1 to go on, else the exit status (after
 * --help, --version or a bad option: one line). */
int cm_bench_options(int argc, char **argv, int *batches, int *target, bool *json, bool *link);

#endif
