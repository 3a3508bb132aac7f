/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_bench's protocol rows (every rank takes part): remote page fault, doubled store, lock
 * acquire and hand-off, directory update, barrier, forwarding and line fills under the run's
 * Cashmere variant, each next to the floor it is built from; under TreadMarks, the thesis's
 * basic costs next to the message round trip.
 */
#define _GNU_SOURCE
#include "config.h"
#include "directory/cm_dir.h"
#include "src/tools/cm_bench.h"
#include "util/cm_log.h"
#include "util/cm_time.h"
#include "util/cm_variant.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
    int      pages;   /* join and leave in turn over this many entries, P apart (one home) */
    int      np;
} cm_bench_dir_arg_t;

static void loop_dir(void *arg, int n)
{
    cm_bench_dir_arg_t *a = arg;
    cm_dir_entry_t e;
    cm_dir_effects_t fx;
    for (int i = 0; i < n; i++) {
        cm_dir_op_t op = (i % 2 == 0) ? CM_DIR_JOIN : CM_DIR_LEAVE;
        uint64_t page = a->page - (uint64_t)((i / 2) % a->pages) * (uint64_t)a->np;
        cm_bench_check(cm_dir_update(a->dir, page, op, NULL, NULL, &e, &fx), "directory update");
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
                cm_rma_wait_u64(b->rma, ack, CM_CMP_EQ, seq, NULL);
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
            cm_rma_wait_u64(b->rma, slot, CM_CMP_EQ, seq, NULL); /* serves peers' puts meanwhile */
            cm_bench_check(cm_rma_put_u64_nbi(b->rma, 0, ack, seq), "acknowledgement");
            cm_bench_check(cm_rma_flush(b->rma, 0), "acknowledgement");
        }
    }
    cm_barrier();
}

/* The first page of region (of nprocs pages more than it needs) whose round-robin home is t. */
static char *cm_bench_homed_at(char *region, int t)
{
    const size_t ps = cm_rt.page_size;
    const uint64_t np = (uint64_t)cm_nprocs();
    uint64_t p = ((uintptr_t)region - (uintptr_t)cm_rt.shared_base + ps - 1) / ps;

    p += ((uint64_t)t + np - p % np) % np;
    return (char *)cm_rt.shared_base + p * ps;
}

/*
 * Reads one byte at offset off of each of (batches + 1) x CM_BENCH_FAULTS pages in turn,
 * `step` bytes apart, a batch at a time (batch -1 warms up); t[i]: time per page of batch i.
 */
static void cm_bench_read_pages(cm_bench_t *b, char *pages, size_t step, size_t off, double *t)
{
    for (int i = -1, next = 0; i < b->batches; i++) {
        uint64_t t0 = cm_time_ns();
        for (int k = 0; k < CM_BENCH_FAULTS; k++) {
            (void)*(volatile char *)(pages + (size_t)next++ * step + off);
        }
        if (i >= 0) {
            t[i] = (double)(cm_time_ns() - t0) / CM_BENCH_FAULTS;
        }
    }
}

/* What a remote page fault is built from: the handler's fault and one get of a page. */
static double cm_bench_fault_floor(cm_bench_t *b)
{
    return cm_bench_value(b, "fault: SIGSEGV + mprotect (handler)", 0) +
           cm_bench_value(b, "get", 4096);
}

/*
 * Remote page faults on pages homed at the target, each read once per
 * pass: first touch of the local frame (cold), then, after the barrier's
 * acquire has invalidated them all (rank 0's joins turned them weak), the
 * same pages again: a re-fetch into a resident frame, the steady state of
 * a program. Under CM_REFETCH an acquire would copy the pages read since
 * their copy again and make the next read a local fault: two more barriers
 * leave them unused twice, so that they leave the sharing set, and the
 * second pass's faults each fetch their page (checked).
 */
