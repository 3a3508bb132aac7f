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
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/util/cm_log.h"
#include "src/cm_protocol.h"
#include "src/cm_runtime.h"
#include "src/util/cm_time.h"
#include "treadmarks/cm_tmk_diff.h"
#include "treadmarks/cm_tmk_interval.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define TM_CHECK(expr) \
    do { \
        cm_status_t tm_st_ = (expr); \
        if (tm_st_ != CM_OK) { \
            return tm_st_; \
        } \
    } while (0)

enum { TM_UNMAPPED = 0, TM_INVALID, TM_READ_ONLY, TM_READ_WRITE };

/* Message types (active message ids). */
enum {
    TM_LOCK_REQ = 1, /* acquirer -> manager */
    TM_LOCK_FWD,     /* manager -> last requester */
    TM_LOCK_GRANT,   /* token holder -> acquirer, with the send_set */
    TM_BAR_ARRIVE,   /* worker -> barrier manager, with intervals */
    TM_BAR_DEPART,   /* barrier manager -> worker, with what it lacks */
    TM_DIFF_REQ,
    TM_DIFF_REPLY,
    TM_PAGE_REQ,
    TM_PAGE_REPLY,
    TM_GC_DONE,      /* worker -> manager: every copy here is valid */
    TM_GC_GO,        /* manager -> worker: everyone is; drop the history */
    TM_NTYPES
};

/* A write notice known for a page: interval and index of the notice in it. */
typedef struct {
    cm_tmk_interval_t *iv;
    uint32_t          k;
    uint32_t          applied; /* its diff is in our copy (always, for our own) */
} tm_ref_t;

typedef struct {
    uint8_t  state;
    uint8_t  in_dirty;  /* written in the open interval */
    uint8_t  in_rw;     /* scan: on the list of writable pages */
    uint8_t  clean;     /* scan: interval ends in a row that found it unchanged */
    void     *twin;     /* own writes since then are not in a diff yet */
    void     *snap;     /* scan: the contents at the start of the open interval, if writable */
    tm_ref_t *refs;     /* in the order they became known here */
    uint32_t nrefs, cap;
    uint32_t unapplied; /* refs before this one are all applied */
    uint32_t undiffed;  /* own refs before this one all have their diffs */
} tm_page_t;
_Static_assert(sizeof(tm_page_t) + sizeof(uint32_t) <= CM_META_PAGE_PRIVATE,
               "CM_META_PAGE_PRIVATE undercounts TreadMarks' page table (cm_check)");

typedef struct {
    bool     local;    /* the token is here */
    bool     held;
    bool     has_next; /* a request waits for our release */
    uint32_t next;
    uint32_t *next_vt;
    uint32_t last_req; /* at the manager: where to forward the next request */
} tm_lock_t;

/* A message that arrived while the protocol mutex was taken. */
typedef struct tm_msg {
    struct tm_msg *next;
    int           type, src;
    size_t        len;
    char          data[];
} tm_msg_t;

/* A message kept for the application thread to process. */
typedef struct {
    void   *data;
    size_t len;
    void   *mem;  /* what to free: a copy, or the queued message itself */
} tm_buf_t;

static struct {
    int             me, np;
    cm_rma_t        *rma;
    char            *app, *net;
    size_t          ps;
    unsigned        shift;
    uint64_t        npages;
    pthread_t       app_thread;
    pthread_mutex_t mu;
    pthread_mutex_t qmu;
    tm_msg_t        *qhead, *qtail;

    cm_tmk_store_t  store;
    tm_page_t       *pages;
    uint32_t        *dirty;
    uint32_t        ndirty;
    bool            scan;       /* CM_TMK_WRITE_DETECT=scan */
    uint32_t        *rw;        /* scan: pages left writable at an interval's end */
    uint32_t        nrw;
    tm_lock_t       *locks;
    unsigned        nlocks;
    unsigned char   *diffbuf;

    atomic_int      pending;    /* replies (pages, diffs) the application thread waits for */
    uint32_t        *missing;   /* (proc, index) pairs a diff reply did not have */
    uint32_t        nmissing;
    tm_buf_t        grant;
    atomic_int      granted;
    uint32_t        bar_seq;
    uint32_t        *bar_vt;    /* vector time at the last departure: the manager knows that much */
    tm_buf_t        *arrivals;  /* manager: per worker */
    atomic_int      narrived;
    tm_buf_t        depart;
    atomic_int      departed;
    atomic_int      gc_done;
    atomic_int      gc_go;
    size_t          gc_bytes;

    cm_stats_t      st;
    uint64_t        t_start;
    char            describe[384];
    bool            ready;
} tm;

static inline char *tm_net(uint64_t p)
{
    return tm.net + (p << tm.shift);
}

static inline char *tm_app(uint64_t p)
{
    return tm.app + (p << tm.shift);
}

static inline int tm_manager(uint64_t p)
{
    return (int)(p % (uint64_t)tm.np);
}

