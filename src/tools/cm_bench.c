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
#include "src/tools/cm_bench.h"
#include "src/runtime/cm_check.h"
#include "util/cm_stats.h"
#include "util/cm_trace.h"
#include "util/cm_log.h"
#include "util/cm_time.h"

#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void cm_bench_check(cm_status_t status, const char *what)
{
    if (status != CM_OK) {
        cm_fatal(1, "cm_bench: %s failed: %s", what, cm_status_string(status));
    }
}

/* ---- raw UCX: the same operations without the rma/ layer ---------------- */

static void cm_bench_ucx_wait(cm_bench_t *b, ucs_status_ptr_t req, const char *what)
{
    ucs_status_t st;
    unsigned idle = 0;

    if (req == NULL) {
        return;
    }
    if (UCS_PTR_IS_ERR(req)) {
        cm_fatal(1, "cm_bench: ucx %s: %s", what, ucs_status_string(UCS_PTR_STATUS(req)));
    }
    /* Same conditions and the same spin as the rma/ layer's own waits (cm_rma_req_wait): a
     * bare spin starves a peer's network processing where cores are shared (ms a trip). */
    cm_rma_poll_enter(b->rma);
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        if (ucp_worker_progress(b->worker) != 0) {
            idle = 0;
        } else if (++idle >= 16) {
            sched_yield();
        }
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
    /* A ping whose first byte is 1 asks for its pong without injected delays (cm_bench_injected
     * compares the round trip with and without them). */
    bool plain = len > 0 && *(const unsigned char *)data == 1;

    (void)arg;
    if (plain) {
        cm_rma_delay_pause(cm_rt.rma, true);
    }
    cm_rma_am_post(cm_rt.rma, src, CM_BENCH_AM_PONG, data, len);
    if (plain) {
        cm_rma_delay_pause(cm_rt.rma, false);
    }
}

static void cm_bench_on_pong(void *arg, int src, const void *data, size_t len)
{
    (void)arg;
    (void)src;
    (void)data;
    (void)len;
    atomic_fetch_add(&cm_bench_pongs, 1);
}

static bool cm_bench_pong_seen(void *arg)
{
    return atomic_load(&cm_bench_pongs) >= *(uint64_t *)arg;
}

/* Waits as the protocols wait for a reply (cm_rma_wait_events): a bare spin on the worker
 * takes the core from a peer's network processing on a shared machine (2-4 ms a trip). */
