/*
 * The Cashmere protocol (Kontothanassis & Scott, HPCA'96, sections 2.2-2.3)
 * over one-sided RDMA, variants CHSN and CHSM:
 *
 *   C  a page fault copies the whole page from its home (RMA get);
 *   H  read misses after that hit the local copy (the "hardware" of a copy);
 *   S  writes reach the home by software doubling: compiler store hooks
 *      forward the stored bytes to the home's copy (RMA put);
 *   N/M  one put per store, or a software merge buffer (cm_merge.c).
 *
 * Every protocol action is a one-sided operation: directory updates
 * (directory/), write notices (writenotice/), locks and barriers (locks/),
 * page copies and write-throughs (rma/). No request needs a remote CPU.
 *
 * Delayed write notices: a fault maps the page read-write (read-only under
 * CM_CHECK_STORES until a hooked store opens it); the store hooks mark written pages dirty, and a release performs the write
 * transition (join the writers, notices if the page turns WEAK) for every
 * dirty page not yet processed. Release = forward buffered stores, process
 * dirty pages, flush every outstanding put, then hand the lock on. Acquire =
 * drain the write-notice ring and self-invalidate the pages listed, plus the
 * weak ones among the local unsafe pages.
 */
#define _GNU_SOURCE
#include "config.h"
#include "directory/cm_dir.h"
#include "locks/cm_barrier.h"
#include "locks/cm_mcs.h"
#include "src/cm_hooks_api.h"
#include "src/util/cm_log.h"
#include "src/cm_fault.h"
#include "src/cm_merge.h"
#include "src/cm_protocol.h"
#include "src/cm_replica_heap.h"
#include "src/cm_runtime.h"
#include "src/cm_shadow.h"
#include "src/cm_store_check.h"
#include "src/util/cm_time.h"
#include "src/cm_variant.h"
#include "writenotice/cm_wn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Local page table entry. */
typedef struct {
    uint8_t  mapped;
    uint8_t  flags;
    uint16_t home;     /* valid while mapped */
    uint32_t version;  /* unsafe pages: the directory version when we joined */
} cm_pte_t;

#define CM_PTE_DIRTY     0x01 /* stored to since the last release (seen by the hooks) */
#define CM_PTE_PROCESSED 0x02 /* write transition done since mapping (the paper's processed bit) */
#define CM_PTE_UNSAFE    0x04 /* on the local unsafe list */
#define CM_PTE_SELF      0x08 /* on the self-notice list */
#define CM_PTE_LISTED    0x10 /* on the dirty list (until the next release) */
#define CM_PTE_OPEN      0x20 /* CM_CHECK_STORES: mapped read-write (a hooked store opened it) */
#define CM_PTE_UNSEEN    0x40 /* CM_CHECK_STORES: written by a store the hooks did not see */

typedef struct {
    uint32_t *v;
    uint64_t n;
} cm_list_t;

static struct {
    bool                   ready;
    bool                   init_phase;
    bool                   merge;       /* *SM variant */
    bool                   check;       /* CM_CHECK_STORES (src/cm_store_check.c) */
    int                    me;
    int                    nprocs;
    cm_rma_t               *rma;
    char                   *app;        /* application view (protected page by page) */
    char                   *net;        /* network view (always accessible, RMA target) */
    size_t                 ps;
    unsigned               shift;       /* log2(ps) */
    uint64_t               npages;
    char                   *meta_base;
    const cm_meta_layout_t *meta;
    cm_dir_t               dir;
    cm_wn_t                wn;
    cm_barrier_t           barrier;
    cm_pte_t               *pte;
    cm_list_t              dirty;
    cm_list_t              unsafe;
    cm_list_t              selfn;
    cm_merge_t             mb;
    cm_merge_entry_t       *mb_entries;
    uintptr_t              pend_addr;   /* CHSN: the last store, forwarded at the next one */
    size_t                 pend_len;
    char                   *pend_dst;   /* its home's copy when plain stores reach it, or NULL */
    intptr_t               *home_delta; /* per rank: app address + delta = that rank's copy,
                                           reached by plain stores; 0: through RMA puts */
    bool                   direct;      /* stores through home_delta since the last fence */
    cm_stats_t             st;
    uint64_t               t_start;
    char                   describe[512];
} cm_cm;

#define CM_CHECK(expr) \
    do { \
        cm_status_t cm_st_ = (expr); \
        if (cm_st_ != CM_OK) { \
            return cm_st_; \
        } \
    } while (0)

static inline uint64_t cm_cm_page(uintptr_t addr)
{
    return (addr - (uintptr_t)cm_cm.app) >> cm_cm.shift;
}

static inline char *cm_cm_app(uint64_t p)
{
    return cm_cm.app + (p << cm_cm.shift);
}