static void cm_bench_page_faults(cm_bench_t *b, char *pages, size_t step, int npages)
{
    const int me = cm_rank();
    double t_cold[CM_BENCH_MAX_BATCHES], t_warm[CM_BENCH_MAX_BATCHES];
    uint64_t faults0 = 0, faults1 = 0;
    cm_stats_t st;

    for (int pass = 0; pass < 2; pass++) {
        double *t_pass = pass ? t_warm : t_cold;
        uint64_t fetched0 = 0;
        if (me == 0) {
            cm_rt.proto->stats(&st);
            faults0  = st.read_faults;
            fetched0 = st.pages_fetched + st.pages_mapped; /* NH**: mapped, not copied */
            cm_bench_read_pages(b, pages, step, 0, t_pass);
            cm_rt.proto->stats(&st);
            faults1 = st.read_faults;
            if (faults1 - faults0 != (uint64_t)npages) {
                cm_abort(1, "cm_bench: %d page reads took %" PRIu64 " faults (pass %d): "
                         "the pages were not invalidated", npages, faults1 - faults0, pass);
            }
            if (st.pages_fetched + st.pages_mapped - fetched0 != (uint64_t)npages) {
                cm_abort(1, "cm_bench: %d page faults fetched or mapped %" PRIu64 " pages (pass "
                         "%d): they were not remote", npages,
                         st.pages_fetched + st.pages_mapped - fetched0, pass);
            }
        }
        cm_barrier();
        cm_barrier(); /* refetched unused (CM_REFETCH) */
        cm_barrier(); /* unused twice: they leave */
    }
    if (me == 0) {
        double fault_floor = cm_bench_fault_floor(b);
        cm_bench_add(b, "page fault, remote home, read", 4096, "us",
                     cm_bench_median(t_warm, b->batches) / 1e3, fault_floor,
                     "SIGSEGV + mprotect + 4 KiB get");
        cm_bench_add(b, "page fault, remote home, read, frame cold", 4096, "us",
                     cm_bench_median(t_cold, b->batches) / 1e3, fault_floor,
                     "SIGSEGV + mprotect + 4 KiB get");
    }
}

/*
 * First touch (CM_FIRST_TOUCH, after cm_init_done): rank 0 reads pages that nobody has touched
 * and whose round-robin home is the target; each read claims the home and brings the page in.
 * Next to a fault and one get of a page, and the waits on the network each claim took (the
 * protocol's waits_first_touch) next to issue 45's goal of one round trip.
 */
static void cm_bench_first_touch(cm_bench_t *b)
{
    const int me = cm_rank(), np = cm_nprocs();
    const size_t step = (size_t)np * cm_rt.page_size; /* every np-th page is the target's */
    const int n = (b->batches + 1) * CM_BENCH_FAULTS;
    double tp[CM_BENCH_MAX_BATCHES];
    char *first;
    cm_stats_t st0, st1;

    if (!cm_rt.config.first_touch) {
        if (me == 0) {
            fprintf(stderr, "cm_bench: CM_FIRST_TOUCH=no: homes stay where they are: no "
                    "first-touch rows\n");
        }
        cm_barrier();
        return;
    }
    first = cm_bench_homed_at(cm_malloc((size_t)(n + 1) * step), b->target);
    if (me == 0) {
        cm_rt.proto->stats(&st0);
        cm_bench_read_pages(b, first, step, 0, tp);
        cm_rt.proto->stats(&st1);
        if (st1.home_migrations - st0.home_migrations != (uint64_t)n) {
            cm_abort(1, "cm_bench: %d first reads of untouched pages claimed %" PRIu64
                     " homes: they were not first touches", n,
                     st1.home_migrations - st0.home_migrations);
        }
        cm_bench_add(b, "page fault, first touch, home moves here", 4096, "us",
                     cm_bench_median(tp, b->batches) / 1e3, cm_bench_fault_floor(b),
                     "SIGSEGV + mprotect + 4 KiB get");
        cm_bench_add(b, "first touch, waits on the network each", 0, "waits",
                     (double)(st1.waits_first_touch - st0.waits_first_touch) / n, 1,
                     "one round trip");
    }
    cm_barrier();
}

/*
 * Software line fills (NS**): no fault, a load check that misses. The first read of each
 * page homed at the target joins the directory and fills one line (the frame cold: the
 * kernel allocates it); a read of the page's next line is a line miss alone (the page stays
 * joined), next to one get of a line. After the barrier's acquire has invalidated the pages
 * (rank 0's joins turned them weak), the first read again: a join and a line fill into a
 * resident frame, the steady state of a program.
 */
