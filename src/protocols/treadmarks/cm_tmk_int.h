/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals of the TreadMarks protocol shared by its files (cm_treadmarks.c describes the
 * protocol and lists them): the state, its types, the message ids, small helpers and what one
 * file calls in another. Shared names carry the project prefix cm_tmk_; a function that one
 * file alone uses stays static there with its tm_ name. Constants keep TM_: the CM_TMK_ names
 * are the protocol's settings (CM_TMK_WRITE_DETECT, CM_TMK_GC_BYTES) and the encodings' bounds.
 */
#ifndef CM_TMK_INT_H
#define CM_TMK_INT_H

#include "cm.h"
#include "rma/cm_rma.h"
#include "src/protocols/cm_meta.h"
#include "util/cm_stats.h"
#include "src/protocols/treadmarks/cm_tmk_diff.h"
#include "src/protocols/treadmarks/cm_tmk_interval.h"
#include "src/protocols/treadmarks/cm_tmk_wire.h"

#include "util/cm_error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { TM_UNMAPPED = 0, TM_INVALID, TM_READ_ONLY, TM_READ_WRITE };


/* A write notice known for a page: interval and index of the notice in it. */
typedef struct {
    cm_tmk_interval_t *iv;
    uint32_t          k;
    uint32_t          applied; /* its diff is in our copy (always, for our own) */
} cm_tmk_ref_t;

typedef struct {
    uint8_t      state;
    uint8_t      in_dirty;  /* written in the open interval */
    uint8_t      in_rw;     /* scan: on the list of writable pages */
    uint8_t      clean;     /* scan: interval ends in a row that found it unchanged */
    uint8_t      touched;   /* on the list of pages ever faulted or noticed here */
    uint8_t      prefetch;  /* TM_PF_*: its diffs fetched at the acquire (cm_tmk_prefetch.c) */
    void         *twin;     /* own writes since then are not in a diff yet */
    void         *snap;     /* scan: the contents at the start of the open interval, if writable */
    cm_tmk_ref_t *refs;     /* in the order they became known here */
    uint32_t     nrefs, cap;
    uint32_t     unapplied; /* refs before this one are all applied */
    uint32_t     undiffed;  /* own refs before this one all have their diffs */
} cm_tmk_page_t;
_Static_assert(sizeof(cm_tmk_page_t) + 2 * sizeof(uint32_t) <= CM_META_PAGE_PRIVATE,
               "CM_META_PAGE_PRIVATE undercounts TreadMarks' page table (cm_check)");

typedef struct {
    bool     local;    /* the token is here */
    bool     held;
    bool     has_next; /* a request waits for our release */
    uint32_t next;
    uint32_t *next_vt;
    uint32_t last_req; /* at the manager: where to forward the next request */
} cm_tmk_lock_t;

/* A message that arrived while the protocol mutex was taken. */
typedef struct cm_tmk_msg {
    struct cm_tmk_msg *next;
    int               type, src;
    size_t            len;
    uint64_t          t_arrived; /* CM_TRACE: when it arrived (0: not traced) */
    uint32_t          seq;       /* CM_TRACE: its number among the messages from src */
    char              data[];
} cm_tmk_msg_t;

/* A message kept for the application thread to process. */
typedef struct {
    void   *data;
    size_t len;
    void   *mem;  /* what to free: a copy, or the queued message itself */
} cm_tmk_buf_t;

