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

typedef struct {
    cm_write_t base; /* first: the instance the ops get as self */
    cm_merge_t       *mb;         /* M: the merge buffer; NULL: N, each run forwarded */
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
} cm_wo_t;

static inline uint64_t *cm_wo_twin(cm_wo_t *wo, uint64_t p)
{
    return (uint64_t *)(wo->twins + (p << cm_cm.shift));
}

/* ---- forwarding (under mu) ------------------------------------------------------------ */

/* len bytes at app address addr, within one tracked page, to the page's home: the twin's. */
static void cm_wo_forward(uintptr_t addr, size_t len, void *arg)
{
    cm_wo_t *wo = arg;
    uint64_t p = cm_cm_page(addr);
    const char *src = (const char *)cm_wo_twin(wo, p) + (addr - (uintptr_t)cm_cm_app(p));

    if (cm_cm_write_through_from(wo->home[p], addr, src, len, false)) {
        wo->direct = true;
    } else {
        wo->sent = true;
    }
    wo->forwarded++;
}

/* Compares page p with its twin; forwards what changed (and takes it into the twin), and says
 * whether anything did. The application may be storing meanwhile: a word read here is what is
 * sent, and a later store shows as a change in the next pass. */
static bool cm_wo_scan(cm_wo_t *wo, uint64_t p)
{
    uint64_t *cur = (uint64_t *)(void *)cm_cm_net(p), *tw = cm_wo_twin(wo, p);
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
        wo->words++;
        /* Only the bytes that changed: the rest of the word may be another writer's, stale
         * here (false sharing within a word), and must not overwrite the home's. */
        while (x != 0) {
            unsigned b = (unsigned)__builtin_ctzll(x) / 8, e = b;
            while (e < 8 && ((x >> (8 * e)) & 0xff) != 0) {
                e++;
            }
            x &= (e < 8) ? ~((1ull << (8 * e)) - 1) : 0;
            if (wo->mb != NULL) {
                wo->mb->ops->record(wo->mb, word + b, e - b);
            } else {
                cm_wo_forward(word + b, e - b, wo);
            }
        }
    }
    return changed;
}

/* Orders what this pass forwarded before anything forwarded later (and, for a release,
 * before what publishes it). */
static void cm_wo_fence(cm_wo_t *wo)
{
    if (wo->direct) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        wo->direct = false;
    }
    if (wo->sent) {
        if (cm_rma_fence(cm_cm.rma) != CM_OK) {
            cm_fatal(1, "offload: fence failed");
        }
        wo->sent = false;
    }
}

/* Tracked page k leaves the tracked set (its twin's memory given back). */
static void cm_wo_untrack(cm_wo_t *wo, uint32_t k)
{
    uint64_t p = wo->active[k];
    uint32_t last = (uint32_t)--wo->nactive;

    wo->active[k]  = wo->active[last];
    wo->changed[k] = wo->changed[last];
    wo->slot[wo->active[k]] = k + 1;
    wo->slot[p] = 0;
    madvise(cm_wo_twin(wo, p), cm_cm.ps, MADV_DONTNEED);
}

