/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TreadMarks baseline: lazy-invalidate lazy release consistency (Keleher's
 * thesis, chapter 2) over two-sided active messages, running the same
 * programs as Cashmere through cm.h.
 *
 * Pages are UNMAPPED (no copy yet), INVALID (write notices pending),
 * READ_ONLY or READ_WRITE. A page's manager (page % nprocs) starts with the
 * valid initial (zero) copy; anyone else's first access copies it from the
 * manager, then applies the diffs of every write notice it knows of. The
 * first write to a read-only page makes a twin; at the end of the interval
 * the page is write-protected again but the twin kept: the diff is made
 * lazily, when someone asks for it or when a foreign write notice for the
 * page arrives, and then covers every own notice of the page still without
 * one. A miss asks for diffs only the creators of the newest (concurrent)
 * notices, one request per process, and applies them in happened-before
 * order.
 *
 * Locks: a static manager forwards each request to the last requester; the
 * token moves with a grant that carries the intervals the acquirer has not
 * seen; re-acquiring a lock whose token is here costs no message. Barriers:
 * a central manager per barrier (round-robin), arrivals carry intervals the
 * manager may lack, departures exactly what each process lacks. A barrier
 * collects garbage when some process holds more history than CM_TMK_GC_BYTES.
 *
 * Concurrency: requests are handled inside UCX progress, by the progress
 * thread while the application computes (counted as interrupts) or by the
 * application thread while it waits in the library. All protocol state is
 * under one mutex; a handler that cannot take it queues the message for the
 * holder, which serves the queue before it lets go. Nothing waits while
 * holding the mutex.
 *
 * Files: cm_tmk_int.h (the state and what the files share), cm_tmk_msg.c (messages,
 * waiting, request dispatch), cm_tmk_pages.c (intervals, lazy diffs, invalidation, access
 * misses, diff requests), cm_tmk_scan.c (CM_TMK_WRITE_DETECT=scan), cm_tmk_locks.c,
 * cm_tmk_barrier.c (barriers and garbage collection), cm_tmk_interval.c (interval records and
 * vector timestamps), cm_tmk_diff.c (the diff encoding); this file is the runtime interface.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/protocols/cm_protocol.h"
#include "util/cm_log.h"
#include "util/cm_time.h"
#include "src/protocols/treadmarks/cm_tmk_int.h"
#include "util/cm_mem.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

cm_tmk_state_t cm_tmk;

/* ---- runtime interface --------------------------------------------------------------------- */

static cm_status_t tm_init_done(void)
{
    return CM_OK; /* no initialization phase: pages have static managers */
}

static void tm_stats(cm_stats_t *s)
{
    cm_tmk_mu_lock();
    *s = cm_tmk.st;
    cm_tmk_mu_unlock();
    cm_protocol_stats_rma(cm_tmk.rma, &cm_tmk.rma_base, s, NULL);
    s->total_ns = cm_time_ns() - cm_tmk.t_start;
}

static void tm_stats_reset(void)
{
    cm_tmk_mu_lock();
    memset(&cm_tmk.st, 0, sizeof(cm_tmk.st));
    cm_tmk_mu_unlock();
    cm_rma_get_stats(cm_tmk.rma, &cm_tmk.rma_base);
    cm_tmk.t_start = cm_time_ns();
}

static const char *tm_describe(void)
{
    return cm_tmk.describe;
}

static cm_status_t tm_page_home(const void *addr, int *home)
{
    uintptr_t a = (uintptr_t)addr - (uintptr_t)cm_tmk.app;
    if (a >= (cm_tmk.npages << cm_tmk.shift)) {
        return CM_ERR_INVALID;
    }
    *home = cm_tmk_manager(a >> cm_tmk.shift);
    return CM_OK;
}