static inline char *cm_cm_net(uint64_t p)
{
    return cm_cm.net + (p << cm_cm.shift);
}

static inline void cm_list_push(cm_list_t *l, uint64_t p)
{
    l->v[l->n++] = (uint32_t)p;
}

static cm_status_t cm_cm_protect(uint64_t p, int prot)
{
    if (mprotect(cm_cm_app(p), cm_cm.ps, prot) != 0) {
        cm_error("mprotect of shared page %" PRIu64 " failed: %s", p, strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

/* Inline checks (src/cm_shadow.c): must stores to page p reach the hook? Not when it is mapped,
 * homed here (nothing to forward) and its write transition is done or pending (a later store
 * adds nothing); always under CM_CHECK_STORES. */
static bool cm_cm_armed(uint64_t p)
{
    const cm_pte_t *pte = &cm_cm.pte[p];
    return cm_cm.check || !pte->mapped || pte->home != cm_cm.me ||
           !(pte->flags & (CM_PTE_DIRTY | CM_PTE_PROCESSED));
}

/* Page p goes on the dirty list, once until the next release: the release visits it. */
static inline void cm_cm_list_dirty(uint64_t p)
{
    if (!(cm_cm.pte[p].flags & CM_PTE_LISTED)) {
        cm_cm.pte[p].flags |= CM_PTE_LISTED;
        cm_list_push(&cm_cm.dirty, p);
    }
}

/* ---- doubling: stores forwarded to the home ------------------------------ */

/*
 * Copies len bytes of our copy (network view) to dst, the home's copy mapped here, the way a
 * put lands (each byte once, aligned words whole: a peer may poll the word). This is the
 * doubled store of the paper's Memory Channel: one more store, no software in between.
 */
static inline void cm_cm_store_direct(char *dst, uintptr_t addr, size_t len)
{
    cm_rma_copy_once(dst, cm_cm.net + (addr - (uintptr_t)cm_cm.app), len);
    cm_cm.direct = true;
    cm_cm.st.forwarded_puts++;
}

/* Writes len bytes at app address addr (within one page) through to the page's home. */
static void cm_cm_forward(uintptr_t addr, size_t len)
{
    uint64_t p = cm_cm_page(addr);
    const cm_pte_t *pte = &cm_cm.pte[p];
    char *net = cm_cm.net + (addr - (uintptr_t)cm_cm.app);
    cm_status_t status;

    if (!pte->mapped || pte->home == cm_cm.me) {
        return; /* our stores went straight into the master copy */
    }
    if (cm_cm.home_delta[pte->home] != 0) {
        cm_cm_store_direct((char *)addr + cm_cm.home_delta[pte->home], addr, len);
        return;
    }
    /* Source: our network view of the same bytes, never protected (a later
     * invalidation must not fault inside the transport). */
    status = cm_rma_put_nbi(cm_cm.rma, pte->home, net, net, len);
    if (status != CM_OK) {
        cm_fatal(1, "write-through of %zu bytes to rank %d failed: %s", len, pte->home,
                 cm_status_string(status));
    }
    cm_cm.st.forwarded_puts++;
}

static void cm_cm_forward_range(uintptr_t addr, size_t len, void *arg)
{
    (void)arg;
    while (len > 0) {
        size_t in_page = cm_cm.ps - ((addr - (uintptr_t)cm_cm.app) & (cm_cm.ps - 1));
        size_t n = (len < in_page) ? len : in_page;
        cm_cm_forward(addr, n);
        addr += n;
        len  -= n;
    }
}

/* CHSN: forwards the pending store, which is done by now. */
static void cm_cm_forward_pending(void)
{
    if (cm_cm.pend_dst != NULL) {
        cm_cm_store_direct(cm_cm.pend_dst, cm_cm.pend_addr, cm_cm.pend_len);
    } else {
        cm_cm_forward_range(cm_cm.pend_addr, cm_cm.pend_len, NULL);
    }
    cm_cm.pend_len = 0;
}

/* CHSN: the store of len bytes at addr within page p, about to happen, becomes the pending one. */
static inline void cm_cm_pend(uintptr_t addr, size_t len, uint64_t p)
{
    const cm_pte_t *pte = &cm_cm.pte[p];

    if (pte->mapped && pte->home == cm_cm.me) {
        return; /* the store goes straight into the master copy */
    }
    cm_cm.pend_addr = addr;
    cm_cm.pend_len  = len;
    /* Unmapped now: the store faults first and the page's home is known at forwarding. */
    cm_cm.pend_dst = (pte->mapped && cm_cm.home_delta[pte->home] != 0)
                         ? (char *)addr + cm_cm.home_delta[pte->home]
                         : NULL;
}

/* Everything but the common case of cm_cm_store: marking pages dirty, the check, page spans. */
__attribute__((noinline)) static void cm_cm_store_slow(uintptr_t addr, size_t len)
{
    uint64_t p0 = cm_cm_page(addr), p1 = cm_cm_page(addr + len - 1);

    if (addr + len > (uintptr_t)cm_cm.app + (cm_cm.npages << cm_cm.shift)) {
        len = (uintptr_t)cm_cm.app + (cm_cm.npages << cm_cm.shift) - addr;
        p1  = cm_cm.npages - 1;
    }
    for (uint64_t p = p0; p <= p1; p++) {
        cm_pte_t *pte = &cm_cm.pte[p];
        pte->flags |= CM_PTE_DIRTY;
        cm_cm_list_dirty(p);
        if (pte->mapped && pte->home == cm_cm.me && !cm_cm.check) {
            cm_shadow_set(p, false); /* homed here, transition pending: later stores add nothing */
        }
        if (cm_cm.check && pte->mapped && !(pte->flags & CM_PTE_OPEN)) {
            /* Checked pages are read-only until a store the hooks see: this one. */
            if (cm_cm_protect(p, PROT_READ | PROT_WRITE) != CM_OK) {
                cm_fatal(1, "CM_CHECK_STORES: cannot open shared page %" PRIu64, p);
            }
            pte->flags |= CM_PTE_OPEN;
        }
    }
    if (cm_cm.check) {
        cm_sc_stored(addr, len);
    }
    if (cm_cm.merge) {
        cm_merge_record(&cm_cm.mb, addr, len);
        return;
    }
    if (cm_cm.pend_len != 0) {
        cm_cm_forward_pending();
    }
    if (p0 == p1) {
        cm_cm_pend(addr, len, p0);
    } else {
        cm_cm.pend_addr = addr; /* spans pages: forwarded page by page */
        cm_cm.pend_len  = len;
        cm_cm.pend_dst  = NULL;
    }
}

/*
 * Hook target: a store of len bytes at addr is about to happen (or, for memcpy, happened).
 * The common case is a store within a page already marked dirty, to a home whose memory is
 * mapped here: the previous store is copied there (CHSN) or this one's bytes are marked in the
 * merge buffer's current line (CHSM). That path is a leaf; everything else is out of line.
 */
static void cm_cm_store(uintptr_t addr, size_t len)
{
    const uint8_t marked = CM_PTE_DIRTY | CM_PTE_LISTED;
    uintptr_t off = addr - (uintptr_t)cm_cm.app;
    uint64_t p = off >> cm_cm.shift;

    cm_cm.st.doubled_stores++;
    if (__builtin_expect(((off ^ (off + len - 1)) >> cm_cm.shift) == 0 &&
                         (cm_cm.pte[p].flags & marked) == marked && !cm_cm.check, 1)) {
        if (cm_cm.merge) {
            if (cm_merge_hit(&cm_cm.mb, addr, len)) {
                return;
            }
        } else if (cm_cm.pend_dst != NULL || cm_cm.pend_len == 0) {
            if (cm_cm.pend_len != 0) {
                cm_cm_store_direct(cm_cm.pend_dst, cm_cm.pend_addr, cm_cm.pend_len);
            }
            cm_cm.pend_len = 0;
            cm_cm_pend(addr, len, p);
            return;
        }
    }
    CM_RT_ENTER(); /* the slow path may reach UCX, which may allocate */
    cm_cm_store_slow(addr, len);
    CM_RT_LEAVE();
}

/* Forwards everything buffered or pending (release, acquire, finalize). */
static void cm_cm_flush_doubling(void)
{
    if (cm_cm.merge) {
        cm_merge_flush(&cm_cm.mb);
    } else if (cm_cm.pend_len != 0) {
        cm_cm_forward_pending();
    }
    if (cm_cm.direct) {
        /* Plain stores into homes' memory: ordered before the flag or notice that follows. */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        cm_cm.direct = false;
    }
}

/* ---- directory effects ----------------------------------------------------- */

/*
 * Run by cm_dir_update while it holds page p's entry: what others rely on the
 * moment they see the new entry. A first toucher copies the page from its old
 * home before anyone can see the new home; a transition into WEAK posts its
 * write notices before anyone can see WEAK (a writer that finds the page WEAK
 * posts nothing and hands its lock on, trusting that every sharer already
 * holds a notice). A posted notice is reserved in its ring, so its owner
 * drains it (waiting for the slot's put if need be); the puts complete at our
 * next flush, at the latest the release's before the lock is handed on.
 */
static cm_status_t cm_cm_held(uint64_t p, const cm_dir_effects_t *fx, void *arg)
{
    (void)arg;
    if (fx->claimed_home && fx->old_home != (uint32_t)cm_cm.me) {
        CM_CHECK(cm_rma_get(cm_cm.rma, (int)fx->old_home, cm_cm_net(p), cm_cm_net(p), cm_cm.ps));
        cm_cm.st.pages_fetched++;
    }
    for (uint64_t mask = fx->notify; mask != 0; mask &= mask - 1) {
        CM_CHECK(cm_wn_post(&cm_cm.wn, __builtin_ctzll(mask), p));
    }
    return CM_OK;
}

/* The local part of an update's effects: self-notices and the unsafe list. */
static cm_status_t cm_cm_effects(uint64_t p, const cm_dir_entry_t *e, const cm_dir_effects_t *fx)
{
    cm_pte_t *pte = &cm_cm.pte[p];

    if (fx->self_notice && !(pte->flags & CM_PTE_SELF)) {
        pte->flags |= CM_PTE_SELF;
        cm_list_push(&cm_cm.selfn, p);
        cm_cm.st.notices_self++;
    }
    if ((e->flags & CM_DIR_UNSAFE) && pte->mapped && !(pte->flags & CM_PTE_UNSAFE)) {
        pte->flags  |= CM_PTE_UNSAFE;
        pte->version = (uint32_t)fx->version;
        cm_list_push(&cm_cm.unsafe, p);
    }
    if (fx->became_unsafe) {
        cm_cm.st.unsafe_pages++;
    }
    return CM_OK;
}

/* The write transition of a page written since it was mapped (delayed write notice). */
static cm_status_t cm_cm_write_transition(uint64_t p)
{
    cm_dir_entry_t e;
    cm_dir_effects_t fx;

    CM_CHECK(cm_dir_update(&cm_cm.dir, p, CM_DIR_WRITE, cm_cm_held, NULL, &e, &fx));
    cm_cm.pte[p].flags |= CM_PTE_PROCESSED;
    return cm_cm_effects(p, &e, &fx);
}

/* ---- faults -------------------------------------------------------------------- */

/* CM_CHECK_STORES: page p (just made writable) takes a store the hooks did not announce. */
static void cm_cm_open_unseen(uint64_t p)
{
    cm_cm.pte[p].flags |= CM_PTE_OPEN | CM_PTE_UNSEEN;
    cm_cm_list_dirty(p);
    cm_sc_unseen(p, cm_fault_pc());
}

/* CM_CHECK_STORES, at a release or before the page is dropped: stops the job if page p holds a
 * store the hooks did not see; closes it again. */
static cm_status_t cm_cm_check_page(uint64_t p)
{
    cm_pte_t *pte = &cm_cm.pte[p];

    if (!pte->mapped || !(pte->flags & (CM_PTE_OPEN | CM_PTE_UNSEEN))) {
        return CM_OK;
    }
    cm_sc_verify(p, pte->home == cm_cm.me, pte->home, (pte->flags & CM_PTE_DIRTY) != 0);
    if (pte->flags & CM_PTE_OPEN) {
        CM_CHECK(cm_cm_protect(p, PROT_READ));
    }
    pte->flags &= (uint8_t)~(CM_PTE_OPEN | CM_PTE_UNSEEN);
    return CM_OK;
}

static cm_status_t cm_cm_fault(void *addr, bool write)
{
    uint64_t p = cm_cm_page((uintptr_t)addr), t0 = cm_ticks();
    cm_pte_t *pte = &cm_cm.pte[p];
    cm_dir_entry_t e;
    cm_dir_effects_t fx;

    if (pte->mapped) {
        if (cm_cm.check && write && !(pte->flags & CM_PTE_OPEN)) {
            /* Read-only under the check, and no hooked store opened it: unseen. */
            CM_CHECK(cm_cm_protect(p, PROT_READ | PROT_WRITE));
            cm_cm_open_unseen(p);
            return CM_OK;
        }
        cm_error("unexpected fault at %p: page %" PRIu64 " is mapped read-write", addr, p);
        return CM_ERR_INVALID;
    }
    if (write) {
        cm_cm.st.write_faults++;
    } else {
        cm_cm.st.read_faults++;
    }
    /* Join first, then copy: a writer that turns the page weak after this sees us. */
    CM_CHECK(cm_dir_update(&cm_cm.dir, p, CM_DIR_JOIN, cm_cm_held, NULL, &e, &fx));
    if (fx.claimed_home) {
        cm_cm.st.home_migrations++;
    } else if (e.home != (uint32_t)cm_cm.me) {
        CM_CHECK(cm_rma_get(cm_cm.rma, (int)e.home, cm_cm_net(p), cm_cm_net(p), cm_cm.ps));
        cm_cm.st.pages_fetched++;
    }
    /* Read-write at once: writes are seen by the hooks (delayed write notices). Under the check,
     * read-only unless the hooks just announced a store to it. */
    pte->flags &= CM_PTE_DIRTY | CM_PTE_LISTED; /* a store may have been recorded just before it faulted */
    if (!cm_cm.check) {
        CM_CHECK(cm_cm_protect(p, PROT_READ | PROT_WRITE));
    } else {
        bool announced = (pte->flags & CM_PTE_DIRTY) != 0;
        CM_CHECK(cm_cm_protect(p, (announced || write) ? PROT_READ | PROT_WRITE : PROT_READ));
        cm_sc_mapped(p, e.home == (uint32_t)cm_cm.me);
        if (announced) {
            pte->flags |= CM_PTE_OPEN;
        } else if (write) {
            cm_cm_open_unseen(p);
        }
    }
    pte->mapped = 1;
    pte->home   = (uint16_t)e.home;
    cm_shadow_set(p, cm_cm_armed(p));
    CM_CHECK(cm_cm_effects(p, &e, &fx));
    cm_cm.st.fault_ns += cm_ticks_to_ns(cm_ticks() - t0);
    return CM_OK;
}

/* ---- invalidation ------------------------------------------------------------- */

static cm_status_t cm_cm_invalidate(uint64_t p)
{
    cm_pte_t *pte = &cm_cm.pte[p];
    cm_dir_entry_t e;
    cm_dir_effects_t fx;

    if (!pte->mapped) {
        return CM_OK;
    }
    if (cm_cm.check) {
        CM_CHECK(cm_cm_check_page(p));
    }
    if ((pte->flags & CM_PTE_DIRTY) && !(pte->flags & CM_PTE_PROCESSED)) {
        /* Written and about to be dropped: its notices must not wait for our release. */
        CM_CHECK(cm_cm_write_transition(p));
    }
    CM_CHECK(cm_cm_protect(p, PROT_NONE));
    CM_CHECK(cm_dir_update(&cm_cm.dir, p, CM_DIR_LEAVE, NULL, NULL, &e, &fx));
    pte->mapped = 0;
    pte->flags &= CM_PTE_LISTED; /* still on the dirty list: no second entry */
    cm_shadow_set(p, true);
    cm_cm.st.invalidations++;
    return CM_OK;
}

static cm_status_t cm_cm_invalidate_visit(uint64_t p, void *arg)
{
    (void)arg;
    if (p >= cm_cm.npages) {
        cm_error("write notice for page %" PRIu64 " beyond the shared region", p);
        return CM_ERR_INVALID;
    }
    return cm_cm_invalidate(p);
}

static cm_status_t cm_cm_invalidate_all(void)
{
    for (uint64_t p = 0; p < cm_cm.npages; p++) {
        if (cm_cm.pte[p].mapped) {
            CM_CHECK(cm_cm_invalidate(p));
        }
    }
    return CM_OK;
}

/* ---- release / acquire ------------------------------------------------------ */

static cm_status_t cm_cm_release(void)
{
    uint64_t t0 = cm_ticks();

    cm_cm.st.releases++;
    cm_cm_flush_doubling();
    for (uint64_t i = 0; i < cm_cm.dirty.n; i++) {
        uint64_t p = cm_cm.dirty.v[i];
        cm_pte_t *pte = &cm_cm.pte[p];
        if (cm_cm.check) {
            CM_CHECK(cm_cm_check_page(p));
        }
        if (pte->mapped && (pte->flags & CM_PTE_DIRTY) && !(pte->flags & CM_PTE_PROCESSED)) {
            CM_CHECK(cm_cm_write_transition(p));
        }
        pte->flags &= (uint8_t)~(CM_PTE_DIRTY | CM_PTE_LISTED);
    }
    cm_cm.dirty.n = 0;
    /* Write-throughs and notices complete before anyone can see the release. */
    CM_CHECK(cm_rma_flush_all(cm_cm.rma));
    cm_cm.st.release_ns += cm_ticks_to_ns(cm_ticks() - t0);
    return CM_OK;
}

static cm_status_t cm_cm_acquire(void)
{
    uint64_t t0 = cm_ticks(), kept = 0;
    bool overflow = false;

    cm_cm.st.acquires++;
    /* Our own forwarded stores land before we might copy a page back in. */
    cm_cm_flush_doubling();
    CM_CHECK(cm_rma_flush_all(cm_cm.rma));

    CM_CHECK(cm_wn_drain(&cm_cm.wn, cm_cm_invalidate_visit, NULL, &overflow));
    for (uint64_t i = 0; i < cm_cm.selfn.n; i++) {
        uint64_t p = cm_cm.selfn.v[i];
        cm_cm.pte[p].flags &= ~CM_PTE_SELF;
        CM_CHECK(cm_cm_invalidate(p));
    }
    cm_cm.selfn.n = 0;
    /* Unsafe pages get no notices: look at their directory entries instead. Weak, or a writer
     * left since we joined (the version moved): our copy may be older than its writes. */
    for (uint64_t i = 0; i < cm_cm.unsafe.n; i++) {
        uint64_t p = cm_cm.unsafe.v[i], version;
        cm_dir_entry_t e;
        if (!cm_cm.pte[p].mapped || !(cm_cm.pte[p].flags & CM_PTE_UNSAFE)) {
            continue;
        }
        CM_CHECK(cm_dir_read(&cm_cm.dir, p, &e, &version));
        cm_cm.st.unsafe_checks++;
        if (cm_dir_state(e.sharers, e.writers) == CM_PAGE_WEAK ||
            (uint32_t)version != cm_cm.pte[p].version) {
            CM_CHECK(cm_cm_invalidate(p));
        } else {
            cm_cm.unsafe.v[kept++] = (uint32_t)p;
        }
    }
    cm_cm.unsafe.n = kept;
    if (overflow) {
        CM_CHECK(cm_cm_invalidate_all());
    }
    cm_cm.st.acquire_ns += cm_ticks_to_ns(cm_ticks() - t0);
    return CM_OK;
}

/* ---- initialization phase ---------------------------------------------------- */

/*
 * The first barrier (or cm_init_done) ends the initialization phase: every
 * process drops all its mappings and the directory starts afresh, so that
 * each page's next access is a first touch that may move its home. Between
 * the two barriers nobody touches remote metadata.
 */
static cm_status_t cm_cm_init_end(void)
{
    if (mprotect(cm_cm.app, cm_cm.npages << cm_cm.shift, PROT_NONE) != 0) {
        cm_error("mprotect of the shared region failed: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    memset(cm_cm.pte, 0, cm_cm.npages * sizeof(*cm_cm.pte));
    CM_CHECK(cm_shadow_reset()); /* every page armed again, filled on next use */
    cm_cm.dirty.n  = 0;
    cm_cm.unsafe.n = 0;
    cm_cm.selfn.n  = 0;
    cm_dir_reset_local(&cm_cm.dir);
    cm_wn_reset_local(&cm_cm.wn);
    CM_CHECK(cm_barrier_wait(&cm_cm.barrier));
    cm_cm.dir.first_touch = cm_rt.config.first_touch;
    cm_cm.init_phase      = false;
    return CM_OK;
}

static cm_status_t cm_cm_init_done(void)
{
    if (!cm_cm.init_phase) {
        return CM_OK;
    }
    CM_CHECK(cm_cm_release());
    CM_CHECK(cm_barrier_wait(&cm_cm.barrier));
    return cm_cm_init_end();
}

static cm_status_t cm_cm_barrier(void)
{
    uint64_t t0;

    CM_CHECK(cm_cm_release());
    t0 = cm_ticks();
    CM_CHECK(cm_barrier_wait(&cm_cm.barrier));
    cm_cm.st.barrier_ns += cm_ticks_to_ns(cm_ticks() - t0);
    cm_cm.st.barriers++;
    if (cm_cm.init_phase) {
        return cm_cm_init_end();
    }
    return cm_cm_acquire();
}

/* ---- locks ------------------------------------------------------------------- */

/* Lock id (checked by cm_api.c): its home, tail word and our queue node. */
static void cm_cm_lock_addr(unsigned id, int *home, uint64_t **tail, cm_mcs_qnode_t **q)
{
    *home = (int)(id % (unsigned)cm_cm.nprocs);
    *tail = (uint64_t *)(cm_cm.meta_base + cm_cm.meta->lock_tails) + id / (unsigned)cm_cm.nprocs;
    *q    = (cm_mcs_qnode_t *)(cm_cm.meta_base + cm_cm.meta->lock_qnodes +
                               (size_t)id * CM_META_LOCK_QNODE);
}

static cm_status_t cm_cm_lock_acquire(unsigned id)
{
    int home;
    uint64_t *tail, t0;
    cm_mcs_qnode_t *q;

    cm_cm_lock_addr(id, &home, &tail, &q);
    t0 = cm_ticks();
    CM_CHECK(cm_mcs_acquire(cm_cm.rma, home, tail, q, NULL));
    cm_cm.st.lock_wait_ns += cm_ticks_to_ns(cm_ticks() - t0);
    if (home == cm_cm.me) {
        cm_cm.st.lock_acquires_local++;
    } else {
        cm_cm.st.lock_acquires_remote++;
    }
    return cm_cm_acquire();
}

static cm_status_t cm_cm_lock_release(unsigned id)
{
    int home;
    uint64_t *tail;
    cm_mcs_qnode_t *q;

    cm_cm_lock_addr(id, &home, &tail, &q);
    CM_CHECK(cm_cm_release());
    return cm_mcs_release(cm_cm.rma, home, tail, q, NULL, NULL, NULL);
}

/* ---- statistics ------------------------------------------------------------ */

static void cm_cm_stats(cm_stats_t *s)
{
    cm_rma_stats_t r;

    *s = cm_cm.st;
    cm_rma_get_stats(cm_cm.rma, &r);
    s->total_ns           = cm_time_ns() - cm_cm.t_start;
    s->dir_updates        = cm_cm.dir.updates;
    s->dir_retries        = cm_cm.dir.retries;
    s->notices_posted     = cm_cm.wn.posted;
    s->notices_suppressed = cm_cm.wn.suppressed;
    s->notices_drained    = cm_cm.wn.drained;
    s->ring_overflows     = cm_cm.wn.overflows;
    s->merge_flushes      = cm_cm.mb.line_flushes;
    s->puts               = r.puts;
    s->gets               = r.gets;
    s->atomics            = r.atomics;
    s->bytes_put          = r.bytes_put;
    s->bytes_got          = r.bytes_got;
    s->wait_blocks = r.wait_blocks;
    s->wait_missed = r.wait_missed;
}

static void cm_cm_stats_reset(void)
{
    memset(&cm_cm.st, 0, sizeof(cm_cm.st));
    cm_cm.dir.updates = cm_cm.dir.retries = 0;
    cm_cm.wn.posted = cm_cm.wn.suppressed = cm_cm.wn.drained = cm_cm.wn.overflows = 0;
    cm_cm.wn.full = 0;
    cm_cm.mb.line_flushes = 0;
    cm_cm.t_start = cm_time_ns();
}

static const char *cm_cm_describe(void)
{
    return cm_cm.describe;
}

static cm_status_t cm_cm_page_home(const void *addr, int *home)
{
    uintptr_t a = (uintptr_t)addr;
    cm_dir_entry_t e;

    if (a - (uintptr_t)cm_cm.app >= (cm_cm.npages << cm_cm.shift)) {
        return CM_ERR_INVALID;
    }
    CM_CHECK(cm_dir_read(&cm_cm.dir, cm_cm_page(a), &e, NULL));
    *home = (int)e.home;
    return CM_OK;
}

/* ---- init / fini -------------------------------------------------------------- */

static cm_status_t cm_cm_init(void)
{
    const cm_config_t *cfg = &cm_rt.config;
    const char *vname = cm_variants[cfg->variant].name;
    cm_dir_impl_t impl;
    cm_dir_seg_t dseg;
    cm_wn_seg_t wseg;

    /* An unimplemented variant was refused by cm_check_job (from the variant table). */
    if (cm_variants[cfg->variant].merge == CM_MERGE_BUFFER && cfg->merge_lines == 0) {
        cm_error("CM_MERGE_LINES=0: %s needs a merge buffer of at least one line (CHSN is a "
                 "variant without one)", vname);
        return CM_ERR_INVALID;
    }
    if (cm_variant_needs_hooks((cm_variant_t)cfg->variant) && !cm_hooks_linked) {
        cm_error("CM_VARIANT=%s forwards writes in software, but this program was built without "
                 "the store hooks: build it with cmcc (or run its .hooks binary; cmrun picks it)",
                 vname);
        return CM_ERR_UNSUPPORTED;
    }
    memset(&cm_cm, 0, sizeof(cm_cm));
    cm_cm.me         = cm_rt.rank;
    cm_cm.nprocs     = cm_rt.nprocs;
    cm_cm.rma        = cm_rt.rma;
    cm_cm.app        = cm_rt.shared_base;
    cm_cm.net        = cm_rt.shared_net;
    cm_cm.ps         = cm_rt.page_size;
    cm_cm.shift      = (unsigned)__builtin_ctzll(cm_rt.page_size);
    cm_cm.npages     = cm_rt.npages;
    cm_cm.meta_base  = cm_rt.meta_base;
    cm_cm.meta       = &cm_rt.meta;
    cm_cm.merge      = (cm_variants[cfg->variant].merge == CM_MERGE_BUFFER);
    cm_cm.check      = cfg->check_stores;
    cm_cm.init_phase = true;

    switch ((cm_directory_kind_t)cfg->directory) {
    case CM_DIRECTORY_MCS:
        impl = CM_DIR_IMPL_MCS;
        break;
    case CM_DIRECTORY_CAS:
        impl = CM_DIR_IMPL_CAS;
        break;
    default:
        impl = (cm_cm.nprocs <= CM_DIR_MAX_PROCS_CAS) ? CM_DIR_IMPL_CAS : CM_DIR_IMPL_MCS;
        break;
    }
    dseg = cm_meta_dir_seg(cm_cm.meta, cm_cm.meta_base);
    wseg = cm_meta_wn_seg(cm_cm.meta, cm_cm.meta_base);
    CM_CHECK(cm_dir_init(&cm_cm.dir, cm_cm.rma, impl, &dseg, (unsigned)cfg->unsafe_threshold));
    CM_CHECK(cm_wn_init(&cm_cm.wn, cm_cm.rma, &wseg));
    cm_barrier_init(&cm_cm.barrier, cm_cm.rma,
                    (uint64_t *)(cm_cm.meta_base + cm_cm.meta->barrier_flags));

    cm_cm.pte      = calloc(cm_cm.npages, sizeof(*cm_cm.pte));
    cm_cm.dirty.v  = malloc(cm_cm.npages * sizeof(uint32_t));
    cm_cm.unsafe.v = malloc(cm_cm.npages * sizeof(uint32_t));
    cm_cm.selfn.v  = malloc(cm_cm.npages * sizeof(uint32_t));
    cm_cm.mb_entries = calloc(cfg->merge_lines ? cfg->merge_lines : 1, sizeof(cm_merge_entry_t));
    cm_cm.home_delta = calloc((size_t)cm_cm.nprocs, sizeof(*cm_cm.home_delta));
    if (cm_cm.pte == NULL || cm_cm.dirty.v == NULL || cm_cm.unsafe.v == NULL ||
        cm_cm.selfn.v == NULL || cm_cm.mb_entries == NULL || cm_cm.home_delta == NULL) {
        cm_error("cashmere: out of memory for the page table of %" PRIu64 " pages", cm_cm.npages);
        return CM_ERR_NO_MEMORY;
    }
    for (int pe = 0; pe < cm_cm.nprocs; pe++) {
        char *home = (pe == cm_cm.me) ? NULL : cm_rma_store_ptr(cm_cm.rma, pe, cm_cm.net);
        cm_cm.home_delta[pe] = (home != NULL) ? home - cm_cm.app : 0;
    }
    cm_merge_init(&cm_cm.mb, cm_cm.mb_entries, (unsigned)cfg->merge_lines, cm_cm_forward_range,
                  NULL);
    if (cm_cm.check) {
        CM_CHECK(cm_sc_init(cm_cm.app, cm_cm.npages, cm_cm.ps));
    }

    /* Every page starts unmapped: its first access faults and joins the directory. */
    if (mprotect(cm_cm.app, cm_cm.npages << cm_cm.shift, PROT_NONE) != 0) {
        cm_error("mprotect of the shared region failed: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    CM_CHECK(cm_shadow_attach(cm_cm.app, cm_cm.npages, cm_cm.ps, cm_cm_armed));
    cm_hooks_set_range((uintptr_t)cm_cm.app, cm_cm.npages << cm_cm.shift, cm_cm_store);

    snprintf(cm_cm.describe, sizeof(cm_cm.describe),
             "cashmere %s: %c: %s; %c: %s; %c: %s; %c: %s; directory: %s; homes: round-robin, "
             "then %s", vname,
             vname[0], cm_variant_mechanism((cm_variant_t)cfg->variant, 0),
             vname[1], cm_variant_mechanism((cm_variant_t)cfg->variant, 1),
             vname[2], cm_variant_mechanism((cm_variant_t)cfg->variant, 2),
             vname[3], cm_variant_mechanism((cm_variant_t)cfg->variant, 3),
             (impl == CM_DIR_IMPL_CAS) ? "compare-and-swap word" : "MCS lock per entry",
             cfg->first_touch ? "first touch after initialization" : "fixed");
    cm_cm.t_start = cm_time_ns();
    cm_cm.ready   = true;
    return CM_OK;
}

static void cm_cm_fini(void)
{
    if (!cm_cm.ready) {
        return;
    }
    cm_hooks_set_range(0, 0, NULL);
    cm_shadow_detach();
    cm_wn_fini(&cm_cm.wn);
    free(cm_cm.pte);
    free(cm_cm.dirty.v);
    free(cm_cm.unsafe.v);
    free(cm_cm.selfn.v);
    free(cm_cm.mb_entries);
    free(cm_cm.home_delta);
    if (cm_cm.check) {
        cm_sc_fini();
    }
    cm_cm.ready = false;
}

const cm_protocol_t cm_protocol_cashmere = {
    .name         = "cashmere",
    .init         = cm_cm_init,
    .fini         = cm_cm_fini,
    .fault        = cm_cm_fault,
    .lock_acquire = cm_cm_lock_acquire,
    .lock_release = cm_cm_lock_release,
    .barrier      = cm_cm_barrier,
    .init_done    = cm_cm_init_done,
    .stats        = cm_cm_stats,
    .stats_reset  = cm_cm_stats_reset,
    .describe     = cm_cm_describe,
    .page_home    = cm_cm_page_home,
};
