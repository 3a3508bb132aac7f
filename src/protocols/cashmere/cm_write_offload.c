/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hardware write forwarding without a mapping (the third letter H of CHH*,
 * NSH*), emulated by an offload thread: the paper's network interface that
 * snoops the memory bus and forwards every store to the page's home, here a
 * protocol thread that plays it with the means software has. Written pages
 * are found by page protection (a page joins read-only; its first store
 * faults), a twin of each page homed elsewhere is taken at that fault, and the
 * thread compares the tracked pages with their twins continuously, forwarding
 * the bytes that changed: each changed run within a word in its own transfer
 * (N), or through a merge buffer of 64-byte lines with byte masks (M). Only
 * changed bytes go: the rest of a word may be another writer's, stale here
 * (litmus barrier's blocks meet inside a word). A release
 * drains: the application thread makes the last pass itself before the
 * protocol's transitions and the flush, so nothing written before the release
 * is left behind. A page the drain finds unchanged since the previous drain
 * stops being tracked and is write-protected again (its next store faults and
 * tracks it afresh): the passes cost the pages written lately, not every page
 * ever written (BARNES's per-cell locks made thousands of drains over
 * thousands of long-idle pages).
 *
 * The thread's CPU time is counted apart (offload_cpu_ns): it is the cost of
 * emulating hardware, not of the protocol. Pages homed here need no
 * forwarding; their first store only marks them dirty (delayed write notices).
 *
 * Between passes, puts are fenced: a word forwarded twice (it changed again)
 * must not land in the old order. What goes is the twin's bytes, never the
 * page's own: the program may store between the pass's load of a word and the
 * transfer, and bytes sent from the page then would be newer than the twin
 * says the home has; a later change of a byte back to the twin's value would
 * never be sent (LU's sign bytes were lost that way). The twin of a word moves
 * only forward, from pass to pass, so a put still reading it sends the same
 * bytes or newer ones that the next pass sends again.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/protocols/cashmere/cm_cm_int.h"
#include "util/cm_time.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <time.h>

static struct {
    bool             merge;       /* M: the merge buffer */
    cm_merge_t       mb;
    cm_merge_entry_t *mb_entries;
    uint8_t          *twins;      /* npages * ps, reserved; touched for tracked pages only */
    uint32_t         *active;     /* pages tracked: homed elsewhere, written lately */
    uint8_t          *changed;    /* per tracked page (as active): changed since the last drain */
    uint32_t         *slot;       /* per page: its index in active + 1, 0 if not tracked */
    uint16_t         *home;       /* per tracked page: its home, as it was when tracking began
                                     (the page table's entry is completed after the join) */
    uint64_t         nactive;
    bool             direct;      /* plain stores into a home's memory since the last fence */
    bool             sent;        /* puts since the last fence */
    pthread_mutex_t  mu;          /* the pass, the tracked set, the merge buffer, the counters */
    pthread_t        thread;
    bool             running;
    volatile bool    stop;
    uint64_t         pause_ns;    /* between the thread's passes */
    uint64_t         cpu_ns;      /* the thread's CPU time so far */
    uint64_t         cpu_base;    /* ... at the last stats reset */
    uint64_t         passes;
    uint64_t         forwarded;   /* transfers to homes */
    uint64_t         words;       /* words found changed */
} cm_wo;

static inline uint64_t *cm_wo_twin(uint64_t p)
{
    return (uint64_t *)(cm_wo.twins + (p << cm_cm.shift));
}

/* ---- forwarding (under mu) ------------------------------------------------------------ */

/* len bytes at app address addr, within one tracked page, to the page's home: the twin's. */
static void cm_wo_forward(uintptr_t addr, size_t len, void *arg)
{
    uint64_t p = cm_cm_page(addr);
    const char *src = (const char *)cm_wo_twin(p) + (addr - (uintptr_t)cm_cm_app(p));

    (void)arg;
    if (cm_cm_write_through_from(cm_wo.home[p], addr, src, len, false)) {
        cm_wo.direct = true;
    } else {
        cm_wo.sent = true;
    }
    cm_wo.forwarded++;
}

/* Compares page p with its twin; forwards what changed (and takes it into the twin), and says
 * whether anything did. The application may be storing meanwhile: a word read here is what is
 * sent, and a later store shows as a change in the next pass. */
static bool cm_wo_scan(uint64_t p)
{
    uint64_t *cur = (uint64_t *)(void *)cm_cm_net(p), *tw = cm_wo_twin(p);
    size_t n = cm_cm.ps / sizeof(uint64_t);
    bool changed = false;

    for (size_t i = 0; i < n; i++) {
        uint64_t v = __atomic_load_n(&cur[i], __ATOMIC_RELAXED), x = v ^ tw[i];
        uintptr_t word = (uintptr_t)cm_cm_app(p) + i * sizeof(uint64_t);
        if (x == 0) {
            continue;
        }
        tw[i] = v;
        changed = true;
        cm_wo.words++;
        /* Only the bytes that changed: the rest of the word may be another writer's, stale
         * here (false sharing within a word), and must not overwrite the home's. */
        while (x != 0) {
            unsigned b = (unsigned)__builtin_ctzll(x) / 8, e = b;
            while (e < 8 && ((x >> (8 * e)) & 0xff) != 0) {
                e++;
            }
            x &= (e < 8) ? ~((1ull << (8 * e)) - 1) : 0;
            if (cm_wo.merge) {
                cm_merge_record(&cm_wo.mb, word + b, e - b);
            } else {
                cm_wo_forward(word + b, e - b, NULL);
            }
        }
    }
    return changed;
}

/* Orders what this pass forwarded before anything forwarded later (and, for a release,
 * before what publishes it). */
static void cm_wo_fence(void)
{
    if (cm_wo.direct) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        cm_wo.direct = false;
    }
    if (cm_wo.sent) {
        if (cm_rma_fence(cm_cm.rma) != CM_OK) {
            cm_fatal(1, "offload: fence failed");
        }
        cm_wo.sent = false;
    }
}

/* Tracked page k leaves the tracked set (its twin's memory given back). */
static void cm_wo_untrack(uint32_t k)
{
    uint64_t p = cm_wo.active[k];
    uint32_t last = (uint32_t)--cm_wo.nactive;

    cm_wo.active[k]  = cm_wo.active[last];
    cm_wo.changed[k] = cm_wo.changed[last];
    cm_wo.slot[cm_wo.active[k]] = k + 1;
    cm_wo.slot[p] = 0;
    madvise(cm_wo_twin(p), cm_cm.ps, MADV_DONTNEED);
}

static void cm_wo_pass(bool drain)
{
    for (uint64_t k = 0; k < cm_wo.nactive; k++) {
        if (cm_wo_scan(cm_wo.active[k])) {
            cm_wo.changed[k] = 1;
        }
    }
    if (drain && cm_wo.merge) {
        cm_merge_flush(&cm_wo.mb);
    }
    cm_wo_fence();
    cm_wo.passes++;
    if (!drain) {
        return;
    }
    /* The application thread drains (it is not storing): pages quiet since the last drain are
     * protected again and no longer scanned. Backwards: the page moved into k is done. */
    for (uint64_t k = cm_wo.nactive; k-- > 0;) {
        if (cm_wo.changed[k]) {
            cm_wo.changed[k] = 0;
            continue;
        }
        if (cm_cm_protect(cm_wo.active[k], PROT_READ) != CM_OK) {
            cm_fatal(1, "offload: cannot write-protect a quiet page");
        }
        cm_wo_untrack((uint32_t)k);
    }
}

/* ---- the thread -------------------------------------------------------------------------- */

static uint64_t cm_wo_thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *cm_wo_main(void *arg)
{
    struct timespec pause = {.tv_sec  = (time_t)(cm_wo.pause_ns / 1000000000ull),
                             .tv_nsec = (long)(cm_wo.pause_ns % 1000000000ull)};
    (void)arg;
    /* The default timer slack (50 us) would stretch every pause past what was asked. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    while (!cm_wo.stop) {
        pthread_mutex_lock(&cm_wo.mu);
        if (cm_wo.nactive > 0) {
            cm_wo_pass(false);
        }
        __atomic_store_n(&cm_wo.cpu_ns, cm_wo_thread_cpu(), __ATOMIC_RELAXED);
        pthread_mutex_unlock(&cm_wo.mu);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

/* ---- tracking pages -------------------------------------------------------------------- */

/* Page p, homed elsewhere, takes its first store: its twin is its contents now (read-only). */
static void cm_wo_track(uint64_t p, int home)
{
    pthread_mutex_lock(&cm_wo.mu);
    if (cm_wo.slot[p] == 0) {
        memcpy(cm_wo_twin(p), cm_cm_net(p), cm_cm.ps);
        cm_wo.home[p] = (uint16_t)home;
        cm_wo.changed[cm_wo.nactive] = 1; /* its first store is under way */
        cm_wo.active[cm_wo.nactive++] = (uint32_t)p;
        cm_wo.slot[p] = (uint32_t)cm_wo.nactive;
    }
    pthread_mutex_unlock(&cm_wo.mu);
}

static int cm_wo_joining(uint64_t p, int home, bool write)
{
    if (!write) {
        return PROT_READ;
    }
    if (home != cm_cm.me) {
        cm_wo_track(p, home);
    }
    cm_cm_mark_dirty(p);
    return PROT_READ | PROT_WRITE;
}

static cm_status_t cm_wo_write_fault(uint64_t p)
{
    if (cm_cm.pte[p].home != cm_cm.me) {
        cm_wo_track(p, cm_cm.pte[p].home);
    }
    cm_cm_mark_dirty(p);
    return cm_cm_protect(p, PROT_READ | PROT_WRITE);
}

/* Before page p is dropped or its transition made: its last changes go now. */
static cm_status_t cm_wo_settle(uint64_t p)
{
    pthread_mutex_lock(&cm_wo.mu);
    if (cm_wo.slot[p] != 0) {
        if (cm_wo_scan(p)) {
            cm_wo.changed[cm_wo.slot[p] - 1] = 1;
        }
        if (cm_wo.merge) {
            cm_merge_flush(&cm_wo.mb);
        }
        cm_wo_fence();
    }
    pthread_mutex_unlock(&cm_wo.mu);
    return CM_OK;
}

/* Page p left: no longer tracked (its twin's memory is given back). */
static void cm_wo_dropped(uint64_t p)
{
    uint32_t k;

    pthread_mutex_lock(&cm_wo.mu);
    k = cm_wo.slot[p];
    if (k != 0) {
        cm_wo_untrack(k - 1);
    }
    pthread_mutex_unlock(&cm_wo.mu);
}

/* The end of initialization drops every page: nothing is tracked any more. */
static void cm_wo_reset(void)
{
    pthread_mutex_lock(&cm_wo.mu);
    for (uint64_t k = 0; k < cm_wo.nactive; k++) {
        cm_wo.slot[cm_wo.active[k]] = 0;
    }
    cm_wo.nactive = 0;
    madvise(cm_wo.twins, cm_cm.npages << cm_cm.shift, MADV_DONTNEED);
    pthread_mutex_unlock(&cm_wo.mu);
}

/* The release's drain: everything stored so far is on its way, in order. */
static void cm_wo_flush(void)
{
    pthread_mutex_lock(&cm_wo.mu);
    cm_wo_pass(true);
    pthread_mutex_unlock(&cm_wo.mu);
}

/* Fetched line bytes (software line fills): into our copy and, for a tracked page, its twin,
 * under the pass's lock: the thread must never see them as our stores. */
static void cm_wo_install(uintptr_t addr, const void *data, size_t len, uintptr_t keep_lo,
                          uintptr_t keep_hi)
{
    uint64_t p = cm_cm_page(addr);

    pthread_mutex_lock(&cm_wo.mu);
    cm_cm_install_copy(addr, data, len, keep_lo, keep_hi);
    if (cm_wo.slot[p] != 0) {
        memcpy((char *)cm_wo_twin(p) + (addr - (uintptr_t)cm_cm_app(p)), data, len);
    }
    pthread_mutex_unlock(&cm_wo.mu);
}

/* No store checks: the program is the plain build. */
static bool cm_wo_armed(uint64_t p)
{
    (void)p;
    return false;
}

/* ---- set-up ------------------------------------------------------------------------------ */

static cm_status_t cm_wo_init(const cm_protocol_ctx_t *ctx)
{
    const cm_config_t *cfg = ctx->config;
    size_t bytes = cm_cm.npages << cm_cm.shift;

    memset(&cm_wo, 0, sizeof(cm_wo));
    cm_wo.merge    = (cm_variants[cm_cm.variant].merge == CM_MERGE_BUFFER);
    cm_wo.pause_ns = cfg->offload_pause;
    cm_wo.twins = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cm_wo.active     = calloc(cm_cm.npages, sizeof(*cm_wo.active));
    cm_wo.changed    = calloc(cm_cm.npages, sizeof(*cm_wo.changed));
    cm_wo.slot       = calloc(cm_cm.npages, sizeof(*cm_wo.slot));
    cm_wo.home       = calloc(cm_cm.npages, sizeof(*cm_wo.home));
    cm_wo.mb_entries = calloc(cfg->merge_lines ? cfg->merge_lines : 1, sizeof(cm_merge_entry_t));
    if (cm_wo.twins == MAP_FAILED || cm_wo.active == NULL || cm_wo.changed == NULL ||
        cm_wo.slot == NULL || cm_wo.home == NULL ||
        cm_wo.mb_entries == NULL) {
        cm_error("offload: out of memory for twins of %zu bytes", bytes);
        return CM_ERR_NO_MEMORY;
    }
    for (int pe = 0; pe < cm_cm.nprocs; pe++) {
        if (pe != cm_cm.me && cm_cm.home_delta[pe] == 0 &&
            cfg->progress_thread == CM_PROGRESS_OFF) {
            /* Puts from a second thread need the worker made for several (the progress
             * thread's setting decides that); said once, by rank 0. */
            if (cm_cm.me == 0) {
                cm_error("CM_VARIANT=%s forwards writes from an offload thread, which puts to "
                         "homes not mapped here; CM_PROGRESS_THREAD=off makes the transport "
                         "single-threaded: use auto or on", cm_variants[cm_cm.variant].name);
            }
            return CM_ERR_INVALID;
        }
    }
    cm_merge_init(&cm_wo.mb, cm_wo.mb_entries, (unsigned)cfg->merge_lines, cm_wo_forward, NULL);
    pthread_mutex_init(&cm_wo.mu, NULL);
    if (cm_cm.nprocs > 1) {
        int rc = pthread_create(&cm_wo.thread, NULL, cm_wo_main, NULL);
        if (rc != 0) {
            cm_error("offload: cannot start the offload thread: %s", strerror(rc));
            return CM_ERR_NO_MEMORY;
        }
        cm_wo.running = true;
    }
    return CM_OK;
}

static void cm_wo_fini(void)
{
    if (cm_wo.running) {
        cm_wo.stop = true;
        pthread_join(cm_wo.thread, NULL);
        cm_wo.running = false;
    }
    pthread_mutex_destroy(&cm_wo.mu);
    if (cm_wo.twins != NULL && cm_wo.twins != MAP_FAILED) {
        munmap(cm_wo.twins, cm_cm.npages << cm_cm.shift);
    }
    free(cm_wo.active);
    free(cm_wo.changed);
    free(cm_wo.slot);
    free(cm_wo.home);
    free(cm_wo.mb_entries);
}

static void cm_wo_stats(cm_stats_t *s)
{
    pthread_mutex_lock(&cm_wo.mu);
    s->merge_flushes  = cm_wo.mb.line_flushes;
    s->offload_cpu_ns = __atomic_load_n(&cm_wo.cpu_ns, __ATOMIC_RELAXED) - cm_wo.cpu_base;
    s->offload_passes = cm_wo.passes;
    s->forwarded_puts = cm_wo.forwarded;
    s->doubled_stores = cm_wo.words; /* the stores the interface snooped: words found changed */
    pthread_mutex_unlock(&cm_wo.mu);
}

static void cm_wo_stats_reset(void)
{
    pthread_mutex_lock(&cm_wo.mu);
    cm_wo.mb.line_flushes = 0;
    cm_wo.cpu_base = __atomic_load_n(&cm_wo.cpu_ns, __ATOMIC_RELAXED);
    cm_wo.passes   = 0;
    cm_wo.forwarded = cm_wo.words = 0;
    pthread_mutex_unlock(&cm_wo.mu);
}

const cm_write_ops_t cm_write_offload_ops = {
    .name        = "offload",
    .init        = cm_wo_init,
    .fini        = cm_wo_fini,
    .joining     = cm_wo_joining,
    .write_fault = cm_wo_write_fault,
    .armed       = cm_wo_armed,
    .store       = NULL,
    .flush       = cm_wo_flush,
    .settle      = cm_wo_settle,
    .dropped     = cm_wo_dropped,
    .reset       = cm_wo_reset,
    .stats       = cm_wo_stats,
    .install     = cm_wo_install,
    .faults_on_write = true,
    .stats_reset = cm_wo_stats_reset,
};