static cm_status_t tm_init(const cm_protocol_ctx_t *ctx)
{
    const cm_config_t *cfg = ctx->config;

    memset(&cm_tmk, 0, sizeof(cm_tmk));
    cm_stats_phase_base(&cm_tmk.st);
    cm_tmk.me     = ctx->rank;
    cm_tmk.np     = ctx->nprocs;
    cm_tmk.rma    = ctx->rma;
    cm_tmk.app    = ctx->app;
    cm_tmk.net    = ctx->net;
    cm_tmk.ps     = ctx->page_size;
    cm_tmk.shift  = (unsigned)__builtin_ctzll(ctx->page_size);
    cm_tmk.npages = ctx->npages;
    cm_tmk.nlocks = (unsigned)cfg->locks;
    cm_tmk.gc_bytes   = cfg->tmk_gc_bytes;
    cm_tmk.scan       = (cfg->tmk_write_detect == CM_TMK_DETECT_SCAN);
    cm_tmk.app_thread = pthread_self();
    if (cm_tmk.np > CM_TMK_MAX_PROCS) {
        cm_error("treadmarks: at most %d processes (the job has %d)", CM_TMK_MAX_PROCS, cm_tmk.np);
        return CM_ERR_UNSUPPORTED;
    }
    if (cm_tmk.ps / CM_TMK_WORD > CM_TMK_MAX_PAGE_WORDS) {
        cm_error("treadmarks: pages of %zu bytes are too large for the diff encoding", cm_tmk.ps);
        return CM_ERR_UNSUPPORTED;
    }
    pthread_mutex_init(&cm_tmk.mu, NULL);
    pthread_mutex_init(&cm_tmk.qmu, NULL);
    CM_CHECK(cm_tmk_store_init(&cm_tmk.store, cm_tmk.np));
    cm_tmk.pages    = cm_mem_reserve(cm_tmk.npages * sizeof(*cm_tmk.pages));
    cm_tmk.touched  = cm_mem_reserve(cm_tmk.npages * sizeof(*cm_tmk.touched));
    cm_tmk.dirty    = malloc(cm_tmk.npages * sizeof(*cm_tmk.dirty));
    cm_tmk.rw       = malloc(cm_tmk.npages * sizeof(*cm_tmk.rw));
    cm_tmk.locks    = calloc(cm_tmk.nlocks ? cm_tmk.nlocks : 1, sizeof(*cm_tmk.locks));
    cm_tmk.diffbuf  = malloc(cm_tmk_diff_max(cm_tmk.ps));
    cm_tmk.bar_vt   = calloc((size_t)cm_tmk.np, sizeof(*cm_tmk.bar_vt));
    cm_tmk.arrivals = calloc((size_t)cm_tmk.np, sizeof(*cm_tmk.arrivals));
    if (cm_tmk.pages == NULL || cm_tmk.dirty == NULL || cm_tmk.rw == NULL || cm_tmk.locks == NULL ||
        cm_tmk.diffbuf == NULL || cm_tmk.bar_vt == NULL || cm_tmk.arrivals == NULL) {
        cm_error("treadmarks: out of memory for the page table of %" PRIu64 " pages",
                 cm_tmk.npages);
        return CM_ERR_NO_MEMORY;
    }
    CM_CHECK(cm_tmk_pf_init(cfg->refetch));
    cm_tmk.pf_block = (cfg->prefetch > 64) ? 64 : (unsigned)cfg->prefetch;
    for (unsigned l = 0; l < cm_tmk.nlocks; l++) {
        int mgr = (int)(l % (unsigned)cm_tmk.np);
        cm_tmk.locks[l].local    = (mgr == cm_tmk.me); /* the manager starts with the token */
        cm_tmk.locks[l].last_req = (uint32_t)mgr;
    }
    /*
     * Every page starts protected. A manager's pages are valid (zero) from the
     * start: its first access only opens them; anyone else copies them.
     */
    if (mprotect(cm_tmk.app, cm_tmk.npages << cm_tmk.shift, PROT_NONE) != 0) {
        cm_error("mprotect of the shared region failed: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    for (int t = 1; t < TM_NTYPES; t++) {
        static const char *const names[TM_NTYPES] = {
            [TM_LOCK_REQ] = "a lock request", [TM_LOCK_FWD] = "a forwarded lock request",
            [TM_LOCK_GRANT] = "a lock grant", [TM_BAR_ARRIVE] = "a barrier arrival",
            [TM_BAR_DEPART] = "a barrier departure", [TM_DIFF_REQ] = "a diff request",
            [TM_DIFF_REPLY] = "a diff reply", [TM_PAGE_REQ] = "a page request",
            [TM_PAGE_REPLY] = "a page reply", [TM_GC_DONE] = "a garbage collection done",
            [TM_GC_GO] = "a garbage collection go"};
        CM_CHECK(cm_rma_am_set_handler(cm_tmk.rma, (unsigned)t, cm_tmk_am_recv,
                                       (void *)(intptr_t)t, names[t]));
        /* What a node's CPU serves for another while it computes: an interrupt in the seed
         * (bilas-singh-comm-params: page fetches and remote lock acquires). Replies, grants
         * and the barrier's messages are waited for. */
        if (t == TM_LOCK_REQ || t == TM_LOCK_FWD || t == TM_DIFF_REQ || t == TM_PAGE_REQ) {
            CM_CHECK(cm_rma_am_set_request(cm_tmk.rma, (unsigned)t));
        }
    }
    CM_CHECK(cm_rma_barrier(cm_tmk.rma)); /* handlers everywhere before the first message */
    snprintf(cm_tmk.describe, sizeof(cm_tmk.describe),
             "treadmarks: lazy invalidate, lazy diffs (4-byte words, twins across intervals), "
             "written pages found by %s, static page and lock managers, central barrier manager; "
             "requests served by %s; gc above %zu bytes; diffs of invalidated pages %s",
             cm_tmk.scan ? "scanning writable pages" : "write faults",
             cm_rma_progress_thread_running(cm_tmk.rma)
                 ? "the progress thread (interrupts)"
                 : "the application inside library calls only",
             cm_tmk.gc_bytes,
             (cm_tmk.pf_mode == CM_REFETCH_PAPER)
                 ? ((cfg->refetch == CM_REFETCH_AUTO)
                        ? "fetched at their next access (CM_REFETCH=auto: every peer is mapped here)"
                        : "fetched at their next access (CM_REFETCH=paper)")
                 : (cm_tmk.pf_mode == CM_REFETCH_AUTO)
                     ? "used since their validation fetched at the acquire, in one batch, while "
                       "that pays (CM_REFETCH=auto)"
                     : "used since their validation fetched at the acquire, in one batch "
                       "(CM_REFETCH=used)");
    if (cm_tmk.pf_block > 1) {
        size_t len = strlen(cm_tmk.describe);
        snprintf(cm_tmk.describe + len, sizeof(cm_tmk.describe) - len,
                 "; a miss asks for the diffs of its block of %u pages (CM_PREFETCH)",
                 cm_tmk.pf_block);
    }
    cm_tmk.t_start = cm_time_ns();
    cm_tmk.ready   = true;
    return CM_OK;
}

static void tm_fini(void)
{
    if (!cm_tmk.ready) {
        return;
    }
    /*
     * A peer may still ask us for diffs: the last barrier's departure invalidates pages, and
     * their diff requests (CM_REFETCH) go out once the barrier has ended, here possibly after
     * we left it. Served by the progress thread, they would read and free what we free below
     * (pages' refs and twins, the store). Every process passes this barrier only once its own
     * last barrier, and the replies it waited for, are done; nothing is asked of us after it.
     * The mutex waits out a handler still on its way out.
     */
    if (cm_tmk.np > 1 && cm_rma_barrier(cm_tmk.rma) != CM_OK) {
        return; /* the job is failing: its exit frees this, not we under a handler */
    }
    pthread_mutex_lock(&cm_tmk.mu);
    cm_tmk.closed = true;
    pthread_mutex_unlock(&cm_tmk.mu);
    for (uint64_t t = 0; t < cm_tmk.ntouched; t++) {
        uint64_t p = cm_tmk.touched[t];
        free(cm_tmk.pages[p].twin);
        free(cm_tmk.pages[p].snap);
        free(cm_tmk.pages[p].refs);
    }
    for (unsigned l = 0; l < cm_tmk.nlocks; l++) {
        free(cm_tmk.locks[l].next_vt);
    }
    cm_tmk_store_fini(&cm_tmk.store);
    cm_mem_release(cm_tmk.pages, cm_tmk.npages * sizeof(*cm_tmk.pages));
    cm_tmk_pf_fini();
    cm_mem_release(cm_tmk.touched, cm_tmk.npages * sizeof(*cm_tmk.touched));
    free(cm_tmk.dirty);
    free(cm_tmk.rw);
    free(cm_tmk.locks);
    free(cm_tmk.diffbuf);
    free(cm_tmk.bar_vt);
    free(cm_tmk.arrivals);
    free(cm_tmk.missing);
    cm_tmk.ready = false;
}

const cm_protocol_t cm_protocol_treadmarks = {
    .name         = "treadmarks",
    .max_procs    = CM_TMK_MAX_PROCS,
    .init         = tm_init,
    .fini         = tm_fini,
    .fault        = cm_tmk_fault,
    .lock_acquire = cm_tmk_lock_acquire,
    .lock_release = cm_tmk_lock_release,
    .barrier      = cm_tmk_barrier,
    .init_done    = tm_init_done,
    .stats        = tm_stats,
    .stats_reset  = tm_stats_reset,
    .describe     = tm_describe,
    .page_home    = tm_page_home,
};
