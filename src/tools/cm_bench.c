/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_bench: microbenchmarks, each figure beside a reference measured in the
 * same run:
 *
 *   one-sided layer  put/get/atomics/bandwidth next to the same operation
 *                    issued straight through UCX on the same endpoint and memory
 *                    (cm and UCX batches alternate so both see the same noise);
 *   local floors     SIGSEGV delivery + the handler's mprotect, mprotect pair;
 *   protocol         remote page fault, uncontended remote lock, lock hand-off
 *                    under contention, barrier, directory update (both forms),
 *                    doubled store -- each next to the floor it is built from.
 *
 *   cmrun -n 2 cm_bench [--json] [--batches N] [--target R]
 *
 * Rank 0 measures against the target rank (default: the last rank). Each
 * figure is the median over batches. Built with the store hooks, so it runs
 * under the software-doubling variants; the doubled-store row is for the
 * variant of the run (CM_VARIANT).
 */
#define _GNU_SOURCE
#include "config.h"
#include "directory/cm_dir.h"
#include "src/cm_runtime.h"
#include "src/util/cm_log.h"
#include "src/util/cm_time.h"
#include "src/cashmere/cm_variant.h"

#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CM_BENCH_MAX_BATCHES 63
#define CM_BENCH_MAX_RESULTS 40
#define CM_BENCH_FAULTS      64   /* page faults per batch */
#define CM_BENCH_BW_WINDOW   16
#define CM_BENCH_BATCH_NS    2000000ull /* aim for 2 ms per batch */

typedef struct {
    const char *name;
    size_t     size;
    const char *unit;     /* "us" per operation or "MB/s" */
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

static void cm_bench_check(cm_status_t status, const char *what)
{
    if (status != CM_OK) {
        cm_fatal(1, "cm_bench: %s failed: %s", what, cm_status_string(status));
    }
}

/* ---- raw UCX: the same operations without the rma/ layer ---------------- */

static void cm_bench_ucx_wait(cm_bench_t *b, ucs_status_ptr_t req, const char *what)
{
    ucs_status_t st;

    if (req == NULL) {
        return;
    }
    if (UCS_PTR_IS_ERR(req)) {
        cm_fatal(1, "cm_bench: ucx %s: %s", what, ucs_status_string(UCS_PTR_STATUS(req)));
    }
    cm_rma_poll_enter(b->rma); /* same conditions as the rma/ layer's own waits */
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(b->worker);
    }
    cm_rma_poll_leave(b->rma);
    ucp_request_free(req);
    if (st != UCS_OK) {
        cm_fatal(1, "cm_bench: ucx %s: %s", what, ucs_status_string(st));
    }
}

static int ucx_put(cm_bench_t *b, size_t size, uint64_t iter)
{
    ucp_request_param_t p = {0};
    (void)iter;
    cm_bench_ucx_wait(b, ucp_put_nbx(b->ep, b->local, size, (uintptr_t)b->remote, b->rkey, &p), "put");
    cm_bench_ucx_wait(b, ucp_ep_flush_nbx(b->ep, &p), "flush");
    return 0;
}

static int ucx_get(cm_bench_t *b, size_t size, uint64_t iter)
{
    ucp_request_param_t p = {0};
    (void)iter;
    cm_bench_ucx_wait(b, ucp_get_nbx(b->ep, b->local, size, (uintptr_t)b->remote, b->rkey, &p), "get");
    return 0;
}

static void ucx_amo(cm_bench_t *b, ucp_atomic_op_t op, uint64_t value, uint64_t *result)
{
    ucp_request_param_t p = {0};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    p.datatype     = ucp_dt_make_contig(8);
    p.reply_buffer = result;
    cm_bench_ucx_wait(b, ucp_atomic_op_nbx(b->ep, op, &value, 1, (uintptr_t)b->remote, b->rkey, &p),
                      "atomic");
}

static int ucx_swap(cm_bench_t *b, size_t size, uint64_t iter)
{
    uint64_t old;
    (void)size;
    ucx_amo(b, UCP_ATOMIC_OP_SWAP, iter, &old);
    return 0;
}

static int ucx_cswap(cm_bench_t *b, size_t size, uint64_t iter)
{
    uint64_t old = iter + 1; /* UCX: operand = compare value, reply buffer = new value in, old out */
    (void)size;
    ucx_amo(b, UCP_ATOMIC_OP_CSWAP, iter, &old);
    return 0;
}

static int ucx_fadd(cm_bench_t *b, size_t size, uint64_t iter)
{
    uint64_t old;
    (void)size;
    (void)iter;
    ucx_amo(b, UCP_ATOMIC_OP_ADD, 1, &old);
    return 0;
}

static int ucx_get_bw(cm_bench_t *b, size_t size, uint64_t iter)
{
    ucp_request_param_t p = {0};
    (void)iter;
    for (int w = 0; w < CM_BENCH_BW_WINDOW; w++) {
        ucs_status_ptr_t req = ucp_get_nbx(b->ep, b->local + (size_t)w * size, size,
                                           (uintptr_t)b->remote + (size_t)w * size, b->rkey, &p);
        if (UCS_PTR_IS_ERR(req)) {
            cm_fatal(1, "cm_bench: ucx get: %s", ucs_status_string(UCS_PTR_STATUS(req)));
        }
        if (req != NULL) {
            ucp_request_free(req);
        }
    }
    cm_bench_ucx_wait(b, ucp_ep_flush_nbx(b->ep, &p), "flush");
    return 0;
}

/* ---- the rma/ layer -------------------------------------------------------- */