static int cm_am_rtt(cm_bench_t *b, size_t size, uint64_t iter)
{
    uint64_t want = atomic_load(&cm_bench_pongs) + 1;
    (void)iter;
    cm_bench_check(cm_rma_am_send(b->rma, b->target, CM_BENCH_AM_PING, b->local, size), "message");
    cm_rma_wait_events(b->rma, cm_bench_pong_seen, &want, NULL);
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

double cm_bench_median(double *v, int n)
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
 * Warm-up and calibration (also makes sure both paths are connected): batches of fn, each
 * followed by one of ref (may be NULL), doubling from n until fn's takes a quarter of a batch
 * or n reaches max. Returns the operations per batch of fn, at least 4.
 */
static uint64_t cm_bench_calibrate(cm_bench_t *b, cm_bench_op_fn_t fn, cm_bench_op_fn_t ref,
                                   size_t size, uint64_t n, uint64_t max)
{
    uint64_t t;

    for (;;) {
        t = cm_bench_batch(b, fn, size, n);
        if (ref != NULL) {
            cm_bench_batch(b, ref, size, n);
        }
        if (t >= CM_BENCH_BATCH_NS / 4 || n >= max) {
            break;
        }
        n *= 2;
    }
    n = (t > 0) ? (uint64_t)((double)n * CM_BENCH_BATCH_NS / (double)t) : n;
    return (n < 4) ? 4 : n;
}

/*
 * Measures fn (cm) against ref (ucx, may be NULL): batch length calibrated on
 * fn, then batches alternating between the two. Returns ns per operation.
 */
static void cm_bench_pair(cm_bench_t *b, cm_bench_op_fn_t fn, cm_bench_op_fn_t ref, size_t size,
                          double *cm_ns, double *ucx_ns)
{
    double tc[CM_BENCH_MAX_BATCHES], tu[CM_BENCH_MAX_BATCHES];
    uint64_t n = cm_bench_calibrate(b, fn, ref, size, 1, 1u << 20);

    for (int i = 0; i < b->batches; i++) {
        tc[i] = (double)cm_bench_batch(b, fn, size, n) / (double)n;
        if (ref != NULL) {
            tu[i] = (double)cm_bench_batch(b, ref, size, n) / (double)n;
        }
    }
    *cm_ns  = cm_bench_median(tc, b->batches);
    *ucx_ns = (ref != NULL) ? cm_bench_median(tu, b->batches) : -1;
}

void cm_bench_add(cm_bench_t *b, const char *name, size_t size, const char *unit, double cm,
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

double cm_bench_value(cm_bench_t *b, const char *name, size_t size)
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

/*
 * What the injected delays (CM_NET_*) add to fn, against the model: batches with the delays
 * paused and on, alternating; the median of their differences beside what the model adds to
 * one operation on an idle interface (cm_rma_delay_expect). Their ratio is the check that
 * each setting took effect as documented.
 */
static void cm_bench_injected(cm_bench_t *b, const char *name, cm_bench_op_fn_t fn, size_t size,
                              cm_rma_delay_kind_t kind)
{
    double d[CM_BENCH_MAX_BATCHES];
    /* Calibrated with the delays on, the longer of the two. */
    uint64_t n = cm_bench_calibrate(b, fn, NULL, size, 4, 1u << 16);

    for (int i = 0; i < b->batches; i++) {
        double on, off;

        cm_rma_delay_pause(b->rma, true);
        b->local[0] = 1; /* a ping's pong undelayed too */
        off = (double)cm_bench_batch(b, fn, size, n) / (double)n;
        cm_rma_delay_pause(b->rma, false);
        b->local[0] = 0;
        on   = (double)cm_bench_batch(b, fn, size, n) / (double)n;
        d[i] = on - off;
    }
    cm_bench_add(b, name, size, "us", cm_bench_median(d, b->batches) / 1e3,
                 (double)cm_rma_delay_expect(b->rma, b->target, kind, size) / 1e3, "model");
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

/* One event of the trace, as the protocol records a span (CM_TRACE): two clock reads and a
 * record; off, one load and a branch. */
static int floor_trace(cm_bench_t *b, size_t size, uint64_t iter)
{
    uint64_t t0 = cm_trace_begin();

    (void)b;
    (void)size;
    cm_trace_end(CM_TRACE_FETCH, t0, iter, 0, 4096);
    return 0;
}

/* A statistics phase entered and left: with CM_TRACE on, a phase's record (one, a span, for a
 * phase with nothing inside: most of a trace's records are these). */
static int floor_phase(cm_bench_t *b, size_t size, uint64_t iter)
{
    uint64_t *outer = cm_stats_phase_enter(&cm_stats_phase_stats->handler_ns);

    (void)b;
    (void)size;
    (void)iter;
    cm_stats_phase_leave(outer);
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
    /* The trace's cost per event, what its perturbation is made of (docs/TRACE.md): on where
     * the job runs with CM_TRACE, else the cost of its being off. */
    cm_bench_pair(b, floor_trace, NULL, 0, &mprot_ns, &unused);
    cm_bench_add(b, cm_trace_on ? "trace event (CM_TRACE on)" : "trace event (CM_TRACE off)", 0,
                 "ns", mprot_ns, -1, NULL);
    if (cm_stats_phase_stats != NULL) { /* a protocol with statistics */
        cm_bench_pair(b, floor_phase, NULL, 0, &mprot_ns, &unused);
        cm_bench_add(b, cm_trace_on ? "statistics phase (CM_TRACE on)" : "statistics phase (CM_TRACE off)",
                     0, "ns", mprot_ns, -1, NULL);
    }
}

int main(int argc, char **argv)
{
    cm_bench_t b;
    bool json = false, link = false;
    int target = -1, status;
    char transport[128];
    static const size_t lat_sizes[] = {8, 64, 4096};
    static const size_t bw_sizes[]  = {4096, 65536, 1u << 20};
    size_t max_bw = bw_sizes[2] * CM_BENCH_BW_WINDOW;

    memset(&b, 0, sizeof(b));
    b.batches = 9;
    if ((status = cm_bench_options(argc, argv, &b.batches, &target, &json, &link)) >= 0) {
        return status;
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
    cm_bench_check(cm_rma_am_set_handler(b.rma, CM_BENCH_AM_PING, cm_bench_on_ping, NULL, "a ping"),
                   "handler");
    cm_bench_check(cm_rma_am_set_request(b.rma, CM_BENCH_AM_PING), "handler"); /* its interrupt */
    cm_bench_check(cm_rma_am_set_handler(b.rma, CM_BENCH_AM_PONG, cm_bench_on_pong, NULL, "a pong"),
                   "handler");
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

        if (link) {
            /* The link alone: the null round trip's reference and the two figures. */
            cm_bench_latency(&b, "get", cm_get, ucx_get, 8);
            goto link_figures;
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
    link_figures:
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
        if (cm_config_net_delayed(&cm_rt.config)) {
            cm_bench_injected(&b, "injected: get", cm_get, 8, CM_RMA_DELAY_OP);
            cm_bench_injected(&b, "injected: get", cm_get, 65536, CM_RMA_DELAY_OP);
            cm_bench_injected(&b, "injected: message round trip", cm_am_rtt, 8,
                              CM_RMA_DELAY_ROUND_TRIP);
        }
        if (!link) {
            cm_bench_floors(&b);
        }
    }
    cm_bench_check(cm_rma_barrier(b.rma), "barrier");
    if (target != 0 && !link && cm_rma_progress_thread_running(b.rma)) {
        /* (Without the thread nobody serves a computing target: a TreadMarks run has one.) */
        cm_bench_busy_target(&b, (uint64_t *)(void *)(b.remote + max_bw - 64));
    }
    if (cm_nprocs() > 1 && target != 0 && !link) {
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