/* The protocol's state (cm_treadmarks.c defines it). */
typedef struct {
    int             me, np;
    cm_rma_t        *rma;
    char            *app, *net;
    size_t          ps;
    unsigned        shift;
    uint64_t        npages;
    pthread_t       app_thread;
    pthread_mutex_t mu;
    pthread_mutex_t qmu;
    cm_tmk_msg_t    *qhead, *qtail;
    /* CM_TRACE: messages posted to and received from each rank, numbered from 1 in each
     * direction, so that cm_trace pairs the k-th sent with the k-th served (UCX delivers the
     * active messages of one endpoint in order). */
    _Atomic uint32_t tr_sent[CM_TMK_MAX_PROCS];
    uint32_t        tr_recv[CM_TMK_MAX_PROCS];

    cm_tmk_store_t  store;
    cm_tmk_page_t   *pages;     /* a record per page of the region, committed where touched */
    uint32_t        *touched;   /* pages ever faulted or noticed here: what GC and fini visit */
    uint64_t        ntouched;
    uint32_t        *dirty;
    uint32_t        ndirty;
    bool            scan;       /* CM_TMK_WRITE_DETECT=scan */
    uint32_t        *rw;        /* scan: pages left writable at an interval's end */
    uint32_t        nrw;
    cm_tmk_lock_t   *locks;
    unsigned        nlocks;
    unsigned char   *diffbuf;

    atomic_int      pending;    /* replies (pages, diffs) the application thread waits for */
    int             asked;      /* the rank they come from, -1 for several (stuck reports) */
    uint32_t        *missing;   /* (proc, index) pairs a diff reply did not have */
    uint32_t        nmissing;
    cm_tmk_buf_t    grant;
    atomic_int      granted;
    uint32_t        bar_seq;
    uint32_t        *bar_vt;    /* vector time at the last departure: the manager knows that much */
    cm_tmk_buf_t    *arrivals;  /* manager: per worker */
    atomic_int      narrived;
    cm_tmk_buf_t    depart;
    atomic_int      departed;
    atomic_int      gc_done;
    atomic_int      gc_go;
    size_t          gc_bytes;

    int             pf_mode;    /* CM_REFETCH (cm_tmk_prefetch.c) */
    int             pf_score;
    uint32_t        pf_epoch;   /* acquires so far, + 1 */
    uint32_t        *pf_list;   /* pages queued by the acquire under way */
    uint32_t        npf;
    uint32_t        *pf_left;   /* per page: the interval after the acquire that invalidated it */
    unsigned        pf_block;   /* CM_PREFETCH: a miss brings its block of this many pages */

    cm_stats_t      st;
    uint64_t        t_start;
    cm_rma_stats_t  rma_base;      /* the one-sided layer's counters at the last reset */
    char            describe[512];
    bool            ready;
    bool            closed;        /* tm_fini began freeing: no message may come now */
} cm_tmk_state_t;

extern cm_tmk_state_t cm_tmk;

/* ---- small helpers ------------------------------------------------------------------------ */

static inline char *cm_tmk_net(uint64_t p)
{
    return cm_tmk.net + (p << cm_tmk.shift);
}

static inline char *cm_tmk_app(uint64_t p)
{
    return cm_tmk.app + (p << cm_tmk.shift);
}

/* A request whose reply the application thread will wait for (cm_tmk.pending): counted, and
 * its rank noted for a stuck-wait report (-1 once the replies come from several). */
static inline void cm_tmk_asked(int pe)
{
    int before = atomic_fetch_add(&cm_tmk.pending, 1);

    cm_tmk.asked = (before == 0 || cm_tmk.asked == pe) ? pe : -1;
}

static inline int cm_tmk_manager(uint64_t p)
{
    return (int)(p % (uint64_t)cm_tmk.np);
}

/* Page p's record, about to change: the first time, p joins the pages GC and fini visit (a
 * loop over every page of the region committed all of the page table). */
static inline cm_tmk_page_t *cm_tmk_touch(uint64_t p)
{
    cm_tmk_page_t *pg = &cm_tmk.pages[p];

    if (!pg->touched) {
        pg->touched = 1;
        cm_tmk.touched[cm_tmk.ntouched++] = (uint32_t)p;
    }
    return pg;
}

/* p was written in the open interval. */
static inline void cm_tmk_mark_dirty(uint64_t p)
{
    if (!cm_tmk.pages[p].in_dirty) {
        cm_tmk.pages[p].in_dirty = 1;
        cm_tmk.dirty[cm_tmk.ndirty++] = (uint32_t)p;
    }
}

/* The header of a kept interval-carrying message (cm_tmk_send_intervals). */
static inline const uint32_t *cm_tmk_ivmsg_header(const cm_tmk_buf_t *b)
{
    return b->data;
}

