/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Refetch at acquire: the mechanism and its argument are in cm_refetch.h. Per page one byte of
 * state and the acquire at which it last left (reserved over the region: a process pays for
 * the pages it touches); the pages this acquire holds and their entry snapshots in two arrays,
 * reused by every acquire.
 *
 * A held page invalidated unused is refetched once more before it leaves: a page read in every
 * other interval (between two barriers that only a self-notice separates) is otherwise refetched,
 * left, and joined and copied again, one round trip after another, every second interval.
 *
 * CM_REFETCH=auto learns whether refetching pays, from the program's own accesses: a held page
 * used before the next invalidation is a refetch that saved a join and a fault's round trip; one
 * that leaves after two refetches unused cost two gets for nothing; while it holds nothing, a
 * page that left and faults again in the very next interval is a refetch missed. One score per process, saturating, moved by each; pages are
 * held while it is positive. Programs that reuse what they read (sor's boundary rows, fft's
 * transposed blocks) keep it high; those that read a page once (gauss's pivot rows) drive it
 * down, and then run as the paper's protocol, still counting what it misses.
 */
#include "config.h"
#include "src/protocols/cashmere/cm_refetch.h"
#include "src/protocols/cashmere/cm_cm_int.h"
#include "util/cm_mem.h"

#include <assert.h>
#include <stdlib.h>

/* A page's state, and whether its last refetch went unused (a second one unused: it leaves). */
enum { CM_RF_NONE = 0, CM_RF_PENDING = 1, CM_RF_HELD = 2, CM_RF_STATE = 3, CM_RF_MISSED = 4,
       CM_RF_PREFETCHED = 8 /* held by a miss's prefetch (cm_prefetch.c), not by an acquire */ };

#define CM_RF_SCORE_MAX 16

static struct {
    bool     on;       /* refetch at acquire */
    bool     adaptive; /* CM_REFETCH=auto: hold while score > 0 */
    int      score;
    uint32_t epoch;    /* acquires so far (+1: 0 means never) */
    uint8_t  *state;   /* per page */
    uint32_t *left;    /* per page: the epoch in which it last left at an invalidation */
    uint32_t *list;  /* pages held by the acquire under way */
    uint64_t *words; /* their directory entries, as read with their data */
    uint64_t n;
} cm_rf;

cm_status_t cm_refetch_init(bool on, bool adaptive, bool prefetch)
{
    memset(&cm_rf, 0, sizeof(cm_rf));
    if (!on && !prefetch) {
        return CM_OK;
    }
    cm_rf.adaptive = adaptive;
    cm_rf.score    = CM_RF_SCORE_MAX;
    cm_rf.epoch    = 1;
    cm_rf.state = cm_mem_reserve(cm_cm.npages);
    cm_rf.left  = cm_mem_reserve(cm_cm.npages * sizeof(*cm_rf.left));
    cm_rf.list  = cm_mem_reserve(cm_cm.npages * sizeof(*cm_rf.list));
    cm_rf.words = cm_mem_reserve(cm_cm.npages * sizeof(*cm_rf.words));
    if (cm_rf.state == NULL || cm_rf.left == NULL || cm_rf.list == NULL || cm_rf.words == NULL) {
        cm_error("cashmere: out of memory for the refetch lists of %" PRIu64 " pages",
                 cm_cm.npages);
        cm_refetch_fini();
        return CM_ERR_NO_MEMORY;
    }
    cm_rf.on = on;
    return CM_OK;
}

bool cm_refetch_held_on(void)
{
    return cm_rf.on;
}

void cm_refetch_fini(void)
{
    if (cm_rf.state != NULL) {
        cm_mem_release(cm_rf.state, cm_cm.npages);
    }
    if (cm_rf.left != NULL) {
        cm_mem_release(cm_rf.left, cm_cm.npages * sizeof(*cm_rf.left));
    }
    if (cm_rf.list != NULL) {
        cm_mem_release(cm_rf.list, cm_cm.npages * sizeof(*cm_rf.list));
    }
    if (cm_rf.words != NULL) {
        cm_mem_release(cm_rf.words, cm_cm.npages * sizeof(*cm_rf.words));
    }
    memset(&cm_rf, 0, sizeof(cm_rf));
}

void cm_refetch_reset(void)
{
    if (cm_rf.state != NULL) {
        cm_mem_zero(cm_rf.state, cm_cm.npages);
        cm_mem_zero(cm_rf.left, cm_cm.npages * sizeof(*cm_rf.left));
        cm_rf.n = 0;
    }
}

static void cm_rf_learn(int delta)
{
    cm_rf.score += delta;
    if (cm_rf.score > CM_RF_SCORE_MAX) {
        cm_rf.score = CM_RF_SCORE_MAX;
    } else if (cm_rf.score < -CM_RF_SCORE_MAX) {
        cm_rf.score = -CM_RF_SCORE_MAX;
    }
}

void cm_refetch_left(uint64_t p)
{
    /* Only while auto holds nothing: a page that leaves after two refetches unused and is
     * needed right after is a program with a longer period, not a refetch missed. */
    if (cm_rf.adaptive && cm_rf.score <= 0) {
        cm_rf.left[p] = cm_rf.epoch + 1; /* the interval this acquire begins */
    }
}

void cm_refetch_fault(uint64_t p, bool held)
{
    if (cm_rf.state == NULL) {
        return;
    }
    if (held && (cm_rf.state[p] & CM_RF_PREFETCHED)) {
        cm_rf.state[p] = CM_RF_NONE;
        if (cm_cm.pte[p].home != cm_cm.me) {
            cm_cm.st.prefetch_used++; /* of pages_prefetched */
        }
    } else if (!cm_rf.on) {
        cm_rf.state[p] = CM_RF_NONE;
    } else if (held) {
        cm_rf.state[p] = CM_RF_NONE;
        if (cm_cm.pte[p].home != cm_cm.me) {
            cm_cm.st.refetch_used++; /* of pages_refetched: those copied from elsewhere */
        }
        cm_rf_learn(+1);
    } else if (cm_rf.left[p] == cm_rf.epoch) {
        cm_rf_learn(+1); /* left at this interval's acquire, and needed in it */
    }
}

bool cm_refetch_unused(uint64_t p)
{
    if (cm_rf.state[p] & CM_RF_PREFETCHED) {
        cm_rf.state[p] = CM_RF_NONE; /* brought by a neighbour's miss, never used: it leaves */
        return true;
    }
    if (!(cm_rf.state[p] & CM_RF_MISSED) && !(cm_rf.adaptive && cm_rf.score <= 0)) {
        cm_rf.state[p]        = CM_RF_PENDING | CM_RF_MISSED;
        cm_rf.list[cm_rf.n++] = (uint32_t)p;
        return false;
    }
    cm_rf.state[p] = CM_RF_NONE;
    cm_rf_learn(-1);
    return true;
}

bool cm_refetch_hold(uint64_t p)
{
    if (!cm_rf.on || (cm_rf.adaptive && cm_rf.score <= 0)) {
        return false;
    }
    cm_rf.state[p]      = CM_RF_PENDING;
    cm_rf.list[cm_rf.n++] = (uint32_t)p;
    return true;
}

bool cm_refetch_held(uint64_t p)
{
    return cm_rf.state != NULL && (cm_rf.state[p] & CM_RF_STATE) == CM_RF_HELD;
}

void cm_refetch_prefetched(uint64_t p)
{
    cm_rf.state[p] = CM_RF_HELD | CM_RF_PREFETCHED;
}

cm_status_t cm_refetch_complete(void)
{
    const uint64_t bit = 1ull << cm_cm.me;

    if (!cm_rf.on) {
        return CM_OK; /* nothing is held at acquires */
    }
    cm_rf.epoch++; /* a page leaving from now on left in the next interval */
    if (cm_rf.n == 0) {
        return CM_OK;
    }
    /* The entries first, all in flight together; the copies only once they are read
     * (cm_refetch.h: a snapshot read after its copy can miss a writer that left meanwhile). */
    for (uint64_t i = 0; i < cm_rf.n; i++) {
        CM_CHECK(cm_dir_peek_nbi(&cm_cm.dir, cm_rf.list[i], &cm_rf.words[i]));
    }
    CM_CHECK(CM_STATS_IN_PHASE(&cm_cm.st.page_copy_ns, cm_rma_flush_all(cm_cm.rma)));
    for (uint64_t i = 0; i < cm_rf.n; i++) {
        uint64_t p = cm_rf.list[i];
        cm_pte_t *pte = &cm_cm.pte[p];
        cm_dir_entry_t e;
        int home = pte->home;

        cm_dir_peek_entry(&cm_cm.dir, p, cm_rf.words[i], &e);
        assert(e.sharers & bit); /* we never left */
        cm_rf.state[p] = CM_RF_HELD | (cm_rf.state[p] & CM_RF_MISSED);
        if ((e.flags & (CM_DIR_BUSY | CM_DIR_UNSAFE)) ||
            cm_dir_state(e.sharers | bit, e.writers) == CM_PAGE_WEAK) {
            /* Writes to it may come without notices: look again at every acquire. */
            if (!(pte->flags & CM_PTE_SELF)) {
                pte->flags |= CM_PTE_SELF;
                cm_list_push(&cm_cm.selfn, p);
                cm_cm.st.notices_self++;
            }
        }
        if (home != cm_cm.me) {
            /* Into the network view: the application's view has no access meanwhile. */
            CM_CHECK(cm_rma_get_nbi(cm_cm.rma, home, cm_cm_net(p), cm_cm_net(p), cm_cm.ps));
            cm_cm_fetched(p, home, 0);
            cm_cm.st.pages_refetched++;
        }
    }
    cm_rf.n = 0;
    return CM_STATS_IN_PHASE(&cm_cm.st.page_copy_ns, cm_rma_flush_all(cm_cm.rma));
}