static int cm_put(cm_bench_t *b, size_t size, uint64_t iter)
{
    (void)iter;
    cm_bench_check(cm_rma_put(b->rma, b->target, b->remote, b->local, size), "put");
    cm_bench_check(cm_rma_flush(b->rma, b->target), "flush");
    return 0;
}

static int cm_get(cm_bench_t *b, size_t size, uint64_t iter)
{
    (void)iter;
    cm_bench_check(cm_rma_get(b->rma, b->target, b->local, b->remote, size), "get");
    return 0;
}

static int cm_swap(cm_bench_t *b, size_t size, uint64_t iter)
{
    uint64_t old;
    (void)size;
    cm_bench_check(cm_rma_swap(b->rma, b->target, (uint64_t *)b->remote, iter, &old), "swap");
    return 0;
}

static int cm_cswap(cm_bench_t *b, size_t size, uint64_t iter)
{
    uint64_t old;
    (void)size;
    cm_bench_check(cm_rma_cswap(b->rma, b->target, (uint64_t *)b->remote, iter, iter + 1, &old),
                   "cswap");
    return 0;
}

static int cm_fadd(cm_bench_t *b, size_t size, uint64_t iter)
{
    uint64_t old;
    (void)size;
    (void)iter;
    cm_bench_check(cm_rma_fadd(b->rma, b->target, (uint64_t *)b->remote, 1, &old), "fadd");
    return 0;
}

/* Null round trip of active messages: the target's handler answers at once. */
#define CM_BENCH_AM_PING 30
#define CM_BENCH_AM_PONG 31
static atomic_uint_fast64_t cm_bench_pongs;

static void cm_bench_on_ping(void *arg, int src, const void *data, size_t len)
{
    (void)arg;
    cm_rma_am_post(cm_rt.rma, src, CM_BENCH_AM_PONG, data, len);
}

static void cm_bench_on_pong(void *arg, int src, const void *data, size_t len)
{
    (void)arg;
    (void)src;
    (void)data;
    (void)len;
    atomic_fetch_add(&cm_bench_pongs, 1);
}

static int cm_am_rtt(cm_bench_t *b, size_t size, uint64_t iter)
{
    uint64_t want = atomic_load(&cm_bench_pongs) + 1;
    (void)iter;
    cm_bench_check(cm_rma_am_send(b->rma, b->target, CM_BENCH_AM_PING, b->local, size), "message");
    while (atomic_load(&cm_bench_pongs) < want) {
        cm_rma_progress(b->rma);
    }
    return 0;
}

static int cm_get_bw(cm_bench_t *b, size_t size, uint64_t iter)
{
    (void)iter;
    for (int w = 0; w < CM_BENCH_BW_WINDOW; w++) {
        cm_bench_check(cm_rma_get_nbi(b->rma, b->target, b->local + (size_t)w * size,
                                      b->remote + (size_t)w * size, size), "get");
    }
    cm_bench_check(cm_rma_flush(b->rma, b->target), "flush");
    return 0;
}

/* ---- timing ------------------------------------------------------------- */

static int cm_bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double cm_bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cm_bench_cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Time of one batch of n operations, in ns. */
static uint64_t cm_bench_batch(cm_bench_t *b, cm_bench_op_fn_t fn, size_t size, uint64_t n)
{
    uint64_t t0 = cm_time_ns();
    for (uint64_t i = 0; i < n; i++) {
        fn(b, size, b->iter++);
    }
    return cm_time_ns() - t0;
}

/*
 * Measures fn (cm) against ref (ucx, may be NULL): batch length calibrated on
 * fn, then batches alternating between the two. Returns ns per operation.
 */
static void cm_bench_pair(cm_bench_t *b, cm_bench_op_fn_t fn, cm_bench_op_fn_t ref, size_t size,
                          double *cm_ns, double *ucx_ns)
{
    double tc[CM_BENCH_MAX_BATCHES], tu[CM_BENCH_MAX_BATCHES];
    uint64_t n = 1, t;

    /* Warm-up and calibration (also makes sure both paths are connected). */
    for (;;) {
        t = cm_bench_batch(b, fn, size, n);
        if (ref != NULL) {
            cm_bench_batch(b, ref, size, n);
        }
        if (t >= CM_BENCH_BATCH_NS / 4 || n >= (1u << 20)) {
            break;
        }
        n *= 2;
    }
    n = (t > 0) ? (uint64_t)((double)n * CM_BENCH_BATCH_NS / (double)t) : n;
    if (n < 4) {
        n = 4;
    }
    for (int i = 0; i < b->batches; i++) {
        tc[i] = (double)cm_bench_batch(b, fn, size, n) / (double)n;
        if (ref != NULL) {
            tu[i] = (double)cm_bench_batch(b, ref, size, n) / (double)n;
        }
    }
    *cm_ns  = cm_bench_median(tc, b->batches);
    *ucx_ns = (ref != NULL) ? cm_bench_median(tu, b->batches) : -1;
}

static void cm_bench_add(cm_bench_t *b, const char *name, size_t size, const char *unit, double cm,
                         double ref, const char *ref_name)
{
    cm_bench_result_t *r = &b->results[b->nresults++];
    r->name     = name;
    r->size     = size;
    r->unit     = unit;
    r->cm       = cm;
    r->ref      = ref;
    r->ref_name = (ref >= 0) ? ref_name : "";
}

/* A figure measured earlier in this run (for references built from floors). */
static double cm_bench_value(cm_bench_t *b, const char *name, size_t size)
{
    for (int i = 0; i < b->nresults; i++) {
        if (strcmp(b->results[i].name, name) == 0 && b->results[i].size == size) {
            return b->results[i].cm;
        }
    }
    cm_fatal(1, "cm_bench: no figure '%s' measured", name);
}