/* ---- cm_tmk_msg.c: messages, waiting, request dispatch ------------------------------------ */

cm_status_t cm_tmk_post(int pe, int type, const void *data, size_t len);
void cm_tmk_drop(cm_tmk_buf_t *b);
cm_status_t cm_tmk_send_intervals(int pe, int type, uint32_t id, uint32_t flag,
                                  const uint32_t *vt_a);
cm_status_t cm_tmk_take_intervals(const cm_tmk_buf_t *b);
/* The protocol mutex; letting it go serves what was queued meanwhile. */
void cm_tmk_mu_lock(void);
void cm_tmk_mu_unlock(void);
/* The application thread, holding the mutex: lets it go while it waits. */
/* why: what the wait is for, in a stuck-wait report (rma/cm_rma.h). */
void cm_tmk_wait_ge(atomic_int *v, int target, const cm_rma_why_t *why);
void cm_tmk_wait_zero(atomic_int *v, const cm_rma_why_t *why);
/* The active-message handler of every type (arg: the type). */
void cm_tmk_am_recv(void *arg, int src, const void *data, size_t len);

/* ---- cm_tmk_pages.c: intervals, diffs, invalidation, access misses -------------------------- */

cm_status_t cm_tmk_protect(uint64_t p, int prot);
cm_status_t cm_tmk_new_interval(void);
cm_status_t cm_tmk_incorporate(const char *buf, size_t len, uint32_t count);
cm_status_t cm_tmk_validate(uint64_t p);
/* Page p's requests only (their replies count cm_tmk.pending down), then the wait for them. */
cm_status_t cm_tmk_validate_ask(uint64_t p);
void cm_tmk_validate_wait(void);
cm_status_t cm_tmk_fault(void *addr, bool write);

/* ---- cm_tmk_prefetch.c: diffs fetched at the acquire (CM_REFETCH) ----------------------------- */

enum { TM_PF_NONE = 0, TM_PF_QUEUED = 1, TM_PF_DONE = 2, TM_PF_MISS = 3 /* by a miss */ };
cm_status_t cm_tmk_pf_init(int mode);
void cm_tmk_pf_fini(void);
/* Page p is invalidated by a notice (used: it was valid, so accessed since its validation). */
void cm_tmk_pf_invalidated(uint64_t p, bool used);
/* Page p faults. */
void cm_tmk_pf_fault(uint64_t p);
/* The acquire has taken in its intervals: the queued pages' diffs, in one batch. */
cm_status_t cm_tmk_pf_acquired(void);
/* Page p (invalid) misses: with CM_PREFETCH, the diffs of its block's other invalid pages are
 * asked for with its own, one wait for all, and applied; those pages stay protected. */
cm_status_t cm_tmk_pf_miss(uint64_t p);
/* Request and reply handlers, given a message whose form cm_tmk_wire_check accepted. */
cm_status_t cm_tmk_serve_page(int src, const uint32_t *d);
cm_status_t cm_tmk_serve_diffs(int src, const uint32_t *d);
cm_status_t cm_tmk_take_diffs(const uint32_t *d);

/* ---- cm_tmk_scan.c: write detection under CM_TMK_WRITE_DETECT=scan -------------------------- */

cm_status_t cm_tmk_scan_opened(uint64_t p);
void cm_tmk_scan_closing(uint64_t p);
cm_status_t cm_tmk_scan(void);

/* ---- cm_tmk_locks.c ------------------------------------------------------------------------- */

cm_status_t cm_tmk_lock_request_here(unsigned l, uint32_t a, const uint32_t *vt_a);
cm_status_t cm_tmk_lock_manage(unsigned l, uint32_t a, const uint32_t *vt_a, const void *msg,
                               size_t len);
cm_status_t cm_tmk_lock_acquire(unsigned id);
cm_status_t cm_tmk_lock_release(unsigned id);

/* ---- cm_tmk_barrier.c: barriers and garbage collection -------------------------------------- */

cm_status_t cm_tmk_barrier(void);

#endif