static cm_status_t tm_protect(uint64_t p, int prot)
{
    if (mprotect(tm_app(p), tm.ps, prot) != 0) {
        cm_error("mprotect of shared page %" PRIu64 " failed: %s", p, strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

/* ---- messages ---------------------------------------------------------------- */

static cm_status_t tm_post(int pe, int type, const void *data, size_t len)
{
    tm.st.msgs++;
    tm.st.msg_bytes += len;
    switch (type) {
    case TM_LOCK_REQ: tm.st.msgs_lock_req++; break;
    case TM_LOCK_FWD: tm.st.msgs_lock_fwd++; break;
    case TM_LOCK_GRANT: tm.st.msgs_lock_grant++; tm.st.msg_bytes_grant += len; break;
    case TM_BAR_ARRIVE: tm.st.msgs_bar_arrive++; tm.st.msg_bytes_barrier += len; break;
    case TM_BAR_DEPART: tm.st.msgs_bar_depart++; tm.st.msg_bytes_barrier += len; break;
    case TM_DIFF_REQ: tm.st.msgs_diff_req++; break;
    case TM_DIFF_REPLY: tm.st.msgs_diff_reply++; tm.st.msg_bytes_diff += len; break;
    case TM_PAGE_REQ: tm.st.msgs_page_req++; break;
    case TM_PAGE_REPLY: tm.st.msgs_page_reply++; tm.st.msg_bytes_page += len; break;
    default: break;
    }
    return cm_rma_am_post(tm.rma, pe, (unsigned)type, data, len);
}

/* Keeps a message: the queued one itself when there is one (*q then belongs to b), else a copy
 * of the transport's buffer, which is gone once the handler returns. */
static void tm_keep(tm_buf_t *b, const void *data, size_t len, tm_msg_t **q)
{
    if (*q != NULL) {
        b->mem  = *q;
        b->data = (*q)->data;
        *q = NULL;
    } else {
        b->mem = malloc(len ? len : 1);
        if (b->mem == NULL) {
            cm_fatal(1, "treadmarks: out of memory for a %zu-byte message", len);
        }
        memcpy(b->mem, data, len);
        b->data = b->mem;
    }
    b->len = len;
}

static void tm_drop(tm_buf_t *b)
{
    free(b->mem);
    b->mem  = NULL;
    b->data = NULL;
    b->len  = 0;
}

/* ---- pages, intervals, diffs -------------------------------------------------- */

static cm_status_t tm_ref_add(uint64_t p, cm_tmk_interval_t *iv, uint32_t k, bool applied)
{
    tm_page_t *pg = &tm.pages[p];
    if (pg->nrefs == pg->cap) {
        uint32_t cap = pg->cap ? 2 * pg->cap : 4;
        tm_ref_t *n = realloc(pg->refs, cap * sizeof(*n));
        if (n == NULL) {
            return CM_ERR_NO_MEMORY;
        }
        pg->refs = n;
        pg->cap  = cap;
    }
    pg->refs[pg->nrefs++] = (tm_ref_t){iv, k, applied};
    return CM_OK;
}

static int tm_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Index of page p's notice in iv (notices are sorted by page), or -1. */
static int tm_notice_of(const cm_tmk_interval_t *iv, uint32_t p)
{
    uint32_t lo = 0, hi = iv->npages;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (iv->notices[mid].page < p) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return (lo < iv->npages && iv->notices[lo].page == p) ? (int)lo : -1;
}

/* ---- write detection: CM_TMK_WRITE_DETECT=scan ------------------------------------------- */

/* p was written in the open interval. */
static inline void tm_mark_dirty(uint64_t p)
{
    if (!tm.pages[p].in_dirty) {
        tm.pages[p].in_dirty = 1;
        tm.dirty[tm.ndirty++] = (uint32_t)p;
    }
}

/* A writable page was written since its snapshot (the start of the open interval). */
static inline bool tm_scan_changed(uint64_t p)
{
    return memcmp(tm_net(p), tm.pages[p].snap, tm.ps) != 0;
}

/* Scan: p has just been opened for writing by a fault; its snapshot is taken at interval end. */
static cm_status_t tm_scan_opened(uint64_t p)
{
    tm_page_t *pg = &tm.pages[p];

    if (pg->snap == NULL && (pg->snap = malloc(tm.ps)) == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    pg->clean = 0;
    if (!pg->in_rw) {
        pg->in_rw = 1;
        tm.rw[tm.nrw++] = (uint32_t)p;
    }
    return CM_OK;
}

/* Scan: a writable page is protected outside tm_scan (a diff, an invalidation, collection):
 * writes since the interval began must still get this interval's notice. */
static void tm_scan_closing(uint64_t p)
{
    tm_page_t *pg = &tm.pages[p];

    if (tm.scan && pg->state == TM_READ_WRITE && !pg->in_dirty && tm_scan_changed(p)) {
        tm_mark_dirty(p);
    }
}

/*
 * A writable page found unchanged at this many interval ends in a row is protected again. A
 * clean scan is a compare of two identical pages (~0.1 us); a fault and its two mprotects cost
 * ~10 us here, so keeping a page that phases write every other interval writable pays.
 */
#define TM_SCAN_AGE 8

/* Scan: p leaves the writable pages (its clean count restarts when a fault opens it again). */
static cm_status_t tm_scan_protect(uint64_t p)
{
    TM_CHECK(tm_protect(p, PROT_READ));
    tm.pages[p].state = TM_READ_ONLY;
    tm.pages[p].in_rw = 0;
    return CM_OK;
}

/*
 * The end of an interval under scan: every page still writable was written in this interval if
 * it faulted in it or differs from its snapshot; those stay writable with a new snapshot, the
 * others are protected once clean for TM_SCAN_AGE intervals (their next write faults, as under
 * fault detection). A written page costs a compare and a copy: ~0.2 us against ~10 us for a
 * fault and two mprotects. The progress thread may end an interval (a lock granted while the
 * application computes) while the application writes: it protects every writable page first.
 */
static cm_status_t tm_scan(void)
{
    bool app = pthread_equal(pthread_self(), tm.app_thread);
    uint32_t kept = 0;

    for (uint32_t i = 0; i < tm.nrw; i++) {
        uint64_t p = tm.rw[i];
        tm_page_t *pg = &tm.pages[p];
        if (pg->state != TM_READ_WRITE) {
            pg->in_rw = 0; /* protected since (a diff, an invalidation, collection) */
            continue;
        }
        if (!app) {
            TM_CHECK(tm_scan_protect(p));
            if (!pg->in_dirty && tm_scan_changed(p)) {
                tm_mark_dirty(p);
            }
            continue;
        }
        if (pg->in_dirty || tm_scan_changed(p)) {
            tm_mark_dirty(p);
            memcpy(pg->snap, tm_net(p), tm.ps);
            pg->clean = 0;
            tm.rw[kept++] = (uint32_t)p;
            tm.st.scan_written++;
            continue;
        }
        tm.st.scan_clean++;
        if (++pg->clean < TM_SCAN_AGE) {
            tm.rw[kept++] = (uint32_t)p; /* written every few intervals (red-black phases) */
        } else {
            TM_CHECK(tm_scan_protect(p));
            tm.st.scan_protected++;
        }
    }
    tm.nrw = kept;
    return CM_OK;
}

/*
 * Ends the open interval: one write notice per page written in it. The pages
 * are write-protected again so that the next interval's writes are seen, but
 * keep their twins: the diff is made lazily.
 */
static cm_status_t tm_new_interval(void)
{
    cm_tmk_interval_t *iv;
    uint32_t vt[64];
    bool added;

    if (tm.scan && tm.np > 1) {
        TM_CHECK(tm_scan());
    }
    if (tm.ndirty == 0) {
        return CM_OK;
    }
    if (tm.np == 1) {
        /* Nobody can ever ask for these writes: no notices, no write detection. */
        for (uint32_t k = 0; k < tm.ndirty; k++) {
            tm.pages[tm.dirty[k]].in_dirty = 0;
        }
        tm.ndirty = 0;
        return CM_OK;
    }
    qsort(tm.dirty, tm.ndirty, sizeof(uint32_t), tm_cmp_u32);
    memcpy(vt, tm.store.vt, (size_t)tm.np * sizeof(uint32_t));
    vt[tm.me]++;
    iv = cm_tmk_iv_new(tm.np, (uint32_t)tm.me, vt, tm.dirty, tm.ndirty);
    if (iv == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    TM_CHECK(cm_tmk_store_add(&tm.store, iv, &added));
    for (uint32_t k = 0; k < tm.ndirty; k++) {
        uint64_t p = tm.dirty[k];
        tm_page_t *pg = &tm.pages[p];
        TM_CHECK(tm_ref_add(p, iv, k, true));
        if (pg->state == TM_READ_WRITE && !tm.scan) {
            TM_CHECK(tm_protect(p, PROT_READ));
            pg->state = TM_READ_ONLY;
        }
        pg->in_dirty = 0;
    }
    tm.ndirty = 0;
    tm.st.intervals++;
    return CM_OK;
}

/*
 * Lazy diff creation (thesis 2.3.1): our writes to p accumulate in one twin over as many
 * intervals as pass before someone asks for a diff of p or a foreign notice for p arrives.
 * Then one diff is encoded and attached to the *oldest* own notice of p without one; the later
 * ones get an empty diff. Whoever needs a later notice knows the oldest too (it precedes it)
 * and has not applied it (it had no diff), so it applies the combined diff first, at the
 * oldest notice's place in happened-before order. Attached to every notice it covers, the
 * combined diff would be re-applied after a concurrent writer's diff and undo its writes.
 * No foreign notice of p can fall between the notices a twin covers: its arrival encodes.
 *
 * The page is write-protected before it is encoded: the encoder may be the progress thread
 * while the application writes. Writes of the open interval already made are in the diff
 * (values a requester sees early, never over a later write of someone else); the next write
 * faults and starts a new twin.
 */
/* An own notice still without its diff. */
static inline bool tm_ref_undiffed(const tm_ref_t *ref)
{
    return ref->iv->proc == (uint32_t)tm.me && ref->iv->notices[ref->k].diff == NULL;
}

static cm_status_t tm_make_diff(uint64_t p)
{
    tm_page_t *pg = &tm.pages[p];
    size_t len;
    bool first = true;

    while (pg->undiffed < pg->nrefs && !tm_ref_undiffed(&pg->refs[pg->undiffed])) {
        pg->undiffed++;
    }
    if (pg->undiffed == pg->nrefs) {
        return CM_OK; /* a twin holds only writes of the open interval: its notice will */
    }
    if (pg->twin == NULL) {
        /* No write since the last diff (a write would have made a twin): what these notices
         * cover went into that diff, attached to an older notice. */
        len = 0;
    } else {
        if (pg->state == TM_READ_WRITE) {
            TM_CHECK(tm_protect(p, PROT_READ));
            tm_scan_closing(p);
            pg->state = TM_READ_ONLY;
        }
        len = cm_tmk_diff_encode(tm_net(p), pg->twin, tm.ps, tm.diffbuf);
        tm.st.diffs_created++;
        tm.st.diff_bytes_created += len;
        free(pg->twin);
        pg->twin = NULL;
    }
    for (uint32_t r = pg->undiffed; r < pg->nrefs; r++) {
        tm_ref_t *ref = &pg->refs[r];
        if (tm_ref_undiffed(ref)) {
            TM_CHECK(cm_tmk_store_set_diff(&tm.store, ref->iv, ref->k, tm.diffbuf,
                                           first ? (uint32_t)len : 0));
            first = false;
        }
    }
    pg->undiffed = pg->nrefs;
    return CM_OK;
}

/*
 * A foreign write notice for p: our writes go into a diff first, then the copy is invalid.
 * Every own notice of p still without a diff gets one now, an empty one if there is no twin: a
 * request may have encoded the twin while an interval was open, whose notice then closed with
 * neither; left open, it would take the diff of the next twin, whose writes follow this foreign
 * notice, and be applied before it (a lost update the model tests/model/treadmarks.pml found).
 */
static cm_status_t tm_invalidate(uint64_t p)
{
    tm_page_t *pg = &tm.pages[p];

    TM_CHECK(tm_make_diff(p));
    if (pg->state == TM_READ_ONLY || pg->state == TM_READ_WRITE) {
        TM_CHECK(tm_protect(p, PROT_NONE));
        tm_scan_closing(p);
        pg->state = TM_INVALID;
    }
    return CM_OK;
}

/* Takes in the intervals packed in buf (count of them), noting their write notices. */
static cm_status_t tm_incorporate(const char *buf, size_t len, uint32_t count)
{
    size_t off = 0;

    for (uint32_t i = 0; i < count; i++) {
        cm_tmk_interval_t *iv;
        size_t used;
        bool added;
        TM_CHECK(cm_tmk_iv_unpack(buf + off, len - off, tm.np, &iv, &used));
        off += used;
        TM_CHECK(cm_tmk_store_add(&tm.store, iv, &added));
        if (!added) {
            continue;
        }
        for (uint32_t k = 0; k < iv->npages; k++) {
            uint64_t p = iv->notices[k].page;
            if (p >= tm.npages) {
                return CM_ERR_INVALID;
            }
            TM_CHECK(tm_ref_add(p, iv, k, false));
            TM_CHECK(tm_invalidate(p));
        }
    }
    return off == len ? CM_OK : CM_ERR_INVALID;
}

/* A message being built: a header, then packed intervals. */
typedef struct {
    char   *buf;
    size_t len, cap;
    uint32_t count;
} tm_pack_t;

static cm_status_t tm_pack_one(const cm_tmk_interval_t *iv, void *arg)
{
    tm_pack_t *pk = arg;
    size_t need = cm_tmk_iv_wire_size(iv, tm.np);
    if (pk->len + need > pk->cap) {
        size_t cap = 2 * (pk->len + need);
        char *n = realloc(pk->buf, cap);
        if (n == NULL) {
            return CM_ERR_NO_MEMORY;
        }
        pk->buf = n;
        pk->cap = cap;
    }
    pk->len += cm_tmk_iv_pack(iv, tm.np, pk->buf + pk->len);
    pk->count++;
    return CM_OK;
}

/*
 * Messages that carry intervals (lock grant, barrier arrival and departure):
 * {id, count, flag, vt[nprocs]}, then the intervals not covered by vt_a.
 */
static size_t tm_ivmsg_hdr(void)
{
    return (3 + (size_t)tm.np) * sizeof(uint32_t);
}

static cm_status_t tm_send_intervals(int pe, int type, uint32_t id, uint32_t flag,
                                     const uint32_t *vt_a)
{
    tm_pack_t pk = {.cap = tm_ivmsg_hdr() + 4096, .len = tm_ivmsg_hdr(), .count = 0};
    cm_status_t status;

    pk.buf = malloc(pk.cap);
    if (pk.buf == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    status = cm_tmk_store_send_set(&tm.store, vt_a, tm_pack_one, &pk);
    if (status == CM_OK) {
        uint32_t *h = (uint32_t *)pk.buf;
        h[0] = id;
        h[1] = pk.count;
        h[2] = flag;
        memcpy(h + 3, tm.store.vt, (size_t)tm.np * sizeof(uint32_t));
        status = tm_post(pe, type, pk.buf, pk.len);
    }
    free(pk.buf);
    return status;
}

static const uint32_t *tm_ivmsg_header(const tm_buf_t *b)
{
    return b->data;
}

/* Takes in the intervals of a kept interval-carrying message. */
static cm_status_t tm_take_intervals(const tm_buf_t *b)
{
    return tm_incorporate((const char *)b->data + tm_ivmsg_hdr(), b->len - tm_ivmsg_hdr(),
                          tm_ivmsg_header(b)[1]);
}

/* ---- waiting (the application thread, never holding the mutex) ------------------- */

static void tm_handle(int type, int src, const char *data, size_t len, tm_msg_t **q);

/* Serves queued messages if the mutex is free; its holder serves them otherwise. */
static void tm_drain(void)
{
    for (;;) {
        tm_msg_t *m;
        pthread_mutex_lock(&tm.qmu);
        bool empty = (tm.qhead == NULL);
        pthread_mutex_unlock(&tm.qmu);
        if (empty || pthread_mutex_trylock(&tm.mu) != 0) {
            return;
        }
        for (;;) {
            pthread_mutex_lock(&tm.qmu);
            m = tm.qhead;
            if (m != NULL) {
                tm.qhead = m->next;
                if (tm.qhead == NULL) {
                    tm.qtail = NULL;
                }
            }
            pthread_mutex_unlock(&tm.qmu);
            if (m == NULL) {
                break;
            }
            tm_handle(m->type, m->src, m->data, m->len, &m);
            free(m); /* NULL if tm_handle kept it */
        }
        pthread_mutex_unlock(&tm.mu);
    }
}

static void tm_lock(void)
{
    pthread_mutex_lock(&tm.mu);
}

static void tm_unlock(void)
{
    pthread_mutex_unlock(&tm.mu);
    tm_drain();
}

typedef struct {
    atomic_int *v;
    int        target;
    bool       down;
} tm_wait_t;

/* Serves what was queued meanwhile; the counters change in handlers (cm_rma_wait_until). */
static bool tm_wait_ready(void *arg)
{
    tm_wait_t *w = arg;

    tm_drain();
    return w->down ? atomic_load(w->v) <= w->target : atomic_load(w->v) >= w->target;
}

/* Releases the mutex and waits until *v >= target (or, for tm_wait_zero, *v <= 0). */
static void tm_wait(atomic_int *v, int target, bool down)
{
    tm_wait_t w = {v, target, down};

    tm_unlock();
    cm_rma_wait_events(tm.rma, tm_wait_ready, &w);
    tm_lock();
}

static void tm_wait_ge(atomic_int *v, int target)
{
    tm_wait(v, target, false);
}

static void tm_wait_zero(atomic_int *v)
{
    tm_wait(v, 0, true);
}

/* ---- access misses ------------------------------------------------------------------ */

static int tm_cmp_ref_hb(const void *a, const void *b)
{
    const tm_ref_t *x = *(tm_ref_t *const *)a, *y = *(tm_ref_t *const *)b;
    uint64_t sx = cm_tmk_vt_sum(x->iv->vt, tm.np), sy = cm_tmk_vt_sum(y->iv->vt, tm.np);
    return (sx > sy) - (sx < sy);
}

/* Asks pe for the diffs of page p of the listed (proc, index) notices. */
static cm_status_t tm_request_diffs(int pe, uint64_t p, const uint32_t *pairs, uint32_t n)
{
    size_t len = (3 + 2 * (size_t)n) * sizeof(uint32_t);
    uint32_t *msg = malloc(len);
    cm_status_t status;

    if (msg == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    msg[0] = (uint32_t)p;
    msg[1] = n;
    msg[2] = 0;
    memcpy(msg + 3, pairs, 2 * (size_t)n * sizeof(uint32_t));
    atomic_fetch_add(&tm.pending, 1);
    status = tm_post(pe, TM_DIFF_REQ, msg, len);
    free(msg);
    return status;
}

/*
 * Brings page p up to date: its manager's copy first if we have none, then
 * the diffs of every write notice not applied yet, in happened-before order.
 */
static cm_status_t tm_validate(uint64_t p)
{
    tm_page_t *pg = &tm.pages[p];
    tm_ref_t **need = NULL;
    cm_tmk_interval_t **newest_of = NULL;
    uint32_t nneed = 0, nnewest = 0, *pairs = NULL, *npairs = NULL;
    cm_status_t status = CM_OK;

    atomic_store(&tm.pending, 0);
    tm.nmissing = 0;
    if (pg->state == TM_UNMAPPED && tm_manager(p) != tm.me) {
        uint32_t req[2] = {(uint32_t)p, 0};
        atomic_fetch_add(&tm.pending, 1);
        TM_CHECK(tm_post(tm_manager(p), TM_PAGE_REQ, req, sizeof(req)));
        tm.st.cold_misses++;
    }
    need  = malloc((pg->nrefs ? pg->nrefs : 1) * sizeof(*need));
    pairs = malloc(2 * (size_t)(pg->nrefs ? pg->nrefs : 1) * (size_t)tm.np * sizeof(*pairs));
    npairs = calloc((size_t)tm.np, sizeof(*npairs));
    newest_of = malloc((pg->nrefs ? pg->nrefs : 1) * sizeof(*newest_of));
    if (need == NULL || pairs == NULL || npairs == NULL || newest_of == NULL) {
        status = CM_ERR_NO_MEMORY;
        goto out;
    }
    for (uint32_t r = pg->unapplied; r < pg->nrefs; r++) {
        if (!pg->refs[r].applied) {
            need[nneed++] = &pg->refs[r];
        }
    }
    /*
     * Whom to ask: the creator of a newest notice covering it. Who wrote the
     * page in an interval had applied every diff of the page before it. The
     * newest notices (followed by none) are found once: quadratic, not cubic,
     * in the notices a page has pending (a pivot row of gauss has one per step).
     */
    for (uint32_t j = 0; j < nneed; j++) {
        bool newest = true;
        for (uint32_t k = 0; k < nneed && newest; k++) {
            newest = !cm_tmk_iv_precedes(need[j]->iv, need[k]->iv);
        }
        if (newest) {
            newest_of[nnewest++] = need[j]->iv;
        }
    }
    for (uint32_t i = 0; i < nneed; i++) {
        cm_tmk_interval_t *n = need[i]->iv;
        int dest = (int)n->proc;
        if (n->notices[need[i]->k].diff != NULL) {
            continue; /* already here */
        }
        for (uint32_t j = 0; j < nnewest; j++) {
            if (cm_tmk_iv_precedes(n, newest_of[j])) {
                dest = (int)newest_of[j]->proc;
                break;
            }
        }
        {
            uint32_t *slot = pairs + 2 * ((size_t)dest * pg->nrefs + npairs[dest]);
            slot[0] = n->proc;
            slot[1] = n->index;
            npairs[dest]++;
        }
    }
    for (int pe = 0; pe < tm.np; pe++) {
        if (npairs[pe] > 0) {
            status = tm_request_diffs(pe, p, pairs + 2 * (size_t)pe * pg->nrefs, npairs[pe]);
            if (status != CM_OK) {
                goto out;
            }
        }
    }
    tm_wait_zero(&tm.pending);
    /* A diff its holder did not have (should not happen): ask its creator. */
    if (tm.nmissing > 0) {
        uint32_t nm = tm.nmissing;
        uint32_t *miss = malloc(2 * (size_t)nm * sizeof(uint32_t));
        if (miss == NULL) {
            status = CM_ERR_NO_MEMORY;
            goto out;
        }
        memcpy(miss, tm.missing, 2 * (size_t)nm * sizeof(uint32_t));
        tm.nmissing = 0;
        for (uint32_t i = 0; i < nm && status == CM_OK; i++) {
            status = tm_request_diffs((int)miss[2 * i], p, miss + 2 * i, 1);
        }
        free(miss);
        if (status != CM_OK) {
            goto out;
        }
        tm_wait_zero(&tm.pending);
    }
    qsort(need, nneed, sizeof(*need), tm_cmp_ref_hb);
    for (uint32_t i = 0; i < nneed; i++) {
        cm_tmk_notice_t *nt = &need[i]->iv->notices[need[i]->k];
        if (nt->diff == NULL) {
            cm_error("treadmarks: page %" PRIu64 ": no diff for interval %u of rank %u", p,
                     need[i]->iv->index, need[i]->iv->proc);
            status = CM_ERR_INVALID;
            goto out;
        }
        status = cm_tmk_diff_apply(tm_net(p), tm.ps, nt->diff, nt->diff_len);
        if (status != CM_OK) {
            cm_error("treadmarks: page %" PRIu64 ": malformed diff", p);
            goto out;
        }
        need[i]->applied = 1;
        tm.st.diffs_applied++;
        tm.st.diff_bytes_applied += nt->diff_len;
    }
    pg->unapplied = pg->nrefs;
    pg->state = TM_INVALID; /* valid contents, still protected */
out:
    free(need);
    free(newest_of);
    free(pairs);
    free(npairs);
    return status;
}

static cm_status_t tm_fault(void *addr, bool write)
{
    uint64_t p = ((uintptr_t)addr - (uintptr_t)tm.app) >> tm.shift, t0 = cm_ticks();
    tm_page_t *pg = &tm.pages[p];
    cm_status_t status = CM_OK;

    tm_lock();
    if (write) {
        tm.st.write_faults++;
    } else {
        tm.st.read_faults++;
    }
    if (pg->state == TM_UNMAPPED || pg->state == TM_INVALID) {
        status = tm_validate(p);
        if (status == CM_OK) {
            status = tm_protect(p, PROT_READ);
            pg->state = TM_READ_ONLY;
        }
    }
    if (status == CM_OK && write && pg->state == TM_READ_ONLY) {
        /* A twin left by an earlier interval stays: this interval's writes accumulate in it
         * (tm_make_diff). */
        if (pg->twin == NULL && tm.np > 1) {
            pg->twin = malloc(tm.ps);
            if (pg->twin == NULL) {
                status = CM_ERR_NO_MEMORY;
            } else {
                memcpy(pg->twin, tm_net(p), tm.ps);
                tm.st.twins++;
            }
        }
        if (status == CM_OK && tm.scan && tm.np > 1) {
            status = tm_scan_opened(p);
        }
        if (status == CM_OK) {
            status = tm_protect(p, PROT_READ | PROT_WRITE);
            pg->state = TM_READ_WRITE;
        }
    }
    if (status == CM_OK && write) {
        tm_mark_dirty(p);
    }
    tm.st.fault_ns += cm_ticks_to_ns(cm_ticks() - t0);
    tm_unlock();
    return status;
}

/* ---- locks ---------------------------------------------------------------------------- */

/* Grants lock l to a: a new interval, and every interval a has not seen. */
static cm_status_t tm_grant(unsigned l, uint32_t a, const uint32_t *vt_a)
{
    cm_status_t status;

    TM_CHECK(tm_new_interval());
    status = tm_send_intervals((int)a, TM_LOCK_GRANT, l, 0, vt_a);
    tm.locks[l].local = false;
    return status;
}

/* A request for lock l from a reached the last requester before it (us). */
static cm_status_t tm_lock_request_here(unsigned l, uint32_t a, const uint32_t *vt_a)
{
    tm_lock_t *lk = &tm.locks[l];

    if (lk->local && !lk->held) {
        return tm_grant(l, a, vt_a);
    }
    if (lk->has_next) {
        cm_error("treadmarks: lock %u: a second request (rank %u) queued at rank %d", l, a, tm.me);
        return CM_ERR_INVALID;
    }
    if (lk->next_vt == NULL && (lk->next_vt = malloc((size_t)tm.np * sizeof(uint32_t))) == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    lk->has_next = true;
    lk->next     = a;
    memcpy(lk->next_vt, vt_a, (size_t)tm.np * sizeof(uint32_t));
    return CM_OK;
}

/* At the manager: forward to the last requester, who has or will have the token. */
static cm_status_t tm_lock_manage(unsigned l, uint32_t a, const uint32_t *vt_a, const void *msg,
                                  size_t len)
{
    tm_lock_t *lk = &tm.locks[l];
    uint32_t prev = lk->last_req;

    lk->last_req = a;
    if (prev == (uint32_t)tm.me) {
        return tm_lock_request_here(l, a, vt_a);
    }
    return tm_post((int)prev, TM_LOCK_FWD, msg, len);
}

static cm_status_t tm_lock_acquire(unsigned id)
{
    tm_lock_t *lk;
    uint32_t *msg;
    size_t len = (2 + (size_t)tm.np) * sizeof(uint32_t);
    uint64_t t0 = cm_ticks(), t1;
    cm_status_t status;

    tm_lock();
    lk = &tm.locks[id];
    if (lk->local) {
        /* The token is here: no message (Fig. 2.11). */
        lk->held = true;
        tm.st.lock_acquires_local++;
        tm_unlock();
        return CM_OK;
    }
    msg = malloc(len);
    if (msg == NULL) {
        tm_unlock();
        return CM_ERR_NO_MEMORY;
    }
    msg[0] = id;
    msg[1] = (uint32_t)tm.me;
    memcpy(msg + 2, tm.store.vt, (size_t)tm.np * sizeof(uint32_t));
    atomic_store(&tm.granted, 0);
    if ((int)(id % (unsigned)tm.np) == tm.me) {
        status = tm_lock_manage(id, (uint32_t)tm.me, msg + 2, msg, len);
    } else {
        status = tm_post((int)(id % (unsigned)tm.np), TM_LOCK_REQ, msg, len);
    }
    free(msg);
    /* A new interval after the request: the grant's notices then meet no dirty page. */
    if (status == CM_OK) {
        status = tm_new_interval();
    }
    if (status == CM_OK) {
        tm_wait_ge(&tm.granted, 1);
        t1 = cm_ticks();
        tm.st.lock_wait_ns += cm_ticks_to_ns(t1 - t0);
        status = tm_take_intervals(&tm.grant);
        tm_drop(&tm.grant);
        lk->local = lk->held = true;
        tm.st.lock_acquires_remote++;
        tm.st.acquires++;
        tm.st.acquire_ns += cm_ticks_to_ns(cm_ticks() - t1);
    }
    tm_unlock();
    return status;
}

static cm_status_t tm_lock_release(unsigned id)
{
    tm_lock_t *lk;
    uint64_t t0 = cm_ticks();
    cm_status_t status;

    tm_lock();
    lk = &tm.locks[id];
    if (!lk->held) {
        tm_unlock();
        cm_error("cm_lock_release(%u): the lock is not held here", id);
        return CM_ERR_INVALID;
    }
    status = tm_new_interval();
    lk->held = false;
    tm.st.releases++;
    if (status == CM_OK && lk->has_next) {
        lk->has_next = false;
        status = tm_grant(id, lk->next, lk->next_vt);
    }
    tm.st.release_ns += cm_ticks_to_ns(cm_ticks() - t0);
    tm_unlock();
    return status;
}

/* ---- barriers and garbage collection ----------------------------------------------------- */

static cm_status_t tm_gc_run(int mgr);

static cm_status_t tm_barrier(void)
{
    const uint32_t seq = tm.bar_seq++;
    const int mgr = (int)(seq % (uint32_t)tm.np);
    uint64_t t0 = cm_ticks();
    bool gc;
    cm_status_t status = CM_OK;

    tm_lock();
    tm.st.barriers++;
    status = tm_new_interval();
    gc = tm.store.bytes > tm.gc_bytes;
    if (status != CM_OK || tm.np == 1) {
        goto out;
    }
    if (tm.me != mgr) {
        /* The manager knows at least what everyone knew at the last departure. */
        atomic_store(&tm.departed, 0);
        status = tm_send_intervals(mgr, TM_BAR_ARRIVE, seq, gc, tm.bar_vt);
        if (status != CM_OK) {
            goto out;
        }
        tm_wait_ge(&tm.departed, 1);
        const uint32_t *d = tm_ivmsg_header(&tm.depart);
        if (d[0] != seq) {
            cm_error("treadmarks: departure from barrier %u while in barrier %u", d[0], seq);
            status = CM_ERR_INVALID;
        } else {
            gc = d[2] != 0;
            status = tm_take_intervals(&tm.depart);
        }
        tm_drop(&tm.depart);
    } else {
        tm_wait_ge(&tm.narrived, tm.np - 1);
        atomic_store(&tm.narrived, 0);
        for (int w = 0; w < tm.np && status == CM_OK; w++) {
            const uint32_t *a = tm_ivmsg_header(&tm.arrivals[w]);
            if (w == tm.me) {
                continue;
            }
            if (a[0] != seq) {
                cm_error("treadmarks: arrival for barrier %u while in barrier %u", a[0], seq);
                status = CM_ERR_INVALID;
                break;
            }
            gc |= a[2] != 0;
            status = tm_take_intervals(&tm.arrivals[w]);
        }
        /* Each worker gets what its arrival's timestamp lacks. */
        for (int w = 0; w < tm.np && status == CM_OK; w++) {
            if (w != tm.me) {
                status = tm_send_intervals(w, TM_BAR_DEPART, seq, gc,
                                           tm_ivmsg_header(&tm.arrivals[w]) + 3);
            }
        }
        for (int w = 0; w < tm.np; w++) {
            tm_drop(&tm.arrivals[w]);
        }
    }
    memcpy(tm.bar_vt, tm.store.vt, (size_t)tm.np * sizeof(uint32_t));
    tm.st.acquires++;
    tm.st.releases++;
    if (status == CM_OK && gc) {
        status = tm_gc_run(mgr);
    }
out:
    tm.st.barrier_ns += cm_ticks_to_ns(cm_ticks() - t0);
    tm_unlock();
    return status;
}

/*
 * Garbage collection (thesis 2.3.1): every copy that is not unmapped is
 * brought up to date (a manager's copy always: later first accesses copy it),
 * everyone reports to the barrier's manager, and once all have, every process
 * drops its intervals, notices, diffs and twins.
 */
static cm_status_t tm_gc_run(int mgr)
{
    uint32_t one = 1;

    for (uint64_t p = 0; p < tm.npages; p++) {
        tm_page_t *pg = &tm.pages[p];
        bool unapplied = false;
        for (uint32_t r = pg->unapplied; r < pg->nrefs && !unapplied; r++) {
            unapplied = !pg->refs[r].applied;
        }
        if (!unapplied || (pg->state == TM_UNMAPPED && tm_manager(p) != tm.me)) {
            continue;
        }
        TM_CHECK(tm_validate(p));
        TM_CHECK(tm_protect(p, PROT_READ));
        pg->state = TM_READ_ONLY;
    }
    if (tm.me != mgr) {
        atomic_store(&tm.gc_go, 0);
        TM_CHECK(tm_post(mgr, TM_GC_DONE, &one, sizeof(one)));
        tm_wait_ge(&tm.gc_go, 1);
    } else {
        tm_wait_ge(&tm.gc_done, tm.np - 1);
        atomic_store(&tm.gc_done, 0);
        for (int w = 0; w < tm.np; w++) {
            if (w != tm.me) {
                TM_CHECK(tm_post(w, TM_GC_GO, &one, sizeof(one)));
            }
        }
    }
    for (uint64_t p = 0; p < tm.npages; p++) {
        tm_page_t *pg = &tm.pages[p];
        pg->nrefs     = 0;
        pg->unapplied = 0;
        pg->undiffed  = 0;
        if (pg->twin != NULL) {
            /* Everyone with a copy asked for our diff; the manager's copy has it. */
            free(pg->twin);
            pg->twin = NULL;
        }
        if (pg->state == TM_READ_WRITE) {
            /* Scan leaves pages writable: the next write must fault to make a twin. The
             * barrier has just ended the interval, so there is nothing unnoticed to lose. */
            TM_CHECK(tm_protect(p, PROT_READ));
            pg->state = TM_READ_ONLY;
        }
    }
    cm_tmk_store_collect(&tm.store);
    tm.st.gc_runs++;
    return CM_OK;
}

/* ---- request handling ------------------------------------------------------------------ */

static cm_status_t tm_serve_diffs(int src, const uint32_t *d, size_t len)
{
    uint32_t p = d[0], n = d[1];
    size_t hdr = (3 + 3 * (size_t)n) * sizeof(uint32_t), total = hdr;
    uint32_t *out;
    char *body;
    cm_status_t status;

    if (len < (3 + 2 * (size_t)n) * sizeof(uint32_t) || p >= tm.npages) {
        return CM_ERR_INVALID;
    }
    for (uint32_t i = 0; i < n; i++) {
        cm_tmk_interval_t *iv = cm_tmk_store_get(&tm.store, d[3 + 2 * i], d[4 + 2 * i]);
        int k = iv ? tm_notice_of(iv, p) : -1;
        if (k >= 0 && iv->proc == (uint32_t)tm.me && iv->notices[k].diff == NULL) {
            TM_CHECK(tm_make_diff(p)); /* lazy diffing: made when first asked for */
        }
        if (k >= 0 && iv->notices[k].diff != NULL) {
            total += iv->notices[k].diff_len;
        }
    }
    out = malloc(total);
    if (out == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    out[0] = p;
    out[1] = n;
    out[2] = 0;
    body = (char *)out + hdr;
    for (uint32_t i = 0; i < n; i++) {
        cm_tmk_interval_t *iv = cm_tmk_store_get(&tm.store, d[3 + 2 * i], d[4 + 2 * i]);
        int k = iv ? tm_notice_of(iv, p) : -1;
        out[3 + 3 * i]     = d[3 + 2 * i];
        out[3 + 3 * i + 1] = d[4 + 2 * i];
        if (k >= 0 && iv->notices[k].diff != NULL) {
            out[3 + 3 * i + 2] = iv->notices[k].diff_len;
            memcpy(body, iv->notices[k].diff, iv->notices[k].diff_len);
            body += iv->notices[k].diff_len;
        } else {
            out[3 + 3 * i + 2] = UINT32_MAX; /* not here */
        }
    }
    status = tm_post(src, TM_DIFF_REPLY, out, total);
    free(out);
    return status;
}

static cm_status_t tm_take_diffs(const uint32_t *d, size_t len)
{
    uint32_t p = d[0], n = d[1];
    size_t hdr = (3 + 3 * (size_t)n) * sizeof(uint32_t);
    const char *body = (const char *)d + hdr;

    if (len < hdr) {
        return CM_ERR_INVALID;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t q = d[3 + 3 * i], idx = d[4 + 3 * i], dl = d[5 + 3 * i];
        cm_tmk_interval_t *iv = cm_tmk_store_get(&tm.store, q, idx);
        int k = iv ? tm_notice_of(iv, p) : -1;
        if (k < 0) {
            return CM_ERR_INVALID;
        }
        if (dl == UINT32_MAX) {
            uint32_t *m = realloc(tm.missing, 2 * ((size_t)tm.nmissing + 1) * sizeof(uint32_t));
            if (m == NULL) {
                return CM_ERR_NO_MEMORY;
            }
            tm.missing = m;
            m[2 * tm.nmissing]     = q;
            m[2 * tm.nmissing + 1] = idx;
            tm.nmissing++;
            continue;
        }
        if ((size_t)(body - (const char *)d) + dl > len ||
            cm_tmk_diff_check(tm.ps, body, dl) != CM_OK) {
            return CM_ERR_INVALID;
        }
        TM_CHECK(cm_tmk_store_set_diff(&tm.store, iv, (uint32_t)k, body, dl));
        body += dl;
    }
    return CM_OK;
}

/* q: the queued message data is in, or NULL when data is the transport's buffer. */
static void tm_handle(int type, int src, const char *data, size_t len, tm_msg_t **q)
{
    const uint32_t *d = (const uint32_t *)data;
    bool interrupt = !pthread_equal(pthread_self(), tm.app_thread);
    uint64_t t0 = cm_ticks();
    cm_status_t status = CM_OK;

    switch (type) {
    case TM_LOCK_REQ:
    case TM_LOCK_FWD:
        if (len != (2 + (size_t)tm.np) * sizeof(uint32_t) || d[0] >= tm.nlocks) {
            status = CM_ERR_INVALID;
        } else if (type == TM_LOCK_REQ) {
            status = tm_lock_manage(d[0], d[1], d + 2, data, len);
        } else {
            status = tm_lock_request_here(d[0], d[1], d + 2);
        }
        break;
    case TM_LOCK_GRANT:
        tm_keep(&tm.grant, data, len, q);
        atomic_store(&tm.granted, 1);
        break;
    case TM_BAR_ARRIVE:
        tm_keep(&tm.arrivals[src], data, len, q);
        atomic_fetch_add(&tm.narrived, 1);
        break;
    case TM_BAR_DEPART:
        tm_keep(&tm.depart, data, len, q);
        atomic_store(&tm.departed, 1);
        break;
    case TM_DIFF_REQ:
        status = tm_serve_diffs(src, d, len);
        break;
    case TM_DIFF_REPLY:
        status = tm_take_diffs(d, len);
        atomic_fetch_sub(&tm.pending, 1);
        break;
    case TM_PAGE_REQ:
        if (len != 2 * sizeof(uint32_t) || d[0] >= tm.npages) {
            status = CM_ERR_INVALID;
        } else {
            char *out = malloc(2 * sizeof(uint32_t) + tm.ps);
            if (out == NULL) {
                status = CM_ERR_NO_MEMORY;
                break;
            }
            memcpy(out, d, 2 * sizeof(uint32_t));
            memcpy(out + 2 * sizeof(uint32_t), tm_net(d[0]), tm.ps);
            status = tm_post(src, TM_PAGE_REPLY, out, 2 * sizeof(uint32_t) + tm.ps);
            free(out);
        }
        break;
    case TM_PAGE_REPLY:
        if (len != 2 * sizeof(uint32_t) + tm.ps || d[0] >= tm.npages) {
            status = CM_ERR_INVALID;
        } else {
            memcpy(tm_net(d[0]), data + 2 * sizeof(uint32_t), tm.ps);
            atomic_fetch_sub(&tm.pending, 1);
        }
        break;
    case TM_GC_DONE:
        atomic_fetch_add(&tm.gc_done, 1);
        break;
    case TM_GC_GO:
        atomic_store(&tm.gc_go, 1);
        break;
    default:
        status = CM_ERR_INVALID;
        break;
    }
    if (status != CM_OK) {
        /* A peer depends on the answer: end the job rather than leave it waiting. */
        cm_fatal(1, "treadmarks: message type %d from rank %d (%zu bytes): %s", type, src, len,
                 cm_status_string(status));
    }
    if (interrupt) {
        tm.st.interrupts++;
        tm.st.handler_ns += cm_ticks_to_ns(cm_ticks() - t0);
    }
}

/*
 * UCX active-message callback. With nothing queued and the mutex free, the message is served
 * from the transport's buffer; otherwise a copy is queued for the mutex holder (callbacks run
 * one at a time, so nothing can be queued behind our back and overtaken).
 */
static void tm_am_recv(void *arg, int src, const void *data, size_t len)
{
    tm_msg_t *m, *none = NULL;
    bool empty;

    pthread_mutex_lock(&tm.qmu);
    empty = (tm.qhead == NULL);
    pthread_mutex_unlock(&tm.qmu);
    if (empty && pthread_mutex_trylock(&tm.mu) == 0) {
        tm_handle((int)(intptr_t)arg, src, data, len, &none);
        tm_unlock();
        return;
    }
    m = malloc(sizeof(*m) + len);

    if (m == NULL) {
        cm_fatal(1, "treadmarks: out of memory for an incoming message");
    }
    m->next = NULL;
    m->type = (int)(intptr_t)arg;
    m->src  = src;
    m->len  = len;
    memcpy(m->data, data, len);
    pthread_mutex_lock(&tm.qmu);
    if (tm.qtail != NULL) {
        tm.qtail->next = m;
    } else {
        tm.qhead = m;
    }
    tm.qtail = m;
    pthread_mutex_unlock(&tm.qmu);
    tm_drain();
}

/* ---- runtime interface --------------------------------------------------------------------- */

static cm_status_t tm_api_barrier(void)
{
    return tm_barrier();
}

static cm_status_t tm_init_done(void)
{
    return CM_OK; /* no initialization phase: pages have static managers */
}

static void tm_stats(cm_stats_t *s)
{
    cm_rma_stats_t r;

    tm_lock();
    *s = tm.st;
    tm_unlock();
    cm_rma_get_stats(tm.rma, &r);
    s->total_ns  = cm_time_ns() - tm.t_start;
    s->puts      = r.puts;
    s->gets      = r.gets;
    s->atomics   = r.atomics;
    s->bytes_put = r.bytes_put;
    s->bytes_got = r.bytes_got;
    s->wait_blocks = r.wait_blocks;
    s->wait_missed = r.wait_missed;
}

static void tm_stats_reset(void)
{
    tm_lock();
    memset(&tm.st, 0, sizeof(tm.st));
    tm_unlock();
    tm.t_start = cm_time_ns();
}

static const char *tm_describe(void)
{
    return tm.describe;
}

static cm_status_t tm_page_home(const void *addr, int *home)
{
    uintptr_t a = (uintptr_t)addr - (uintptr_t)tm.app;
    if (a >= (tm.npages << tm.shift)) {
        return CM_ERR_INVALID;
    }
    *home = tm_manager(a >> tm.shift);
    return CM_OK;
}

static cm_status_t tm_init(void)
{
    const cm_config_t *cfg = &cm_rt.config;

    memset(&tm, 0, sizeof(tm));
    tm.me     = cm_rt.rank;
    tm.np     = cm_rt.nprocs;
    tm.rma    = cm_rt.rma;
    tm.app    = cm_rt.shared_base;
    tm.net    = cm_rt.shared_net;
    tm.ps     = cm_rt.page_size;
    tm.shift  = (unsigned)__builtin_ctzll(cm_rt.page_size);
    tm.npages = cm_rt.npages;
    tm.nlocks = (unsigned)cfg->locks;
    tm.gc_bytes   = cfg->tmk_gc_bytes;
    tm.scan       = (cfg->tmk_write_detect == CM_TMK_DETECT_SCAN);
    tm.app_thread = pthread_self();
    if (tm.np > CM_TMK_MAX_PROCS) {
        cm_error("treadmarks: at most %d processes (the job has %d)", CM_TMK_MAX_PROCS, tm.np);
        return CM_ERR_UNSUPPORTED;
    }
    if (tm.ps / CM_TMK_WORD > CM_TMK_MAX_PAGE_WORDS) {
        cm_error("treadmarks: pages of %zu bytes are too large for the diff encoding", tm.ps);
        return CM_ERR_UNSUPPORTED;
    }
    pthread_mutex_init(&tm.mu, NULL);
    pthread_mutex_init(&tm.qmu, NULL);
    TM_CHECK(cm_tmk_store_init(&tm.store, tm.np));
    tm.pages    = calloc(tm.npages, sizeof(*tm.pages));
    tm.dirty    = malloc(tm.npages * sizeof(*tm.dirty));
    tm.rw       = malloc(tm.npages * sizeof(*tm.rw));
    tm.locks    = calloc(tm.nlocks ? tm.nlocks : 1, sizeof(*tm.locks));
    tm.diffbuf  = malloc(cm_tmk_diff_max(tm.ps));
    tm.bar_vt   = calloc((size_t)tm.np, sizeof(*tm.bar_vt));
    tm.arrivals = calloc((size_t)tm.np, sizeof(*tm.arrivals));
    if (tm.pages == NULL || tm.dirty == NULL || tm.rw == NULL || tm.locks == NULL || tm.diffbuf == NULL ||
        tm.bar_vt == NULL || tm.arrivals == NULL) {
        cm_error("treadmarks: out of memory for the page table of %" PRIu64 " pages", tm.npages);
        return CM_ERR_NO_MEMORY;
    }
    for (unsigned l = 0; l < tm.nlocks; l++) {
        int mgr = (int)(l % (unsigned)tm.np);
        tm.locks[l].local    = (mgr == tm.me); /* the manager starts with the token */
        tm.locks[l].last_req = (uint32_t)mgr;
    }
    /*
     * Every page starts protected. A manager's pages are valid (zero) from the
     * start: its first access only opens them; anyone else copies them.
     */
    if (mprotect(tm.app, tm.npages << tm.shift, PROT_NONE) != 0) {
        cm_error("mprotect of the shared region failed: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    for (int t = 1; t < TM_NTYPES; t++) {
        TM_CHECK(cm_rma_am_set_handler(tm.rma, (unsigned)t, tm_am_recv, (void *)(intptr_t)t));
    }
    TM_CHECK(cm_rma_barrier(tm.rma)); /* handlers everywhere before the first message */
    snprintf(tm.describe, sizeof(tm.describe),
             "treadmarks: lazy invalidate, lazy diffs (4-byte words, twins across intervals), "
             "written pages found by %s, static page and lock managers, central barrier manager; "
             "requests served by %s; gc above %zu bytes",
             tm.scan ? "scanning writable pages" : "write faults",
             cm_rma_progress_thread_running(tm.rma) ? "the progress thread (interrupts)"
                                                    : "the application inside library calls only",
             tm.gc_bytes);
    tm.t_start = cm_time_ns();
    tm.ready   = true;
    return CM_OK;
}

static void tm_fini(void)
{
    if (!tm.ready) {
        return;
    }
    for (uint64_t p = 0; p < tm.npages; p++) {
        free(tm.pages[p].twin);
        free(tm.pages[p].snap);
        free(tm.pages[p].refs);
    }
    for (unsigned l = 0; l < tm.nlocks; l++) {
        free(tm.locks[l].next_vt);
    }
    cm_tmk_store_fini(&tm.store);
    free(tm.pages);
    free(tm.dirty);
    free(tm.rw);
    free(tm.locks);
    free(tm.diffbuf);
    free(tm.bar_vt);
    free(tm.arrivals);
    free(tm.missing);
    tm.ready = false;
}

const cm_protocol_t cm_protocol_treadmarks = {
    .name         = "treadmarks",
    .init         = tm_init,
    .fini         = tm_fini,
    .fault        = tm_fault,
    .lock_acquire = tm_lock_acquire,
    .lock_release = tm_lock_release,
    .barrier      = tm_api_barrier,
    .init_done    = tm_init_done,
    .stats        = tm_stats,
    .stats_reset  = tm_stats_reset,
    .describe     = tm_describe,
    .page_home    = tm_page_home,
};