/*
 * The null round trip again while the target computes outside the library: what a TreadMarks
 * request costs when its target is not waiting for it (its progress thread, woken by the
 * transport, must first get a core). The target computes until rank 0 stores *stop.
 */
static void cm_bench_busy_target(cm_bench_t *b, uint64_t *stop)
{
    int me = cm_rank();

    if (me == b->target) {
        *stop = 0;
    }
    cm_bench_check(cm_rma_barrier(b->rma), "barrier");
    if (me == 0) {
        double rtt, unused;
        cm_bench_pair(b, cm_am_rtt, NULL, 8, &rtt, &unused);
        cm_bench_add(b, "message round trip, target computing", 8, "us", rtt / 1e3,
                     cm_bench_value(b, "message round trip (null)", 8), "target waiting");
        cm_bench_check(cm_rma_put_u64_nbi(b->rma, b->target, stop, 1), "stop");
        cm_bench_check(cm_rma_flush(b->rma, b->target), "stop");
    } else if (me == b->target) {
        volatile double x = 1.0;
        while (__atomic_load_n(stop, __ATOMIC_ACQUIRE) == 0) {
            for (int i = 0; i < 1000; i++) {
                x = x * 1.0000001 + 1e-9;
            }
        }
    }
    cm_bench_check(cm_rma_barrier(b->rma), "barrier");
}

static void cm_bench_latency(cm_bench_t *b, const char *name, cm_bench_op_fn_t fn,
                             cm_bench_op_fn_t ref, size_t size)
{
    double cm_ns, ucx_ns;
    cm_bench_pair(b, fn, ref, size, &cm_ns, &ucx_ns);
    cm_bench_add(b, name, size, "us", cm_ns / 1e3, (ucx_ns < 0) ? -1 : ucx_ns / 1e3, "ucx");
}

static void cm_bench_bandwidth(cm_bench_t *b, const char *name, cm_bench_op_fn_t fn,
                               cm_bench_op_fn_t ref, size_t size)
{
    double cm_ns, ucx_ns, bytes = (double)size * CM_BENCH_BW_WINDOW;
    cm_bench_pair(b, fn, ref, size, &cm_ns, &ucx_ns);
    cm_bench_add(b, name, size, "MB/s", bytes / cm_ns * 1e3, bytes / ucx_ns * 1e3, "ucx");
}

/* ---- local floors ------------------------------------------------------- */

/*
 * The fault floor is what the protocol's fault path cannot avoid: delivery of
 * SIGSEGV for a fresh protected page and the one mprotect in the handler that
 * opens it. Pages are protected up front (untimed), each touched once, exactly
 * like the protocol's remote-fault rows.
 */
static char *cm_bench_fault_area;
static size_t cm_bench_fault_len;
static long cm_bench_page_size;

static void cm_bench_segv(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    char *page = (char *)((uintptr_t)info->si_addr & ~((uintptr_t)cm_bench_page_size - 1));
    if (page < cm_bench_fault_area || page >= cm_bench_fault_area + cm_bench_fault_len ||
        mprotect(page, (size_t)cm_bench_page_size, PROT_READ | PROT_WRITE) != 0) {
        signal(sig, SIG_DFL); /* not ours: crash as usual */
    }
}

static int floor_mprotect(cm_bench_t *b, size_t size, uint64_t iter)
{
    (void)b;
    (void)size;
    (void)iter;
    mprotect(cm_bench_fault_area, (size_t)cm_bench_page_size, PROT_NONE);
    mprotect(cm_bench_fault_area, (size_t)cm_bench_page_size, PROT_READ | PROT_WRITE);
    return 0;
}

static void cm_bench_floors(cm_bench_t *b)
{
    struct sigaction sa, old;
    double t_f[CM_BENCH_MAX_BATCHES], mprot_ns, unused;
    const size_t n = (size_t)(b->batches + 1) * CM_BENCH_FAULTS;

    cm_bench_page_size  = sysconf(_SC_PAGESIZE);
    cm_bench_fault_len  = n * (size_t)cm_bench_page_size;
    cm_bench_fault_area = mmap(NULL, cm_bench_fault_len, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (cm_bench_fault_area == MAP_FAILED) {
        cm_fatal(1, "cm_bench: mmap failed");
    }
    /* Frames resident, as for a protocol re-fetch: the kernel allocates nothing while timed. */
    memset(cm_bench_fault_area, 1, cm_bench_fault_len);
    mprotect(cm_bench_fault_area, cm_bench_fault_len, PROT_NONE);
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = cm_bench_segv;
    sa.sa_flags     = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old);
    for (int i = -1; i < b->batches; i++) { /* batch -1 warms up */
        char *p = cm_bench_fault_area + (size_t)(i + 1) * CM_BENCH_FAULTS * (size_t)cm_bench_page_size;
        uint64_t t0 = cm_time_ns();
        for (int k = 0; k < CM_BENCH_FAULTS; k++) {
            (void)*(volatile char *)(p + (size_t)k * (size_t)cm_bench_page_size);
        }
        if (i >= 0) {
            t_f[i] = (double)(cm_time_ns() - t0) / CM_BENCH_FAULTS;
        }
    }
    cm_bench_pair(b, floor_mprotect, NULL, 0, &mprot_ns, &unused);
    sigaction(SIGSEGV, &old, NULL);
    munmap(cm_bench_fault_area, cm_bench_fault_len);
    cm_bench_add(b, "fault: SIGSEGV + mprotect (handler)", 0, "us",
                 cm_bench_median(t_f, b->batches) / 1e3, -1, NULL);
    cm_bench_add(b, "mprotect pair", 0, "us", mprot_ns / 1e3, -1, NULL);
}