static void cm_bench_line_fills(cm_bench_t *b, char *pages, size_t step, int npages)
{
    const int me = cm_rank();
    const size_t ps = cm_rt.page_size, line = (size_t)cm_rt.config.line_size;
    const unsigned page_fill = (unsigned)cm_rt.config.line_page_fill;
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
    if (page_fill == 1) {
        if (me == 0) {
            printf("# CM_LINE_PAGE_FILL=1: every first miss brings the page: no line-miss rows\n");
        }
        return;
    }
    if (me == 0) {
        cm_rt.proto->stats(&st);
        fills0 = st.line_fills + st.pages_fetched;
    }
    /* Pass 0: join + line 0, cold frame; 1: line 1 (a miss alone); 2: join + line 0 again. */
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 2) {
            cm_barrier();
        }
        if (me != 0) {
            continue;
        }
        cm_bench_read_pages(b, pages, step, (size_t)(pass == 1) * line, t_pass[pass]);
    }
    if (me == 0) {
        cm_rt.proto->stats(&st);
        /* A line fill per read, or (the second miss on a page, CM_LINE_PAGE_FILL=2) a page. */
        if (st.line_fills + st.pages_fetched - fills0 != 3 * (uint64_t)npages) {
            cm_abort(1, "cm_bench: %d line reads took %" PRIu64 " line and page fills: the "
                     "lines were not invalid", 3 * npages, st.line_fills + st.pages_fetched - fills0);
        }
    }
    cm_barrier();
    if (me == 0) {
        double get = cm_bench_value(b, "get", ref);
        double join = get + cm_bench_value(b, "atomic compare-and-swap", 8);
        if (page_fill == 2) {
            /* The second miss on a page of which nothing was valid brings the rest of it. */
            cm_bench_add(b, "second line miss: the rest of the page (CM_LINE_PAGE_FILL=2)", ps,
                         "us", cm_bench_median(t_pass[1], b->batches) / 1e3,
                         cm_bench_value(b, "get", 4096), "get of a page");
        } else {
            cm_bench_add(b, "line miss, remote home, read", line, "us",
                         cm_bench_median(t_pass[1], b->batches) / 1e3, get, "get of a line");
        }
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

void cm_bench_protocol(cm_bench_t *b)
{
    const int me = cm_rank(), np = cm_nprocs(), t = b->target;
    const size_t ps = cm_rt.page_size;
    const int npages = (b->batches + 1) * CM_BENCH_FAULTS;
    const char *vname = cm_variants[cm_rt.config.variant].name;
    char *pages, *store_page;
    size_t step;
    int lock = t, rounds = 1;
    double ns, put8 = 0, ref;

    cm_init_done(); /* homes move on first touch from here */
    /* Measured pages step apart: where homes stay round-robin (CM_FIRST_TOUCH=no), every
     * np-th is the target's; else the target's first touch moves them all there. */
    step       = cm_rt.config.first_touch ? ps : (size_t)np * ps;
    pages      = cm_bench_homed_at(cm_malloc((size_t)(npages + 1) * step), t);
    store_page = cm_bench_homed_at(cm_malloc((size_t)(np + 1) * ps), t);
    if (me == t) {
        for (int i = 0; i < npages; i++) {
            pages[(size_t)i * step] = 1; /* first touch: these pages live at the target */
        }
        store_page[0] = 1;
    }
    cm_barrier();

    if (cm_variants[cm_rt.config.variant].fill == CM_FILL_LINE) {
        cm_bench_line_fills(b, pages, step, npages);
    } else {
        cm_bench_page_faults(b, pages, step, npages);
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
            cm_bench_dir_arg_t arg = {&dir, last, 1, np};
            if (np <= CM_DIR_MAX_PROCS_CAS) {
                cm_bench_check(cm_dir_init(&dir, b->rma, CM_DIR_IMPL_CAS, &dseg, 1000), "directory");
                ns = cm_bench_median_of(b, loop_dir, &arg, 400);
                cm_bench_add(b, "directory update, CAS word", 0, "us", ns / 1e3, amo,
                             "compare-and-swap");
                cm_dir_fini(&dir);
                /* The add form: a join is a fetching add waited for, a leave an add nobody
                 * waits for, fenced before its entry's next update only: 16 entries in turn,
                 * as a program's pages. Next to one fetch-and-add. */
                cm_bench_check(cm_dir_init(&dir, b->rma, CM_DIR_IMPL_ADD, &dseg, 1000), "directory");
                arg = (cm_bench_dir_arg_t){&dir, last - 2 * (uint64_t)np, 16, np};
                ns = cm_bench_median_of(b, loop_dir, &arg, 640);
                cm_bench_add(b, "directory update, add form (join, leave)", 0, "us", ns / 1e3,
                             cm_bench_value(b, "atomic fetch-and-add", 8), "fetch-and-add");
                cm_dir_fini(&dir);
            }
            cm_bench_check(cm_dir_init(&dir, b->rma, CM_DIR_IMPL_MCS, &dseg, 1000), "directory");
            /* A different entry: the forms use word 0 differently. */
            arg = (cm_bench_dir_arg_t){&dir, last - (uint64_t)np, 1, np};
            ns = cm_bench_median_of(b, loop_dir, &arg, 400);
            cm_bench_add(b, "directory update, MCS lock", 0, "us", ns / 1e3, amo, "compare-and-swap");
            cm_dir_fini(&dir);
        }
        put8 = cm_bench_value(b, "put + flush (remote completion)", 8);
    }
    cm_barrier();
    cm_bench_first_touch(b);
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
        /* A round is one one-way message: half a null message round trip. */
        cm_bench_add(b, name, 0, "us", ns / 1e3,
                     rounds * cm_bench_value(b, "message round trip (null)", 8) / 2,
                     rounds == 1 ? "1 one-way message (log2 P rounds)" : "log2(P) one-way messages");
    }
}

/*
 * TreadMarks: the thesis's basic costs, each next to the message round trip it
 * is built from (Table 2.1's message counts). Each timed operation follows two
 * barriers that put the lock token, or a fresh write notice, where it must be.
 */
void cm_bench_tmk(cm_bench_t *b)
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