static void cm_wo_pass(cm_wo_t *wo, bool drain)
{
    for (uint64_t k = 0; k < wo->nactive; k++) {
        if (cm_wo_scan(wo, wo->active[k])) {
            wo->changed[k] = 1;
        }
    }
    if (drain && wo->mb != NULL) {
        wo->mb->ops->flush(wo->mb);
    }
    cm_wo_fence(wo);
    wo->passes++;
    if (!drain) {
        return;
    }
    /* The application thread drains (it is not storing): pages quiet since the last drain are
     * protected again and no longer scanned. Backwards: the page moved into k is done. */
    for (uint64_t k = wo->nactive; k-- > 0;) {
        if (wo->changed[k]) {
            wo->changed[k] = 0;
            continue;
        }
        if (cm_cm_protect(wo->active[k], PROT_READ) != CM_OK) {
            cm_fatal(1, "offload: cannot write-protect a quiet page");
        }
        cm_wo_untrack(wo, (uint32_t)k);
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
    cm_wo_t *wo = arg;
    struct timespec pause = {.tv_sec  = (time_t)(wo->pause_ns / 1000000000ull),
                             .tv_nsec = (long)(wo->pause_ns % 1000000000ull)};

    /* The default timer slack (50 us) would stretch every pause past what was asked. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    while (!wo->stop) {
        pthread_mutex_lock(&wo->mu);
        if (wo->nactive > 0) {
            cm_wo_pass(wo, false);
        }
        __atomic_store_n(&wo->cpu_ns, cm_wo_thread_cpu(), __ATOMIC_RELAXED);
        pthread_mutex_unlock(&wo->mu);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

/* ---- tracking pages -------------------------------------------------------------------- */

/* Page p, homed elsewhere, takes its first store: its twin is its contents now (read-only). */
static void cm_wo_track(cm_wo_t *wo, uint64_t p, int home)
{
    pthread_mutex_lock(&wo->mu);
    if (wo->slot[p] == 0) {
        memcpy(cm_wo_twin(wo, p), cm_cm_net(p), cm_cm.ps);
        wo->home[p] = (uint16_t)home;
        wo->changed[wo->nactive] = 1; /* its first store is under way */
        wo->active[wo->nactive++] = (uint32_t)p;
        wo->slot[p] = (uint32_t)wo->nactive;
    }
    pthread_mutex_unlock(&wo->mu);
}

static int cm_wo_joining(cm_write_t *self, uint64_t p, int home, bool write)
{
    cm_wo_t *wo = (cm_wo_t *)self;

    if (!write) {
        return PROT_READ;
    }
    if (home != cm_cm.me) {
        cm_wo_track(wo, p, home);
    }
    cm_cm_mark_dirty(p);
    return PROT_READ | PROT_WRITE;
}

static cm_status_t cm_wo_write_fault(cm_write_t *self, uint64_t p)
{
    cm_wo_t *wo = (cm_wo_t *)self;

    if (cm_cm.pte[p].home != cm_cm.me) {
        cm_wo_track(wo, p, cm_cm.pte[p].home);
    }
    cm_cm_mark_dirty(p);
    return cm_cm_protect(p, PROT_READ | PROT_WRITE);
}

/* Before page p is dropped or its transition made: its last changes go now. */
static cm_status_t cm_wo_settle(cm_write_t *self, uint64_t p)
{
    cm_wo_t *wo = (cm_wo_t *)self;

    pthread_mutex_lock(&wo->mu);
    if (wo->slot[p] != 0) {
        if (cm_wo_scan(wo, p)) {
            wo->changed[wo->slot[p] - 1] = 1;
        }
        if (wo->mb != NULL) {
            wo->mb->ops->flush(wo->mb);
        }
        cm_wo_fence(wo);
    }
    pthread_mutex_unlock(&wo->mu);
    return CM_OK;
}

/* Page p left: no longer tracked (its twin's memory is given back). */
static void cm_wo_dropped(cm_write_t *self, uint64_t p)
{
    cm_wo_t *wo = (cm_wo_t *)self;

    uint32_t k;

    pthread_mutex_lock(&wo->mu);
    k = wo->slot[p];
    if (k != 0) {
        cm_wo_untrack(wo, k - 1);
    }
    pthread_mutex_unlock(&wo->mu);
}

/* The end of initialization drops every page: nothing is tracked any more. */
static void cm_wo_reset(cm_write_t *self)
{
    cm_wo_t *wo = (cm_wo_t *)self;

    pthread_mutex_lock(&wo->mu);
    for (uint64_t k = 0; k < wo->nactive; k++) {
        wo->slot[wo->active[k]] = 0;
    }
    wo->nactive = 0;
    madvise(wo->twins, cm_cm.npages << cm_cm.shift, MADV_DONTNEED);
    pthread_mutex_unlock(&wo->mu);
}

/* The release's drain: everything stored so far is on its way, in order. */
static void cm_wo_flush(cm_write_t *self)
{
    cm_wo_t *wo = (cm_wo_t *)self;

    pthread_mutex_lock(&wo->mu);
    cm_wo_pass(wo, true);
    pthread_mutex_unlock(&wo->mu);
}

/* Fetched line bytes (software line fills): into our copy and, for a tracked page, its twin,
 * under the pass's lock: the thread must never see them as our stores. */
static void cm_wo_install(cm_write_t *self, uintptr_t addr, const void *data, size_t len,
                          uintptr_t keep_lo, uintptr_t keep_hi)
{
    cm_wo_t *wo = (cm_wo_t *)self;

    uint64_t p = cm_cm_page(addr);

    pthread_mutex_lock(&wo->mu);
    cm_cm_install_copy(addr, data, len, keep_lo, keep_hi);
    if (wo->slot[p] != 0) {
        memcpy((char *)cm_wo_twin(wo, p) + (addr - (uintptr_t)cm_cm_app(p)), data, len);
    }
    pthread_mutex_unlock(&wo->mu);
}

/* No store checks: the program is the plain build. */
static bool cm_wo_armed(cm_write_t *self, uint64_t p)
{
    (void)self;
    (void)p;
    return false;
}

/* ---- set-up ------------------------------------------------------------------------------ */

static cm_status_t cm_wo_init(const cm_protocol_ctx_t *ctx, const cm_merge_ops_t *merge,
                              cm_write_t **self)
{
    const cm_config_t *cfg = ctx->config;
    size_t bytes = cm_cm.npages << cm_cm.shift;
    cm_wo_t *wo = calloc(1, sizeof(*wo));

    if (wo == NULL) {
        cm_error("offload: out of memory");
        return CM_ERR_NO_MEMORY;
    }
    *self = &wo->base;
    wo->pause_ns = cfg->offload_pause;
    wo->twins = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    wo->active     = calloc(cm_cm.npages, sizeof(*wo->active));
    wo->changed    = calloc(cm_cm.npages, sizeof(*wo->changed));
    wo->slot       = calloc(cm_cm.npages, sizeof(*wo->slot));
    wo->home       = calloc(cm_cm.npages, sizeof(*wo->home));
    if (wo->twins == MAP_FAILED || wo->active == NULL || wo->changed == NULL ||
        wo->slot == NULL || wo->home == NULL) {
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
                         "single-threaded: use auto or on", cm_cm.vname);
            }
            return CM_ERR_INVALID;
        }
    }
    if (merge != NULL) {
        CM_CHECK(merge->init((unsigned)cfg->merge_lines, cm_wo_forward, wo, &wo->mb));
    }
    pthread_mutex_init(&wo->mu, NULL);
    if (cm_cm.nprocs > 1) {
        int rc = pthread_create(&wo->thread, NULL, cm_wo_main, wo);
        if (rc != 0) {
            cm_error("offload: cannot start the offload thread: %s", strerror(rc));
            return CM_ERR_NO_MEMORY;
        }
        wo->running = true;
    }
    return CM_OK;
}