/* ---- output ------------------------------------------------------------- */

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

static void cm_bench_print(cm_bench_t *b, bool json, const char *transport)
{
    const cm_config_t *cfg = &cm_rt.config;
    cm_rma_stats_t st;

    cm_rma_get_stats(b->rma, &st);
    if (json) {
        printf("{\n  \"tool\": \"cm_bench\", \"version\": \"%s\",\n", PACKAGE_VERSION);
        printf("  \"nprocs\": %d, \"initiator\": 0, \"target\": %d, \"protocol\": \"%s\", "
               "\"variant\": \"%s\",\n", cm_rt.nprocs, b->target, cm_rt.proto->name,
               cm_variants[cfg->variant].name);
        printf("  \"transport\": \"%s\", \"direct_mapped\": %s, \"progress_thread\": %s,\n",
               transport, cm_rma_ptr(b->rma, b->target, b->remote) ? "true" : "false",
               cm_rma_progress_thread_running(b->rma) ? "true" : "false");
        printf("  \"delay\": {\"latency_ns\": %" PRIu64 ", \"bandwidth_Bps\": %.0f, "
               "\"overhead_ns\": %" PRIu64 "},\n", cfg->net_latency, cfg->net_bandwidth,
               cfg->net_overhead);
        printf("  \"batches\": %d, \"statistic\": \"median\",\n  \"results\": [\n", b->batches);
        for (int i = 0; i < b->nresults; i++) {
            cm_bench_result_t *r = &b->results[i];
            printf("    {\"name\": \"%s\", \"size\": %zu, \"unit\": \"%s\", \"cm\": %.6f", r->name,
                   r->size, r->unit, r->cm);
            if (r->ref >= 0) {
                printf(", \"ref\": %.6f, \"ref_name\": \"%s\", \"ratio\": %.3f", r->ref,
                       r->ref_name, r->cm / r->ref);
            }
            printf("}%s\n", (i + 1 < b->nresults) ? "," : "");
        }
        printf("  ],\n  \"rma_stats\": {\"puts\": %" PRIu64 ", \"gets\": %" PRIu64
               ", \"atomics\": %" PRIu64 ", \"flushes\": %" PRIu64 ", \"delay_ns\": %" PRIu64
               ", \"progress_wakeups\": %" PRIu64 "}\n}\n",
               st.puts, st.gets, st.atomics, st.flushes, st.delay_ns, st.progress_wakeups);
        return;
    }

    printf("# cm_bench %s: %d processes, rank 0 -> rank %d over %s (%s), progress thread %s, "
           "protocol %s, variant %s\n", PACKAGE_VERSION, cm_rt.nprocs, b->target, transport,
           cm_rma_ptr(b->rma, b->target, b->remote) ? "peer memory directly mapped"
                                                     : "no direct mapping",
           cm_rma_progress_thread_running(b->rma) ? "on" : "off", cm_rt.proto->name,
           cm_variants[cfg->variant].name);
    if (cfg->net_latency || cfg->net_bandwidth > 0 || cfg->net_overhead) {
        printf("# delay injection: latency %" PRIu64 " ns, bandwidth %.0f B/s (0 = unlimited), "
               "overhead %" PRIu64 " ns\n", cfg->net_latency, cfg->net_bandwidth, cfg->net_overhead);
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
            snprintf(ratio, sizeof(ratio), "%.2f", r->cm / r->ref);
        }
        printf("%-40s %8s %13s %13s %7s  %s\n", r->name, size, cm, ref, ratio, r->ref_name);
    }
}

/* ---- protocol (every rank takes part) ------------------------------------- */

/* Median of the per-operation times of `batches` runs of fn (ns). */
typedef void (*cm_bench_loop_fn_t)(void *arg, int n);

static double cm_bench_median_of(cm_bench_t *b, cm_bench_loop_fn_t fn, void *arg, int n)
{
    double t[CM_BENCH_MAX_BATCHES];
    for (int i = 0; i < b->batches; i++) {
        uint64_t t0 = cm_time_ns();
        fn(arg, n);
        t[i] = (double)(cm_time_ns() - t0) / n;
    }
    return cm_bench_median(t, b->batches);
}

static void loop_lock(void *arg, int n)
{
    int id = *(int *)arg;
    for (int i = 0; i < n; i++) {
        cm_lock_acquire(id);
        cm_lock_release(id);
    }
}

static void loop_barrier(void *arg, int n)
{
    (void)arg;
    for (int i = 0; i < n; i++) {
        cm_barrier();
    }
}

static volatile long cm_bench_private[512];

static void loop_store_private(void *arg, int n)
{
    (void)arg;
    for (int i = 0; i < n; i++) {
        cm_bench_private[i & 511] = i;
    }
}

static void loop_store_shared(void *arg, int n)
{
    volatile long *page = arg;
    for (int i = 0; i < n; i++) {
        page[i & 511] = i;
    }
}

typedef struct {
    cm_dir_t *dir;
    uint64_t page;
} cm_bench_dir_arg_t;

static void loop_dir(void *arg, int n)
{
    cm_bench_dir_arg_t *a = arg;
    cm_dir_entry_t e;
    cm_dir_effects_t fx;
    for (int i = 0; i < n; i++) {
        cm_dir_op_t op = (i % 2 == 0) ? CM_DIR_JOIN : CM_DIR_LEAVE;
        cm_bench_check(cm_dir_update(a->dir, a->page, op, NULL, NULL, &e, &fx), "directory update");
    }
}

