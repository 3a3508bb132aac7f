/*
 * cm_bench: microbenchmarks of the one-sided layer, each beside the same
 * operation issued straight through UCX on the same endpoint and memory in
 * the same run, plus the local floor costs the protocol pays (SIGSEGV
 * delivery and mprotect).
 *
 *   cmrun -n 2 cm_bench [--json] [--batches N] [--target R]
 *
 * Rank 0 measures against the target rank (default: the last rank); the other
 * ranks wait in a barrier, serving one-sided requests. Each figure is the
 * median over batches; cm and ucx batches alternate so that both see the same
 * machine noise.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/cm_runtime.h"
#include "src/cm_log.h"
#include "src/cm_time.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CM_BENCH_MAX_BATCHES 63
#define CM_BENCH_MAX_RESULTS 32
#define CM_BENCH_BW_WINDOW   16
#define CM_BENCH_BATCH_NS    2000000ull /* aim for 2 ms per batch */

typedef struct {
    const char *name;
    size_t     size;
    const char *unit;  /* "us" per operation or "MB/s" */
    double     cm;
    double     ucx;    /* < 0: no UCX counterpart */
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
                         double ucx)
{
    cm_bench_result_t *r = &b->results[b->nresults++];
    r->name = name;
    r->size = size;
    r->unit = unit;
    r->cm   = cm;
    r->ucx  = ucx;
}

static void cm_bench_latency(cm_bench_t *b, const char *name, cm_bench_op_fn_t fn,
                             cm_bench_op_fn_t ref, size_t size)
{
    double cm_ns, ucx_ns;
    cm_bench_pair(b, fn, ref, size, &cm_ns, &ucx_ns);
    cm_bench_add(b, name, size, "us", cm_ns / 1e3, (ucx_ns < 0) ? -1 : ucx_ns / 1e3);
}

static void cm_bench_bandwidth(cm_bench_t *b, const char *name, cm_bench_op_fn_t fn,
                               cm_bench_op_fn_t ref, size_t size)
{
    double cm_ns, ucx_ns, bytes = (double)size * CM_BENCH_BW_WINDOW;
    cm_bench_pair(b, fn, ref, size, &cm_ns, &ucx_ns);
    cm_bench_add(b, name, size, "MB/s", bytes / cm_ns * 1e3, bytes / ucx_ns * 1e3);
}

/* ---- local floors ------------------------------------------------------- */

static char *cm_bench_fault_page;
static long cm_bench_page_size;

static void cm_bench_segv(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    char *page = (char *)((uintptr_t)info->si_addr & ~((uintptr_t)cm_bench_page_size - 1));
    if (page != cm_bench_fault_page || mprotect(page, (size_t)cm_bench_page_size,
                                                PROT_READ | PROT_WRITE) != 0) {
        signal(sig, SIG_DFL); /* not ours: crash as usual */
    }
}

static int floor_fault(cm_bench_t *b, size_t size, uint64_t iter)
{
    (void)b;
    (void)size;
    mprotect(cm_bench_fault_page, (size_t)cm_bench_page_size, PROT_NONE);
    ((volatile char *)cm_bench_fault_page)[0] = (char)iter; /* faults; the handler unprotects */
    return 0;
}

static int floor_mprotect(cm_bench_t *b, size_t size, uint64_t iter)
{
    (void)b;
    (void)size;
    (void)iter;
    mprotect(cm_bench_fault_page, (size_t)cm_bench_page_size, PROT_NONE);
    mprotect(cm_bench_fault_page, (size_t)cm_bench_page_size, PROT_READ | PROT_WRITE);
    return 0;
}