static void cm_wo_fini(cm_write_t *self)
{
    cm_wo_t *wo = (cm_wo_t *)self;

    if (wo->running) {
        wo->stop = true;
        pthread_join(wo->thread, NULL);
        wo->running = false;
    }
    pthread_mutex_destroy(&wo->mu);
    if (wo->twins != NULL && wo->twins != MAP_FAILED) {
        munmap(wo->twins, cm_cm.npages << cm_cm.shift);
    }
    free(wo->active);
    free(wo->changed);
    free(wo->slot);
    free(wo->home);
    if (wo->mb != NULL) {
        wo->mb->ops->fini(wo->mb);
    }
    free(wo);
}

static void cm_wo_stats(cm_write_t *self, cm_stats_t *s)
{
    cm_wo_t *wo = (cm_wo_t *)self;

    pthread_mutex_lock(&wo->mu);
    s->merge_flushes  = (wo->mb != NULL) ? wo->mb->line_flushes : 0;
    s->offload_cpu_ns = __atomic_load_n(&wo->cpu_ns, __ATOMIC_RELAXED) - wo->cpu_base;
    s->offload_passes = wo->passes;
    s->forwarded_puts = wo->forwarded;
    s->doubled_stores = wo->words; /* the stores the interface snooped: words found changed */
    pthread_mutex_unlock(&wo->mu);
}

static void cm_wo_stats_reset(cm_write_t *self)
{
    cm_wo_t *wo = (cm_wo_t *)self;

    pthread_mutex_lock(&wo->mu);
    if (wo->mb != NULL) {
        wo->mb->line_flushes = 0;
    }
    wo->cpu_base = __atomic_load_n(&wo->cpu_ns, __ATOMIC_RELAXED);
    wo->passes   = 0;
    wo->forwarded = wo->words = 0;
    pthread_mutex_unlock(&wo->mu);
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