/*
 * Where stores reach the home with no software on the writer's path (a mapping, or the
 * offload thread playing the snooping interface): how long until the home sees a store.
 * Rank 0 stores a sequence number into a page homed at the target; the target, polling its
 * master copy, puts it back into rank 0's scratch word. Next to two puts, what a network
 * interface forwarding the store and one acknowledging it would cost. Software doubling
 * (the hooks) forwards a store at the next one or at a release, and a merge buffer holds it
 * until its line is displaced or released: no row for them.
 */
static void cm_bench_forwarding(cm_bench_t *b, char *store_page, double put8)
{
    const cm_variant_info_t *row = &cm_variants[cm_rt.config.variant];
    const int me = cm_rank(), t = b->target, n = 100;
    volatile uint64_t *slot = (volatile uint64_t *)(void *)(store_page + 64);
    uint64_t *ack = (uint64_t *)(void *)cm_rt.scratch;
    double t_rt[CM_BENCH_MAX_BATCHES];
    static char name[64];

    if (row->write == CM_WRITE_HOOKS || row->merge == CM_MERGE_BUFFER) {
        return; /* a merge buffer holds a store until its line is displaced or released */
    }
    if (me == 0) {
        *ack = 0;
    }
    cm_barrier();
    if (me == 0) {
        uint64_t seq = 0;
        *slot = 0; /* joins the page and, under the offload thread, takes its twin */
        for (int i = -1; i < b->batches; i++) { /* batch -1 warms up */
            uint64_t t0 = cm_time_ns();
            for (int k = 0; k < n; k++) {
                *slot = ++seq;
                cm_rma_wait_u64(b->rma, ack, CM_CMP_EQ, seq);
            }
            if (i >= 0) {
                t_rt[i] = (double)(cm_time_ns() - t0) / n;
            }
        }
        snprintf(name, sizeof(name), "store seen at the home, round trip (%s writes)",
                 cm_write_mechanisms[row->write].name);
        cm_bench_add(b, name, 8, "us", cm_bench_median(t_rt, b->batches) / 1e3, 2 * put8,
                     "2 x (put + flush)");
    } else if (me == t) {
        for (uint64_t seq = 1; seq <= (uint64_t)n * (uint64_t)(b->batches + 1); seq++) {
            while (*slot != seq) {
                cm_rma_progress(b->rma); /* peers' puts over TCP need this process */
            }
            cm_bench_check(cm_rma_put_u64_nbi(b->rma, 0, ack, seq), "acknowledgement");
            cm_bench_check(cm_rma_flush(b->rma, 0), "acknowledgement");
        }
    }
    cm_barrier();
}

/*
 * Reads one byte at offset off of each of (batches + 1) x CM_BENCH_FAULTS pages in turn, a
 * batch at a time (batch -1 warms up); t[i]: time per page of batch i.
 */
static void cm_bench_read_pages(cm_bench_t *b, char *pages, size_t off, double *t)
{
    const size_t ps = cm_rt.page_size;

    for (int i = -1, next = 0; i < b->batches; i++) {
        uint64_t t0 = cm_time_ns();
        for (int k = 0; k < CM_BENCH_FAULTS; k++) {
            (void)*(volatile char *)(pages + (size_t)next++ * ps + off);
        }
        if (i >= 0) {
            t[i] = (double)(cm_time_ns() - t0) / CM_BENCH_FAULTS;
        }
    }
}

/*
 * Remote page faults on pages homed at the target, each read once per
 * pass: first touch of the local frame (cold), then, after the barrier's
 * acquire has invalidated them all (rank 0's joins turned them weak), the
 * same pages again: a re-fetch into a resident frame, the steady state of
 * a program.
 */
static void cm_bench_page_faults(cm_bench_t *b, char *pages, int npages)
{
    const int me = cm_rank();
    double t_cold[CM_BENCH_MAX_BATCHES], t_warm[CM_BENCH_MAX_BATCHES];
    uint64_t faults0 = 0, faults1 = 0;
    cm_stats_t st;

    for (int pass = 0; pass < 2; pass++) {
        double *t_pass = pass ? t_warm : t_cold;
        if (me == 0) {
            cm_rt.proto->stats(&st);
            faults0 = st.read_faults;
            cm_bench_read_pages(b, pages, 0, t_pass);
            cm_rt.proto->stats(&st);
            faults1 = st.read_faults;
            if (faults1 - faults0 != (uint64_t)npages) {
                cm_abort(1, "cm_bench: %d page reads took %" PRIu64 " faults (pass %d): "
                         "the pages were not invalidated", npages, faults1 - faults0, pass);
            }
        }
        cm_barrier();
    }
    if (me == 0) {
        double fault_floor = cm_bench_value(b, "fault: SIGSEGV + mprotect (handler)", 0) +
                             cm_bench_value(b, "get", 4096);
        cm_bench_add(b, "page fault, remote home, read", 4096, "us",
                     cm_bench_median(t_warm, b->batches) / 1e3, fault_floor,
                     "SIGSEGV + mprotect + 4 KiB get");
        cm_bench_add(b, "page fault, remote home, read, frame cold", 4096, "us",
                     cm_bench_median(t_cold, b->batches) / 1e3, fault_floor,
                     "SIGSEGV + mprotect + 4 KiB get");
    }
}

/*
 * Software line fills (NS**): no fault, a load check that misses. The first read of each
 * page homed at the target joins the directory and fills one line (the frame cold: the
 * kernel allocates it); a read of the page's next line is a line miss alone (the page stays
 * joined), next to one get of a line. After the barrier's acquire has invalidated the pages
 * (rank 0's joins turned them weak), the first read again: a join and a line fill into a
 * resident frame, the steady state of a program.
 */