static void cm_bench_floors(cm_bench_t *b)
{
    struct sigaction sa, old;
    double fault_ns, mprot_ns, unused;

    cm_bench_page_size  = sysconf(_SC_PAGESIZE);
    cm_bench_fault_page = mmap(NULL, (size_t)cm_bench_page_size, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (cm_bench_fault_page == MAP_FAILED) {
        cm_fatal(1, "cm_bench: mmap failed");
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = cm_bench_segv;
    sa.sa_flags     = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old);
    cm_bench_pair(b, floor_fault, NULL, 0, &fault_ns, &unused);
    cm_bench_pair(b, floor_mprotect, NULL, 0, &mprot_ns, &unused);
    sigaction(SIGSEGV, &old, NULL);
    munmap(cm_bench_fault_page, (size_t)cm_bench_page_size);
    cm_bench_add(b, "fault: SIGSEGV + mprotect pair", 0, "us", fault_ns / 1e3, -1);
    cm_bench_add(b, "mprotect pair", 0, "us", mprot_ns / 1e3, -1);
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
        printf("  \"nprocs\": %d, \"initiator\": 0, \"target\": %d,\n", cm_rt.nprocs, b->target);
        printf("  \"transport\": \"%s\", \"direct_mapped\": %s, \"progress_thread\": %s,\n",
               transport, cm_rma_ptr(b->rma, b->target, b->remote) ? "true" : "false",
               cm_rma_progress_thread_running(b->rma) ? "true" : "false");
        printf("  \"delay\": {\"latency_ns\": %" PRIu64 ", \"bandwidth_Bps\": %.0f, "
               "\"overhead_ns\": %" PRIu64 "},\n", cfg->net_latency, cfg->net_bandwidth,
               cfg->net_overhead);
        printf("  \"batches\": %d, \"statistic\": \"median\",\n  \"results\": [\n", b->batches);
        for (int i = 0; i < b->nresults; i++) {
            cm_bench_result_t *r = &b->results[i];
            printf("    {\"name\": \"%s\", \"size\": %zu, \"unit\": \"%s\", \"cm\": %.4f", r->name,
                   r->size, r->unit, r->cm);
            if (r->ucx >= 0) {
                printf(", \"ucx\": %.4f, \"ratio\": %.3f", r->ucx, r->cm / r->ucx);
            }
            printf("}%s\n", (i + 1 < b->nresults) ? "," : "");
        }
        printf("  ],\n  \"rma_stats\": {\"puts\": %" PRIu64 ", \"gets\": %" PRIu64
               ", \"atomics\": %" PRIu64 ", \"flushes\": %" PRIu64 ", \"delay_ns\": %" PRIu64 ", \"progress_wakeups\": %" PRIu64 "}\n}\n",
               st.puts, st.gets, st.atomics, st.flushes, st.delay_ns, st.progress_wakeups);
        return;
    }

    printf("# cm_bench %s: %d processes, rank 0 -> rank %d over %s (%s), progress thread %s\n",
           PACKAGE_VERSION, cm_rt.nprocs, b->target, transport,
           cm_rma_ptr(b->rma, b->target, b->remote) ? "peer memory directly mapped"
                                                     : "no direct mapping",
           cm_rma_progress_thread_running(b->rma) ? "on" : "off");
    if (cfg->net_latency || cfg->net_bandwidth > 0 || cfg->net_overhead) {
        printf("# delay injection: latency %" PRIu64 " ns, bandwidth %.0f B/s (0 = unlimited), "
               "overhead %" PRIu64 " ns\n", cfg->net_latency, cfg->net_bandwidth, cfg->net_overhead);
    } else {
        printf("# delay injection: off\n");
    }
    printf("# median of %d batches; ucx = the same operation issued directly with ucp on the same "
           "endpoint, same run\n", b->batches);
    printf("%-32s %8s %12s %12s %8s\n", "operation", "size", "cm_rma", "ucx", "cm/ucx");
    for (int i = 0; i < b->nresults; i++) {
        cm_bench_result_t *r = &b->results[i];
        char size[32], unit_cm[32], unit_ucx[32] = "-", ratio[16] = "-";
        cm_bench_size_str(r->size, size, sizeof(size));
        snprintf(unit_cm, sizeof(unit_cm), "%.3f %s", r->cm, r->unit);
        if (r->ucx >= 0) {
            snprintf(unit_ucx, sizeof(unit_ucx), "%.3f %s", r->ucx, r->unit);
            snprintf(ratio, sizeof(ratio), "%.2f", r->cm / r->ucx);
        }
        printf("%-32s %8s %12s %12s %8s\n", r->name, size, unit_cm, unit_ucx, ratio);
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
        for (size_t i = 0; i < 3; i++) {
            cm_bench_bandwidth(&b, "get bandwidth (16 in flight)", cm_get_bw, ucx_get_bw,
                               bw_sizes[i]);
        }
        cm_bench_floors(&b);
        cm_bench_print(&b, json, transport);
        fflush(stdout);
    }
    cm_bench_check(cm_rma_barrier(b.rma), "barrier");
    free(b.local);
    cm_finalize();
    return 0;
}