static void cm_bench_line_fills(cm_bench_t *b, char *pages, int npages)
{
    const int me = cm_rank();
    const size_t ps = cm_rt.page_size, line = (size_t)cm_rt.config.line_size;
    /* The get measured nearest a line's size; a page of one line has no second line. */
    const size_t ref = (line <= 8) ? 8 : (line <= 64) ? 64 : 4096;
    double t_pass[3][CM_BENCH_MAX_BATCHES];
    uint64_t fills0 = 0;
    cm_stats_t st;

    if (line >= ps) {
        if (me == 0) {
            printf("# CM_LINE_SIZE=%zu is the page: no line-miss rows\n", line);
        }
        return;
    }
    if (me == 0) {
        cm_rt.proto->stats(&st);
        fills0 = st.line_fills;
    }
    /* Pass 0: join + line 0, cold frame; 1: line 1 (a miss alone); 2: join + line 0 again. */
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 2) {
            cm_barrier();
        }
        if (me != 0) {
            continue;
        }
        cm_bench_read_pages(b, pages, (size_t)(pass == 1) * line, t_pass[pass]);
    }
    if (me == 0) {
        cm_rt.proto->stats(&st);
        if (st.line_fills - fills0 != 3 * (uint64_t)npages) {
            cm_abort(1, "cm_bench: %d line reads took %" PRIu64 " line fills: the lines were "
                     "not invalid", 3 * npages, st.line_fills - fills0);
        }
    }
    cm_barrier();
    if (me == 0) {
        double get = cm_bench_value(b, "get", ref);
        double join = get + cm_bench_value(b, "atomic compare-and-swap", 8);
        cm_bench_add(b, "line miss, remote home, read", line, "us",
                     cm_bench_median(t_pass[1], b->batches) / 1e3, get, "get of a line");
        /* Invalidation keeps the mapping: a join again updates the entry, no mprotect. */
        cm_bench_add(b, "page join + line fill, remote home", line, "us",
                     cm_bench_median(t_pass[2], b->batches) / 1e3, join,
                     "compare-and-swap + get");
        /* The first join opens the page (one mprotect: half the pair). */
        cm_bench_add(b, "page join + line fill, remote home, frame cold", line, "us",
                     cm_bench_median(t_pass[0], b->batches) / 1e3,
                     join + cm_bench_value(b, "mprotect pair", 0) / 2,
                     "compare-and-swap + mprotect + get");
    }
}

static void cm_bench_protocol(cm_bench_t *b)
{
    const int me = cm_rank(), np = cm_nprocs(), t = b->target;
    const size_t ps = cm_rt.page_size;
    const int npages = (b->batches + 1) * CM_BENCH_FAULTS;
    const char *vname = cm_variants[cm_rt.config.variant].name;
    char *pages, *store_page;
    int lock = t, rounds = 1;
    double ns, put8 = 0, ref;

    cm_init_done(); /* homes move on first touch from here */
    pages      = cm_malloc((size_t)npages * ps);
    store_page = cm_malloc(ps);
    if (me == t) {
        for (int i = 0; i < npages; i++) {
            pages[(size_t)i * ps] = 1; /* first touch: these pages live at the target */
        }
        store_page[0] = 1;
    }
    cm_barrier();

    if (cm_variants[cm_rt.config.variant].fill == CM_FILL_LINE) {
        cm_bench_line_fills(b, pages, npages);
    } else {
        cm_bench_page_faults(b, pages, npages);
    }

    if (me == 0) {
        double amo = cm_bench_value(b, "atomic compare-and-swap", 8);

        /* Doubled stores: to a mapped page homed at the target, against private stores. */
        (void)*(volatile char *)store_page;
        loop_store_shared(store_page, 512);
        double priv = cm_bench_median_of(b, loop_store_private, NULL, 1 << 16);
        double dbl  = cm_bench_median_of(b, loop_store_shared, store_page, 1 << 14);
        /* In ns: a store is a fraction of a microsecond. */
        cm_bench_add(b, "store, private", 8, "ns", priv, -1, NULL);
        {
            static char name[64];
            const cm_variant_info_t *row = &cm_variants[cm_rt.config.variant];
            if (row->write == CM_WRITE_HOOKS) {
                snprintf(name, sizeof(name), "store, shared page (%s doubling)", vname);
            } else {
                snprintf(name, sizeof(name), "store, shared page (%s, %s writes)", vname,
                         cm_write_mechanisms[row->write].name);
            }
            cm_bench_add(b, name, 8, "ns", dbl, priv, "private store");
        }

        /* Uncontended remote lock: the lock's tail lives at the target. */
        ns = cm_bench_median_of(b, loop_lock, &lock, 200);
        ref = cm_bench_value(b, "atomic swap", 8) + amo;
        cm_bench_add(b, "lock acquire+release, remote, free", 0, "us", ns / 1e3, ref,
                     "fetch-and-store + compare-and-swap");

        /* Directory updates, both forms, on entries hosted by the target that nothing uses. */
        {
            uint64_t last = cm_rt.npages - 1 - ((cm_rt.npages - 1 + (uint64_t)np - (uint64_t)t) % (uint64_t)np);
            cm_dir_t dir;
            cm_dir_seg_t dseg = cm_meta_dir_seg(&cm_rt.meta, cm_rt.meta_base);
            cm_bench_dir_arg_t arg = {&dir, last};
            if (np <= CM_DIR_MAX_PROCS_CAS) {
                cm_bench_check(cm_dir_init(&dir, b->rma, CM_DIR_IMPL_CAS, &dseg, 1000), "directory");
                ns = cm_bench_median_of(b, loop_dir, &arg, 400);
                cm_bench_add(b, "directory update, CAS word", 0, "us", ns / 1e3, amo,
                             "compare-and-swap");
            }
            cm_bench_check(cm_dir_init(&dir, b->rma, CM_DIR_IMPL_MCS, &dseg, 1000), "directory");
            arg.page = last - (uint64_t)np; /* a different entry: the two forms use word 0 differently */
            ns = cm_bench_median_of(b, loop_dir, &arg, 400);
            cm_bench_add(b, "directory update, MCS lock", 0, "us", ns / 1e3, amo, "compare-and-swap");
        }
        put8 = cm_bench_value(b, "put + flush (remote completion)", 8);
    }
    cm_barrier();
    cm_bench_forwarding(b, store_page, put8);

    /* Contended lock: everyone loops on the target's lock; time per hand-off. */
    {
        double t_h[CM_BENCH_MAX_BATCHES];
        const int k = 50;
        for (int i = 0; i < b->batches; i++) {
            cm_barrier();
            uint64_t t0 = cm_time_ns();
            loop_lock(&lock, k);
            cm_barrier();
            t_h[i] = (double)(cm_time_ns() - t0) / (k * np);
        }
        if (me == 0) {
            cm_bench_add(b, "lock hand-off, all processes contending", 0, "us",
                         cm_bench_median(t_h, b->batches) / 1e3, put8, "put + flush");
        }
    }
    ns = cm_bench_median_of(b, loop_barrier, NULL, 100);
    for (int d = 1; d * 2 < np; d *= 2) {
        rounds++;
    }
    if (me == 0) {
        static char name[48];
        snprintf(name, sizeof(name), "barrier, %d processes", np);
        cm_bench_add(b, name, 0, "us", ns / 1e3, rounds * put8,
                     rounds == 1 ? "1 put + flush (log2 P rounds)" : "log2(P) x (put + flush)");
    }
}

/*
 * TreadMarks: the thesis's basic costs, each next to the message round trip it
 * is built from (Table 2.1's message counts). Each timed operation follows two
 * barriers that put the lock token, or a fresh write notice, where it must be.
 */
static void cm_bench_tmk(cm_bench_t *b)
{
    const int me = cm_rank(), np = cm_nprocs(), t = b->target;
    const int rounds = 5 * b->batches;
    const size_t ps = cm_rt.page_size;
    double t2[5 * CM_BENCH_MAX_BATCHES], t3[5 * CM_BENCH_MAX_BATCHES], tf[5 * CM_BENCH_MAX_BATCHES];
    volatile int *page = cm_malloc(ps);
    double ns;

    /* 2-hop: lock t is managed by the target, which takes the token back each round. */
    for (int r = 0; r < rounds; r++) {
        cm_barrier();
        if (me == t) {
            cm_lock_acquire(t);
            cm_lock_release(t);
        }
        cm_barrier();
        if (me == 0) {
            uint64_t t0 = cm_time_ns();
            cm_lock_acquire(t);
            t2[r] = (double)(cm_time_ns() - t0);
            cm_lock_release(t);
        }
    }
    /* 3-hop: lock t + np, managed by the target, token left at rank 1 each round. */
    for (int r = 0; np >= 3 && r < rounds; r++) {
        cm_barrier();
        if (me == 1) {
            cm_lock_acquire(t + np);
            cm_lock_release(t + np);
        }
        cm_barrier();
        if (me == 0) {
            uint64_t t0 = cm_time_ns();
            cm_lock_acquire(t + np);
            t3[r] = (double)(cm_time_ns() - t0);
            cm_lock_release(t + np);
        }
    }
    /* Access miss with one diff: the target writes a word, rank 0 reads the page again. */
    if (me == 0) {
        (void)page[0];
    }
    for (int r = 0; r < rounds; r++) {
        cm_barrier();
        if (me == t) {
            page[1 + r % 512] = r;
        }
        cm_barrier();
        if (me == 0) {
            uint64_t t0 = cm_time_ns();
            int v = page[1 + r % 512];
            tf[r] = (double)(cm_time_ns() - t0);
            if (v != r) {
                cm_abort(1, "cm_bench: read %d after the target wrote %d", v, r);
            }
        }
    }
    ns = cm_bench_median_of(b, loop_barrier, NULL, 100);
    if (me == 0) {
        static char bname[48];
        double rtt = cm_bench_value(b, "message round trip (null)", 8);
        double flt = cm_bench_value(b, "fault: SIGSEGV + mprotect (handler)", 0);
        cm_bench_add(b, "lock acquire, 2 messages (manager has it)", 0, "us",
                     cm_bench_median(t2, rounds) / 1e3, rtt, "1 message round trip");
        if (np >= 3) {
            cm_bench_add(b, "lock acquire, 3 messages (forwarded)", 0, "us",
                         cm_bench_median(t3, rounds) / 1e3, 1.5 * rtt, "1.5 message round trips");
        }
        cm_bench_add(b, "page fault, one diff (2 messages)", 4096, "us",
                     cm_bench_median(tf, rounds) / 1e3, flt + rtt,
                     "SIGSEGV + mprotect + message round trip");
        snprintf(bname, sizeof(bname), "barrier, %d processes", np);
        cm_bench_add(b, bname, 0, "us", ns / 1e3, rtt, "1 message round trip (2(n-1) messages)");
    }
}

static void cm_bench_usage(void)
{
    fprintf(stderr, "usage: cmrun -n 2 cm_bench [--json] [--batches N] [--target RANK]\n");
}

int main(int argc, char **argv)
{
    cm_bench_t b;
    bool json = false;
    int target = -1;
    char transport[128];
    static const size_t lat_sizes[] = {8, 64, 4096};
    static const size_t bw_sizes[]  = {4096, 65536, 1u << 20};
    size_t max_bw = bw_sizes[2] * CM_BENCH_BW_WINDOW;

    memset(&b, 0, sizeof(b));
    b.batches = 9;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--batches") == 0 && i + 1 < argc) {
            b.batches = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) {
            target = atoi(argv[++i]);
        } else {
            cm_bench_usage();
            return 2;
        }
    }
    if (b.batches < 1 || b.batches > CM_BENCH_MAX_BATCHES) {
        fprintf(stderr, "cm_bench: --batches must be in 1..%d\n", CM_BENCH_MAX_BATCHES);
        return 2;
    }

    cm_init(&argc, &argv);
    if (target < 0) {
        target = cm_nprocs() - 1;
    }
    if (target >= cm_nprocs()) {
        cm_abort(2, "cm_bench: --target %d is not a rank (the job has %d)", target, cm_nprocs());
    }
    b.rma    = cm_rt.rma;
    b.target = target;
    /*
     * Its own UCX-allocated segment (above the shared region's views), so that
     * cm_rma and raw UCX move the same kind of memory over the same transport.
     */
    {
        const uintptr_t gib = (uintptr_t)1 << 30;
        cm_rma_seg_t *seg;
        b.remote = (char *)(cm_rt.layout.net_base + (cm_rt.shared_size + gib - 1) / gib * gib);
        cm_bench_check(cm_rma_seg_map(b.rma, b.remote, max_bw, CM_RMA_SEG_ATOMIC, "cm_bench buffer",
                                      &seg), "mapping the benchmark segment");
    }
    b.worker = cm_rma_ucp_worker(b.rma);
    b.ep     = cm_rma_ucp_ep(b.rma, target);
    b.rkey   = cm_rma_ucp_rkey(b.rma, target, b.remote);
    b.local  = aligned_alloc(4096, max_bw);
    if (b.local == NULL) {
        cm_abort(1, "cm_bench: out of memory");
    }
    memset(b.local, 0, max_bw);
    if (cm_rank() == target) {
        memset(b.remote, 0x5a, max_bw);
        *(uint64_t *)b.remote = 0;
    }
    cm_bench_check(cm_rma_am_set_handler(b.rma, CM_BENCH_AM_PING, cm_bench_on_ping, NULL), "handler");
    cm_bench_check(cm_rma_am_set_handler(b.rma, CM_BENCH_AM_PONG, cm_bench_on_pong, NULL), "handler");
    cm_bench_check(cm_rma_barrier(b.rma), "barrier");

    if (cm_rank() == 0) {
        uint64_t check;
        cm_rma_describe_peer(b.rma, target, transport, sizeof(transport));

        /* A benchmark of broken operations is worthless: check data once. */
        cm_bench_check(cm_rma_get(b.rma, target, b.local, b.remote + 8, 64), "get");
        for (int i = 0; i < 64; i++) {
            if ((unsigned char)b.local[i] != 0x5a) {
                cm_abort(1, "cm_bench: get returned wrong data at byte %d", i);
            }
        }

        for (size_t i = 0; i < 3; i++) {
            cm_bench_latency(&b, "put + flush (remote completion)", cm_put, ucx_put, lat_sizes[i]);
        }
        for (size_t i = 0; i < 3; i++) {
            cm_bench_latency(&b, "get", cm_get, ucx_get, lat_sizes[i]);
        }
        cm_bench_latency(&b, "atomic swap", cm_swap, ucx_swap, 8);
        /* Compare-and-swap of a counter whose value is the operation count: each must succeed. */
        cm_bench_check(cm_rma_swap(b.rma, target, (uint64_t *)b.remote, 0, &check), "swap");
        b.iter = 0;
        cm_bench_latency(&b, "atomic compare-and-swap", cm_cswap, ucx_cswap, 8);
        cm_bench_check(cm_rma_fadd(b.rma, target, (uint64_t *)b.remote, 0, &check), "fadd");
        if (check != b.iter) {
            cm_abort(1, "cm_bench: %" PRIu64 " compare-and-swaps left %" PRIu64 " in memory",
                     b.iter, check);
        }
        cm_bench_latency(&b, "atomic fetch-and-add", cm_fadd, ucx_fadd, 8);
        {
            double rtt, unused;
            cm_bench_pair(&b, cm_am_rtt, NULL, 8, &rtt, &unused);
            cm_bench_add(&b, "message round trip (null)", 8, "us", rtt / 1e3,
                         cm_bench_value(&b, "get", 8), "one-sided get (8 B)");
        }
        for (size_t i = 0; i < 3; i++) {
            cm_bench_bandwidth(&b, "get bandwidth (16 in flight)", cm_get_bw, ucx_get_bw,
                               bw_sizes[i]);
        }
        cm_bench_floors(&b);
    }
    cm_bench_check(cm_rma_barrier(b.rma), "barrier");
    if (target != 0 && cm_rma_progress_thread_running(b.rma)) {
        /* (Without the thread nobody serves a computing target: a TreadMarks run has one.) */
        cm_bench_busy_target(&b, (uint64_t *)(void *)(b.remote + max_bw - 64));
    }
    if (cm_nprocs() > 1 && target != 0) {
        if (strcmp(cm_rt.proto->name, "treadmarks") == 0) {
            cm_bench_tmk(&b);
        } else {
            cm_bench_protocol(&b);
        }
    }
    if (cm_rank() == 0) {
        cm_bench_print(&b, json, transport);
        fflush(stdout);
    }
    cm_bench_check(cm_rma_barrier(b.rma), "barrier");
    free(b.local);
    cm_finalize();
    return 0;
}
