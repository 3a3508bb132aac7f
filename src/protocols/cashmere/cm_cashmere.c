/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Cashmere protocol (Kontothanassis & Scott, HPCA'96, sections 2.2-2.3)
 * over one-sided RDMA: its events. A variant is realized by the mechanisms
 * its row of the variant table names (cm_cm_int.h): how a page's data becomes
 * reachable (fill: cm_fill_*.c) and how stores reach the home and written
 * pages become known (writes: cm_write_*.c, with the merge buffer of the *M
 * variants). The events below call those ops and never ask which variant
 * runs.
 *
 * Every protocol action is a one-sided operation: directory updates
 * (directory/), write notices (writenotice/), locks and barriers (locks/),
 * page copies and write-throughs (rma/). No request needs a remote CPU.
 *
 * Delayed write notices: a fault maps the page (read-write where the write
 * mechanism sees stores itself); written pages are marked dirty, and a release
 * performs the write transition (join the writers, notices if the page turns
 * WEAK) for every dirty page not yet processed. Release = forward what the
 * write mechanism holds, process dirty pages, flush every outstanding put,
 * then hand the lock on. Acquire = drain the write-notice ring and
 * self-invalidate the pages listed, plus the weak ones among the local unsafe
 * pages.
 */
#define _GNU_SOURCE
#include "config.h"
#include "locks/cm_mcs.h"
#include "src/protocols/cashmere/cm_cm_int.h"
#include "src/protocols/cashmere/cm_prefetch.h"
#include "src/protocols/cashmere/cm_refetch.h"
#include "src/access/cm_hooks_api.h"
#include "src/protocols/cm_protocol.h"
#include "src/access/cm_replica_heap.h"
#include "src/access/cm_shadow.h"
#include "util/cm_mem.h"
#include "util/cm_time.h"

#include <stdio.h>
#include <stdlib.h>

cm_cm_t cm_cm;

/* The mechanisms, by the kinds the variant table names; NULL: not built yet. */
static const cm_fill_ops_t *const cm_cm_fills[CM_FILL_COUNT] = {
    [CM_FILL_PAGE] = &cm_fill_page_ops,
    [CM_FILL_MAP]  = &cm_fill_map_ops,
    [CM_FILL_LINE] = &cm_fill_line_ops,
};
static const cm_write_ops_t *const cm_cm_writes[CM_WRITE_COUNT] = {
    [CM_WRITE_HOOKS]  = &cm_write_hooks_ops,
    [CM_WRITE_MAPPED] = &cm_write_mapped_ops,
    [CM_WRITE_OFFLOAD] = &cm_write_offload_ops,
};
/* NULL for NONE: no buffer, stores forwarded by the write mechanism as they come. */
static const cm_merge_ops_t *const cm_cm_merges[CM_MERGE_COUNT] = {
    [CM_MERGE_NONE]   = NULL,
    [CM_MERGE_BUFFER] = &cm_merge_buffer_ops,
};

cm_status_t cm_cm_select(cm_variant_t v, const cm_fill_ops_t **f, const cm_write_ops_t **w,
                         const cm_merge_ops_t **m)
{
    const cm_variant_info_t *row = &cm_variants[v];
    const char *missing;

    *f = cm_cm_fills[row->fill];
    *w = cm_cm_writes[row->write];
    *m = cm_cm_merges[row->merge];
    if (*f == NULL || *w == NULL || (row->merge != CM_MERGE_NONE && *m == NULL)) {
        /* cm_check_job refuses these first (cm_variant_implemented); a table and registry
         * out of step is a bug here. */
        cm_error("CM_VARIANT=%s: its %s mechanism is not built in", row->name,
                 (*f == NULL) ? "fill" : (*w == NULL) ? "write" : "merge");
        return CM_ERR_UNSUPPORTED;
    }
    missing = cm_cm_ops_missing(*f, *w, *m);
    if (missing != NULL) {
        cm_error("CM_VARIANT=%s: a mechanism lacks a required op (%s are required)", row->name,
                 missing);
        return CM_ERR_INVALID;
    }
    return CM_OK;
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
    /* The ordering invariant's precondition (docs/ARCHITECTURE.md): the entry is held while
     * notices go out, and never to ourselves (a self-notice is local, cm_cm_effects). */
    cm_assert(!(fx->notify & (1ull << cm_cm.me)));
    /* The add form holds an entry only for a claim, which notifies nobody. */
    cm_assert(!cm_cm_add_form() || fx->notify == 0);
    if (fx->claimed_home && fx->old_home != (uint32_t)cm_cm.me) {
        uint64_t t0 = cm_trace_begin();
        CM_CHECK(cm_rma_get(cm_cm.rma, (int)fx->old_home, cm_cm_net(p), cm_cm_net(p), cm_cm.ps));
        cm_cm_fetched(p, (int)fx->old_home, t0);
    }
    for (uint64_t mask = fx->notify; mask != 0; mask &= mask - 1) {
        CM_CHECK(cm_wn_post(&cm_cm.wn, __builtin_ctzll(mask), p));
    }
    return CM_OK;
}

/* The add form: a notice of page p into the bin at each rank of mask. */
static cm_status_t cm_cm_bins_post(uint64_t mask, uint64_t p)
{
    for (; mask != 0; mask &= mask - 1) {
        CM_CHECK(cm_wn_bin_post(&cm_cm.bins, __builtin_ctzll(mask), p));
    }
    return CM_OK;
}

/* The local part of an update's effects: self-notices and the unsafe list. */
cm_status_t cm_cm_effects(uint64_t p, const cm_dir_entry_t *e, const cm_dir_effects_t *fx)
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
    if (cm_cm_add_form()) {
        /* Nothing is held in the add form: this update's notices go out with our next commit
         * (the release's, or this acquire's end), before anyone can see our release. */
        CM_CHECK(cm_cm_bins_post(fx->notify, p));
    }
    return CM_OK;
}

/*
 * The add form: a join that finds other writers notices itself, and nobody tells those writers
 * that it joined. One that stopped writing keeps its bit while it keeps the page, and every
 * later join notices itself again and drops the page at its next acquire (a writer waiting at
 * a barrier made the other process of SPLASH-3 BARNES do that ~1 M times: 16 s against 0.9).
 * So the joins that find writers are counted in a row, and the CM_CM_TELL_AFTER-th tells them
 * (bin notices: a writer still writing drops its copy and joins again; one that stopped
 * leaves). Telling at every such join made a producer drop its pages at each consumer's read
 * (across two hosts fft 1.57x, gauss 1.19x slower; at the second: 1.11x, 0.97x; at the
 * fourth BARNES stayed 1.6x slower than under the CAS form, at the second 1.03x). A notice to
 * a writer is advisory, never needed for coherence (tests/model/dir_add.pml, R_JOIN_NOTIFY).
 */
#define CM_CM_TELL_AFTER 2

static cm_status_t cm_cm_join_tell(uint64_t p, const cm_dir_effects_t *fx)
{
    uint8_t *n = &cm_cm.found[p];

    if (fx->writers_found == 0) {
        *n = 0;
        return CM_OK;
    }
    if (++*n < CM_CM_TELL_AFTER) {
        return CM_OK;
    }
    *n = 0;
    return cm_cm_bins_post(fx->writers_found, p);
}

/* The write transition of a page written since it was mapped (delayed write notice). */
static cm_status_t cm_cm_write_transition(uint64_t p)
{
    cm_dir_entry_t e;
    cm_dir_effects_t fx;

    /* Only a mapped page written since it joined makes the transition, once per mapping. */
    cm_assert(cm_cm.pte[p].mapped && !(cm_cm.pte[p].flags & CM_PTE_PROCESSED));
    CM_CHECK(cm_dir_update(&cm_cm.dir, p, CM_DIR_WRITE, cm_cm_held, NULL, &e, &fx));
    cm_assert(e.writers & (1ull << cm_cm.me));
    cm_cm.pte[p].flags |= CM_PTE_PROCESSED;
    return cm_cm_effects(p, &e, &fx);
}

/* ---- faults -------------------------------------------------------------------- */

/*
 * A fault's JOIN of page p, with the page's copy issued alongside where the word last seen
 * allows (fill op .early): e and fx are the join's result, the copy in flight or landed.
 */
static cm_status_t cm_cm_fault_join(uint64_t p, cm_dir_entry_t *e, cm_dir_effects_t *fx)
{
    cm_dir_join_t join = {.issued = false};
    int known = -1;
    uint64_t seen = 0;

    if (cm_cm_add_form()) {
        /* Homed here: our copy is the master, so the join's result is not needed. */
        bool joined;
        CM_CHECK(cm_dir_add_home_join(&cm_cm.dir, p, &joined, e, fx));
        if (joined) {
            return CM_OK;
        }
    }
    if (cm_cm.fill->ops->early != NULL && cm_cm_add_form()) {
        /* The add form: the join's add, then the copy behind it, where both go to one rank.
         * A page never seen: its word first (the compare-and-swap would read it anyway). */
        if (!cm_dir_seen_word(&cm_cm.dir, p, &seen)) {
            CM_CHECK(cm_dir_add_peek(&cm_cm.dir, p));
        }
        CM_CHECK(cm_dir_add_join_issue(&cm_cm.dir, p, &join, &known));
    }
    if (join.issued) {
        if (known != cm_cm.me) {
            CM_CHECK(cm_cm.fill->ops->early(cm_cm.fill, p, known));
            CM_CHECK(cm_cm.fill->ops->early_wait(cm_cm.fill)); /* last issued: the add is in */
        }
        CM_CHECK(cm_dir_add_join_wait(&cm_cm.dir, p, &join, e, fx));
        if (known != cm_cm.me && !fx->as_seen) {
            CM_CHECK(cm_cm.fill->ops->early(cm_cm.fill, p, -1));
        }
        return CM_OK;
    }
    if (cm_cm.fill->ops->early != NULL && cm_dir_known_home(&cm_cm.dir, p, &known, &seen) &&
        known != cm_cm.me) {
        /* Travels with the join (cm_fill_page.c). */
        CM_CHECK(cm_cm.fill->ops->early(cm_cm.fill, p, known));
    } else {
        seen = 0;
    }
    /* Join, then copy (or both at once, above): a writer that turns the page weak after the
     * join sees us; one before it is in the entry we join, and we get a self-notice. */
    CM_CHECK(cm_dir_update_seen(&cm_cm.dir, p, CM_DIR_JOIN, cm_cm_held, NULL, seen, e, fx));
    if (seen != 0 && !fx->as_seen) {
        /* The entry moved since it was seen: copy again. */
        CM_CHECK(cm_cm.fill->ops->early(cm_cm.fill, p, -1));
    }
    return CM_OK;
}

/* Page p joins the directory's sharing set: from a fault (whole) or an access check. */
static cm_status_t cm_cm_fault_page_in(uint64_t p, bool write, bool whole)
{
    cm_pte_t *pte = &cm_cm.pte[p];
    cm_dir_entry_t e;
    cm_dir_effects_t fx;

    if (pte->mapped) {
        if (write) {
            /* Mapped without write permission. */
            return cm_cm.write->ops->write_fault(cm_cm.write, p);
        }
        cm_error("unexpected fault at %p: page %" PRIu64 " is mapped", (void *)cm_cm_app(p), p);
        return CM_ERR_INVALID;
    }
    if (write) {
        cm_cm.st.write_faults++;
    } else {
        cm_cm.st.read_faults++;
    }
    if (cm_refetch_held(p)) {
        /* Still in the sharing set, its copy fetched at the last acquire (and self-noticed
         * there if need be): only its mapping is missing. */
        cm_refetch_fault(p, true);
        pte->flags &= CM_PTE_DIRTY | CM_PTE_LISTED | CM_PTE_SELF;
        CM_CHECK(cm_cm_protect(p, cm_cm.write->ops->joining(cm_cm.write, p, (int)pte->home,
                                                            write)));
        pte->mapped = 1;
        cm_cm_repaint(p);
        return CM_OK;
    }
    cm_refetch_fault(p, false);
    CM_CHECK(cm_prefetch_issue(p)); /* its neighbours' entries ride with our join */
    CM_CHECK(cm_cm_fault_join(p, &e, &fx));
    if (fx.claimed_home) {
        cm_cm.st.home_migrations++;
    }
    CM_CHECK(CM_STATS_IN_PHASE(&cm_cm.st.page_copy_ns,
                               cm_cm.fill->ops->map(cm_cm.fill, p, (int)e.home, fx.claimed_home,
                                                    whole)));
    pte->flags &= CM_PTE_DIRTY | CM_PTE_LISTED; /* a store may have been recorded just before it faulted */
    CM_CHECK(cm_cm_protect(p, cm_cm.write->ops->joining(cm_cm.write, p, (int)e.home, write)));
    pte->mapped = 1;
    pte->home   = (uint8_t)e.home;
    cm_cm_repaint(p);
    if (cm_cm_add_form()) {
        CM_CHECK(cm_cm_join_tell(p, &fx));
    }
    CM_CHECK(cm_cm_effects(p, &e, &fx));
    return cm_prefetch_complete();
}

static cm_status_t cm_cm_fault_page(uint64_t p, bool write, bool whole)
{
    uint64_t waits = 0, claims = cm_cm.st.home_migrations;
    cm_status_t status;

    cm_rma_hold_begin(cm_cm.rma);
    status = CM_RMA_COUNT_WAITS(&waits, CM_STATS_IN_PHASE(&cm_cm.st.fault_ns,
                                                          cm_cm_fault_page_in(p, write, whole)));
    cm_rma_hold_end(cm_cm.rma);
    if (cm_cm.st.home_migrations != claims) {
        cm_cm.st.waits_first_touch += waits;
    } else if (write) {
        cm_cm.st.waits_write_fault += waits;
    } else {
        cm_cm.st.waits_read_fault += waits;
    }
    return status;
}

static cm_status_t cm_cm_fault(void *addr, bool write)
{
    return cm_cm_fault_page(cm_cm_page((uintptr_t)addr), write, true);
}

cm_status_t cm_cm_join(uint64_t p, bool write)
{
    return cm_cm_fault_page(p, write, false);
}

/* The shadow of page p (n bytes at sh): the fill mechanism's lines, the write mechanism's
 * answer for stores. The shadow layer calls it for a shadow page's first use. */
static void cm_cm_paint(uint64_t p, uint8_t *sh, size_t n)
{
    bool w = cm_cm.write->ops->armed(cm_cm.write, p);

    if (cm_cm.fill->ops->paint != NULL) {
        cm_cm.fill->ops->paint(cm_cm.fill, p, sh, n, w);
    } else {
        memset(sh, w ? 0xff : 0, n);
    }
}

void cm_cm_repaint(uint64_t p)
{
    size_t n;
    uint8_t *sh = cm_shadow_page(p, &n);

    if (sh != NULL) {
        cm_cm_paint(p, sh, n);
    }
}

/* Software access checks (fills with an access op): stores and loads reach the fill first;
 * wrote: the bytes were written already, by libc or the runtime for the program. */
static inline void cm_cm_access_write(uintptr_t addr, size_t len, bool wrote)
{
    cm_cm.fill->ops->access(cm_cm.fill, addr, len, true, wrote);
    if (cm_cm.write->ops->store != NULL) {
        cm_cm.write->ops->store(addr, len);
    }
}

/* The program's own checks enter the runtime here, on its thread: what the fill or the write
 * mechanism allocates (a directory join or a line get may make UCX allocate) must stay with
 * libc, not take replica-heap blocks that only process 0 would then have taken before CREATE
 * (the workers' malloc pointers came out shifted: p_ptrs read zeros, now and then, under NSHM). */
static void cm_cm_access_store(uintptr_t addr, size_t len)
{
    CM_RT_ENTER();
    cm_cm_access_write(addr, len, false);
    CM_RT_LEAVE();
}

/* cm_hook_store's reports. */
static void cm_cm_access_wrote(uintptr_t addr, size_t len)
{
    cm_cm_access_write(addr, len, true);
}

static void cm_cm_access_load(uintptr_t addr, size_t len)
{
    CM_RT_ENTER();
    cm_cm.fill->ops->access(cm_cm.fill, addr, len, false, false);
    CM_RT_LEAVE();
}

/* ---- invalidation ------------------------------------------------------------- */

/* The write mechanism's work at synchronization, timed as write-through (Fig. 2). */
static cm_status_t cm_cm_settle(uint64_t p)
{
    if (cm_cm.write->ops->settle == NULL) {
        return CM_OK;
    }
    return CM_STATS_IN_PHASE(&cm_cm.st.write_through_ns,
                             cm_cm.write->ops->settle(cm_cm.write, p));
}

static void cm_cm_write_flush(void)
{
    uint64_t *outer = cm_stats_phase_enter(&cm_cm.st.write_through_ns);

    cm_cm.write->ops->flush(cm_cm.write);
    cm_stats_phase_leave(outer);
}

static uint64_t cm_cm_puts_issued(void)
{
    cm_rma_stats_t r;

    cm_rma_get_stats(cm_cm.rma, &r);
    return r.puts;
}

/* Our forwarded stores and notices complete at their targets. */
static cm_status_t cm_cm_complete(void)
{
    cm_cm.puts_complete = cm_cm_puts_issued();
    return CM_STATS_IN_PHASE(&cm_cm.st.write_through_ns, cm_rma_flush_all(cm_cm.rma));
}

static cm_status_t cm_cm_invalidate(uint64_t p)
{
    cm_pte_t *pte = &cm_cm.pte[p];
    cm_dir_entry_t e;
    cm_dir_effects_t fx;

    if (!pte->mapped) {
        if (cm_refetch_held(p) && cm_refetch_unused(p)) {
            /* Refetched at the last two acquires and not used since: it leaves now. */
            return cm_dir_update(&cm_cm.dir, p, CM_DIR_LEAVE, NULL, NULL, &e, &fx);
        }
        return CM_OK; /* not here, or held by this acquire already */
    }
    CM_CHECK(cm_cm_settle(p));
    if ((pte->flags & CM_PTE_DIRTY) && !(pte->flags & CM_PTE_PROCESSED)) {
        /* Written and about to be dropped: its notices must not wait for our release. */
        CM_CHECK(cm_cm_write_transition(p));
    }
    CM_CHECK(cm_cm.fill->ops->drop(cm_cm.fill, p));
    if (cm_cm.write->ops->dropped != NULL) {
        cm_cm.write->ops->dropped(cm_cm.write, p);
    }
    cm_cm.st.invalidations++;
    /* A writer that did not write it since its mapping leaves instead: held, it would keep its
     * writer bit, and the page WEAK for every other sharer at every acquire. */
    if (!(pte->flags & CM_PTE_UNSAFE) &&
        ((pte->flags & CM_PTE_PROCESSED) || !cm_dir_is_writer(&cm_cm.dir, p)) &&
        cm_refetch_hold(p)) {
        /* Used since its copy was made: copied again at this acquire's end, still a sharer. */
        pte->mapped = 0;
        pte->flags &= CM_PTE_LISTED;
        cm_cm_repaint(p);
        return CM_OK;
    }
    CM_CHECK(cm_dir_update(&cm_cm.dir, p, CM_DIR_LEAVE, NULL, NULL, &e, &fx));
    cm_assert(!(e.sharers & (1ull << cm_cm.me)) && !(e.writers & (1ull << cm_cm.me)));
    if (!(pte->flags & CM_PTE_UNSAFE)) {
        cm_refetch_left(p); /* one that could have been held */
    }
    pte->mapped = 0;
    pte->flags &= CM_PTE_LISTED; /* still on the dirty list: no second entry */
    cm_cm_repaint(p);
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
        if (cm_cm.pte[p].mapped || cm_refetch_held(p)) {
            CM_CHECK(cm_cm_invalidate(p));
        }
    }
    return CM_OK;
}

/* ---- release / acquire ------------------------------------------------------ */

/*
 * A dirty page's write transition at a release. The add form's goes into the release's batch
 * (a fetching add, its word due at the release's flush); a writer already, a word not seen, or
 * another form's: at once.
 */
static cm_status_t cm_cm_release_page(uint64_t p, uint64_t *batched)
{
    bool issued = false;

    if (cm_cm_add_form()) {
        CM_CHECK(cm_dir_add_write_nbi(&cm_cm.dir, p, &cm_cm.wold[*batched], &issued));
    }
    if (!issued) {
        return cm_cm_write_transition(p);
    }
    cm_cm.wpage[(*batched)++] = (uint32_t)p;
    cm_cm.pte[p].flags |= CM_PTE_PROCESSED;
    return CM_OK;
}

/* The add form's batch of n WRITEs: their words, with the write-throughs, at one flush; then
 * the notices they call for, committed and flushed: two round trips whatever the pages. */
static cm_status_t cm_cm_release_batch(uint64_t n)
{
    if (n > 0) {
        CM_CHECK(cm_cm_complete());
    }
    for (uint64_t i = 0; i < n; i++) {
        cm_dir_entry_t e;
        cm_dir_effects_t fx;
        CM_CHECK(cm_dir_add_write_done(&cm_cm.dir, cm_cm.wpage[i], cm_cm.wold[i], &e, &fx));
        CM_CHECK(cm_cm_effects(cm_cm.wpage[i], &e, &fx));
    }
    CM_CHECK(cm_wn_bin_commit(&cm_cm.bins));
    return cm_cm_complete();
}

static cm_status_t cm_cm_release_in(void)
{
    uint64_t batched = 0;

    cm_cm.st.releases++;
    cm_cm_write_flush();
    for (uint64_t i = 0; i < cm_cm.dirty.n; i++) {
        uint64_t p = cm_cm.dirty.v[i];
        cm_pte_t *pte = &cm_cm.pte[p];
        cm_assert(p < cm_cm.npages && (pte->flags & CM_PTE_LISTED)); /* listed once, flagged */
        CM_CHECK(cm_cm_settle(p));
        if (pte->mapped && (pte->flags & CM_PTE_DIRTY) && !(pte->flags & CM_PTE_PROCESSED)) {
            CM_CHECK(cm_cm_release_page(p, &batched));
        }
        pte->flags &= (uint8_t)~(CM_PTE_DIRTY | CM_PTE_LISTED);
    }
    cm_cm.dirty.n = 0;
    if (cm_cm_add_form()) {
        return cm_cm_release_batch(batched);
    }
    /* Write-throughs and notices complete before anyone can see the release. */
    return cm_cm_complete();
}

/* A release or an acquire: its operations issued under one hold of the worker
 * (cm_rma_hold_begin), its waits and time counted. */
static cm_status_t cm_cm_event(cm_status_t (*fn)(void), uint64_t *waits, uint64_t *ns)
{
    return cm_protocol_event(cm_cm.rma, fn, waits, ns);
}

static cm_status_t cm_cm_release(void)
{
    return cm_cm_event(cm_cm_release_in, &cm_cm.st.waits_release, &cm_cm.st.release_ns);
}

static cm_status_t cm_cm_acquire_in(void)
{
    uint64_t kept = 0;
    bool overflow = false;

    cm_cm.st.acquires++;
    /* Our own forwarded stores land before we might copy a page back in: a flush where a put
     * went out since the last one. Not otherwise: it would wait for whatever else is in
     * flight, such as the compare-and-swap of a lock release just before (water across two
     * hosts: half its acquires waited a round trip for it). Batched stores wait for their
     * acknowledgements in the write mechanism's flush. */
    cm_cm_write_flush();
    if (cm_cm_puts_issued() != cm_cm.puts_complete) {
        CM_CHECK(cm_cm_complete());
    }

    if (cm_cm_add_form()) {
        CM_CHECK(cm_wn_bin_drain(&cm_cm.bins, cm_cm_invalidate_visit, NULL, &overflow));
    } else {
        CM_CHECK(cm_wn_drain(&cm_cm.wn, cm_cm_invalidate_visit, NULL, &overflow));
    }
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
    if (cm_cm_add_form()) {
        /* Notices of pages written and dropped here (cm_cm_invalidate): out before our next
         * release's flush. */
        CM_CHECK(cm_wn_bin_commit(&cm_cm.bins));
    }
    return cm_refetch_complete();
}

static cm_status_t cm_cm_acquire(void)
{
    return cm_cm_event(cm_cm_acquire_in, &cm_cm.st.waits_acquire, &cm_cm.st.acquire_ns);
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
    if (cm_cm.write->ops->reset != NULL) {
        /* Before the page table goes: the mechanism may be reading it. */
        cm_cm.write->ops->reset(cm_cm.write);
    }
    if (mprotect(cm_cm.app, cm_cm.npages << cm_cm.shift, PROT_NONE) != 0) {
        cm_error("mprotect of the shared region failed: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    cm_mem_zero(cm_cm.pte, cm_cm.npages * sizeof(*cm_cm.pte)); /* committed where touched only */
    CM_CHECK(cm_shadow_reset()); /* every page armed again, filled on next use */
    cm_cm.dirty.n  = 0;
    cm_cm.unsafe.n = 0;
    cm_cm.selfn.n  = 0;
    cm_refetch_reset();
    cm_dir_reset_local(&cm_cm.dir);
    cm_wn_reset_local(&cm_cm.wn);
    if (cm_cm_add_form()) {
        cm_mem_zero(cm_cm.found, cm_cm.npages * sizeof(*cm_cm.found));
        CM_CHECK(cm_wn_bin_reset_local(&cm_cm.bins));
    }
    CM_CHECK(cm_barrier_wait(&cm_cm.barrier));
    cm_cm.dir.first_touch = cm_cm.first_touch;
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

static cm_status_t cm_cm_locks_resolve(void);

static cm_status_t cm_cm_barrier(void)
{
    CM_CHECK(cm_cm_release());
    CM_CHECK(CM_RMA_COUNT_WAITS(&cm_cm.st.waits_lock, cm_cm_locks_resolve()));
    CM_CHECK(CM_RMA_COUNT_WAITS(&cm_cm.st.waits_barrier,
                                CM_STATS_IN_PHASE(&cm_cm.st.barrier_ns,
                                                  cm_barrier_wait(&cm_cm.barrier))));
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
    uint64_t *tail;
    cm_mcs_qnode_t *q;

    cm_cm_lock_addr(id, &home, &tail, &q);
    CM_CHECK(CM_RMA_COUNT_WAITS(
        &cm_cm.st.waits_lock,
        CM_STATS_IN_PHASE(&cm_cm.st.lock_wait_ns,
                          (cm_cm.lz != NULL)
                              ? cm_mcs_acquire_lazy(cm_cm.rma, home, tail, q, &cm_cm.lz[id])
                              : cm_mcs_acquire(cm_cm.rma, home, tail, q, NULL))));
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
    if (cm_cm.lz == NULL) {
        return CM_RMA_COUNT_WAITS(&cm_cm.st.waits_lock,
                                  cm_mcs_release(cm_cm.rma, home, tail, q, NULL, NULL, NULL));
    }
    /* The add form's lock: its release waits for nothing unless a successor is queued. */
    if (!cm_cm.lz[id].listed) {
        cm_cm.lz[id].listed     = true;
        cm_cm.lzq[cm_cm.nlzq++] = id;
    }
    CM_CHECK(CM_RMA_COUNT_WAITS(&cm_cm.st.waits_lock,
                                cm_mcs_release_lazy(cm_cm.rma, home, tail, q, &cm_cm.lz[id])));
    return CM_OK;
}

/* Every lock release not waited for is over before a barrier: nothing is in flight across it
 * (nor into cm_finalize's, after which the queue nodes go). */
static cm_status_t cm_cm_locks_resolve(void)
{
    for (uint32_t i = 0; i < cm_cm.nlzq; i++) {
        int home;
        uint64_t *tail;
        cm_mcs_qnode_t *q;

        cm_cm_lock_addr(cm_cm.lzq[i], &home, &tail, &q);
        CM_CHECK(cm_mcs_resolve(cm_cm.rma, q, &cm_cm.lz[cm_cm.lzq[i]]));
        cm_cm.lz[cm_cm.lzq[i]].listed = false;
    }
    cm_cm.nlzq = 0;
    return CM_OK;
}

/* ---- statistics ------------------------------------------------------------ */

static void cm_cm_stats(cm_stats_t *s)
{
    cm_rma_stats_t r;

    *s = cm_cm.st;
    cm_protocol_stats_rma(cm_cm.rma, &cm_cm.rma_base, s, &r);
    s->total_ns           = cm_time_ns() - cm_cm.t_start;
    s->dir_updates        = cm_cm.dir.updates;
    s->home_joins         = cm_cm.dir.home_joins;
    s->dir_retries        = cm_cm.dir.retries;
    s->notices_posted     = cm_cm.wn.posted + cm_cm.bins.posted;
    s->notices_suppressed = cm_cm.wn.suppressed;
    s->notices_drained    = cm_cm.wn.drained + cm_cm.bins.drained;
    s->ring_overflows     = cm_cm.wn.overflows + cm_cm.bins.overflows;
    s->msgs               = r.am_sent; /* write-through batches and their acknowledgements */
    s->msg_bytes          = r.am_bytes_sent;
    if (cm_cm.write->ops->stats != NULL) {
        cm_cm.write->ops->stats(cm_cm.write, s);
    }
}

static void cm_cm_stats_reset(void)
{
    memset(&cm_cm.st, 0, sizeof(cm_cm.st));
    cm_cm.dir.updates = cm_cm.dir.retries = cm_cm.dir.home_joins = 0;
    cm_cm.wn.posted = cm_cm.wn.suppressed = cm_cm.wn.drained = cm_cm.wn.overflows = 0;
    cm_cm.wn.full = 0;
    cm_cm.bins.posted = cm_cm.bins.drained = cm_cm.bins.overflows = 0;
    cm_rma_get_stats(cm_cm.rma, &cm_cm.rma_base);
    if (cm_cm.write->ops->stats_reset != NULL) {
        cm_cm.write->ops->stats_reset(cm_cm.write);
    }
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

static cm_status_t cm_cm_init(const cm_protocol_ctx_t *ctx)
{
    const cm_config_t *cfg = ctx->config;
    const cm_variant_info_t *row = &cm_variants[cfg->variant];
    const cm_fill_ops_t *fill;
    const cm_write_ops_t *write;
    cm_dir_impl_t impl;
    cm_dir_seg_t dseg;
    cm_wn_seg_t wseg;

    cm_stats_phase_base(&cm_cm.st);
    if (row->merge == CM_MERGE_BUFFER && cfg->merge_lines == 0) {
        cm_error("CM_MERGE_LINES=0: %s needs a merge buffer of at least one line (%.3sN is the "
                 "variant without one)", row->name, row->name);
        return CM_ERR_INVALID;
    }
    memset(&cm_cm, 0, sizeof(cm_cm));
    cm_cm.variant    = (cm_variant_t)cfg->variant;
    CM_CHECK(cm_cm_select(cm_cm.variant, &fill, &write, &cm_cm.merge));
    cm_cm.vname       = row->name;
    cm_cm.load_checks = fill->access != NULL;
    cm_cm.whole_pages = fill->copies;
    cm_cm.me         = ctx->rank;
    cm_cm.nprocs     = ctx->nprocs;
    cm_cm.rma        = ctx->rma;
    cm_cm.app        = ctx->app;
    cm_cm.net        = ctx->net;
    cm_cm.ps         = ctx->page_size;
    cm_cm.shift      = (unsigned)__builtin_ctzll(ctx->page_size);
    cm_cm.npages     = ctx->npages;
    cm_cm.meta_base  = ctx->meta_base;
    cm_cm.meta       = ctx->meta;
    cm_cm.check      = cfg->check_stores;
    cm_cm.first_touch = cfg->first_touch;
    cm_cm.init_phase = true;

    switch ((cm_directory_kind_t)cfg->directory) {
    case CM_DIRECTORY_MCS:
        impl = CM_DIR_IMPL_MCS;
        break;
    case CM_DIRECTORY_CAS:
        impl = CM_DIR_IMPL_CAS;
        break;
    case CM_DIRECTORY_ADD:
        impl = CM_DIR_IMPL_ADD;
        break;
    default:
        /* The add form where its word fits: it waits least (experiments/README.md). */
        impl = (cm_cm.nprocs <= CM_DIR_MAX_PROCS_CAS) ? CM_DIR_IMPL_ADD : CM_DIR_IMPL_MCS;
        break;
    }
    dseg = cm_meta_dir_seg(cm_cm.meta, cm_cm.meta_base);
    wseg = cm_meta_wn_seg(cm_cm.meta, cm_cm.meta_base);
    CM_CHECK(cm_dir_init(&cm_cm.dir, cm_cm.rma, impl, &dseg, (unsigned)cfg->unsafe_threshold));
    CM_CHECK(cm_wn_init(&cm_cm.wn, cm_cm.rma, &wseg));
    if (cm_cm_add_form()) {
        cm_wn_bin_seg_t bseg = cm_meta_wn_bin_seg(cm_cm.meta, cm_cm.meta_base);
        CM_CHECK(cm_wn_bin_init(&cm_cm.bins, cm_cm.rma, &bseg));
        /* Reserved: a release batches as many WRITEs as it has dirty pages. */
        cm_cm.wold  = cm_mem_reserve(cm_cm.npages * sizeof(*cm_cm.wold));
        cm_cm.wpage = cm_mem_reserve(cm_cm.npages * sizeof(*cm_cm.wpage));
        cm_cm.found = cm_mem_reserve(cm_cm.npages * sizeof(*cm_cm.found));
        if (cm_cm.wold == NULL || cm_cm.wpage == NULL || cm_cm.found == NULL) {
            cm_error("cashmere: out of memory for the add form's state of %" PRIu64 " pages",
                     cm_cm.npages);
            return CM_ERR_NO_MEMORY;
        }
        /* Its application locks' releases wait for nothing (locks/cm_mcs.h). */
        cm_cm.lz  = calloc(cm_cm.meta->nlocks, sizeof(*cm_cm.lz));
        cm_cm.lzq = malloc(cm_cm.meta->nlocks * sizeof(*cm_cm.lzq));
        if (cm_cm.lz == NULL || cm_cm.lzq == NULL) {
            cm_error("cashmere: out of memory for the state of %u locks", cm_cm.meta->nlocks);
            return CM_ERR_NO_MEMORY;
        }
    }
    cm_barrier_init(&cm_cm.barrier, cm_cm.rma,
                    (uint64_t *)(cm_cm.meta_base + cm_cm.meta->barrier_flags));

    /* Per page of the region, reserved: a process pays for the pages it touches. */
    cm_cm.pte      = cm_mem_reserve(cm_cm.npages * sizeof(*cm_cm.pte));
    cm_cm.dirty.v  = malloc(cm_cm.npages * sizeof(uint32_t));
    cm_cm.unsafe.v = malloc(cm_cm.npages * sizeof(uint32_t));
    cm_cm.selfn.v  = malloc(cm_cm.npages * sizeof(uint32_t));
    cm_cm.home_delta = calloc((size_t)cm_cm.nprocs, sizeof(*cm_cm.home_delta));
    if (cm_cm.pte == NULL || cm_cm.dirty.v == NULL || cm_cm.unsafe.v == NULL ||
        cm_cm.selfn.v == NULL || cm_cm.home_delta == NULL) {
        cm_error("cashmere: out of memory for the page table of %" PRIu64 " pages", cm_cm.npages);
        return CM_ERR_NO_MEMORY;
    }
    for (int pe = 0; pe < cm_cm.nprocs; pe++) {
        char *home = (pe == cm_cm.me) ? NULL : cm_rma_store_ptr(cm_cm.rma, pe, cm_cm.net);
        cm_cm.home_delta[pe] = (home != NULL) ? home - cm_cm.app : 0;
    }
    CM_CHECK(write->init(ctx, cm_cm.merge, &cm_cm.write));
    cm_cm.write->ops = write;
    CM_CHECK(fill->init(ctx, &cm_cm.fill));
    cm_cm.fill->ops = fill;
    /* auto: only where some home is reached over a network, and with the CAS form. Where
     * every peer's memory is mapped here, the round trips refetching saves are loads and
     * stores, and copying pages eagerly at every acquire cost more (water, 4 processes, one
     * host: 0.0145 -> 0.017 s). Under the add form a fault's join and copy are one round trip
     * already, and refetching lost more than it saved (docs/ARCHITECTURE.md: CM_REFETCH=used
     * 0.94-1.33x of paper across two hosts, slower on all but one): CM_REFETCH=used only. */
    cm_prefetch_init((unsigned)cfg->prefetch, cm_cm.fill->ops->copies && impl == CM_DIR_IMPL_CAS);
    CM_CHECK(cm_refetch_init(cm_cm.fill->ops->copies && impl != CM_DIR_IMPL_MCS &&
                                 (cfg->refetch == CM_REFETCH_USED ||
                                  (cfg->refetch == CM_REFETCH_AUTO && impl == CM_DIR_IMPL_CAS &&
                                   !cm_rma_all_mapped(cm_cm.rma))),
                             cfg->refetch == CM_REFETCH_AUTO, cm_prefetch_on()));

    /* Every page starts unmapped: its first access faults and joins the directory. */
    if (mprotect(cm_cm.app, cm_cm.npages << cm_cm.shift, PROT_NONE) != 0) {
        cm_error("mprotect of the shared region failed: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    CM_CHECK(cm_shadow_attach(cm_cm.app, cm_cm.npages, cm_cm.ps, cm_cm_paint));
    if (cm_cm.fill->ops->access != NULL) {
        cm_hooks_set_range((uintptr_t)cm_cm.app, cm_cm.npages << cm_cm.shift, cm_cm_access_store);
        cm_hooks_set_access(cm_cm_access_load, cm_cm_access_wrote);
    } else if (cm_cm.write->ops->store != NULL) {
        cm_hooks_set_range((uintptr_t)cm_cm.app, cm_cm.npages << cm_cm.shift,
                           cm_cm.write->ops->store);
    }

    snprintf(cm_cm.describe, sizeof(cm_cm.describe),
             "cashmere %s: %.2s: %s; %c: %s%s%s; %c: %s%s%s; directory: %s; homes: round-robin, "
             "then %s", row->name,
             row->name, cm_variant_mechanism(cm_cm.variant, 0),
             row->name[2], cm_variant_mechanism(cm_cm.variant, 2),
             cm_cm.write_note ? ", " : "", cm_cm.write_note ? cm_cm.write_note : "",
             row->name[3], cm_variant_mechanism(cm_cm.variant, 3),
             row->note[0] ? "; note: " : "", row->note,
             (impl == CM_DIR_IMPL_CAS)   ? "compare-and-swap word"
             : (impl == CM_DIR_IMPL_ADD) ? "fetching adds, per-sender notice bins"
                                         : "MCS lock per entry",
             cfg->first_touch ? "first touch after initialization" : "fixed");
    if (cm_cm.fill->ops->copies) {
        size_t len = strlen(cm_cm.describe);
        snprintf(cm_cm.describe + len, sizeof(cm_cm.describe) - len, "; invalidated pages: %s",
                 !cm_refetch_held_on()
                     ? ((cfg->refetch == CM_REFETCH_PAPER)
                            ? "leave, copied again at their next fault (CM_REFETCH=paper)"
                        : (impl == CM_DIR_IMPL_MCS)
                            ? "leave, copied again at their next fault (refetch needs a "
                              "one-word directory: add or cas)"
                        : (impl == CM_DIR_IMPL_ADD)
                            ? "leave, copied again at their next fault (CM_REFETCH=auto: the "
                              "add form's fault joins and copies in one round trip; "
                              "CM_REFETCH=used refetches)"
                            : "leave, copied again at their next fault (CM_REFETCH=auto: every "
                              "home is mapped here)")
                 : (cfg->refetch == CM_REFETCH_AUTO)
                     ? "refetched at the acquire if used since their copy, while that pays "
                       "(CM_REFETCH=auto)"
                     : "refetched at the acquire if used since their copy (CM_REFETCH=used)");
        len = strlen(cm_cm.describe);
        if (cm_prefetch_on()) {
            snprintf(cm_cm.describe + len, sizeof(cm_cm.describe) - len,
                     "; a miss prefetches its block of %lu pages (CM_PREFETCH)",
                     (unsigned long)cfg->prefetch);
        } else if (cfg->prefetch > 1) {
            snprintf(cm_cm.describe + len, sizeof(cm_cm.describe) - len,
                     "; no prefetch on a miss (CM_PREFETCH needs the compare-and-swap directory)");
        }
    }
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
    cm_refetch_fini();
    if (cm_cm.fill->ops->fini != NULL) {
        cm_cm.fill->ops->fini(cm_cm.fill);
    }
    if (cm_cm.write->ops->fini != NULL) {
        cm_cm.write->ops->fini(cm_cm.write);
    }
    cm_cm.fill  = NULL;
    cm_cm.write = NULL;
    cm_wn_fini(&cm_cm.wn);
    if (cm_cm_add_form()) {
        cm_wn_bin_fini(&cm_cm.bins);
        cm_mem_release(cm_cm.wold, cm_cm.npages * sizeof(*cm_cm.wold));
        cm_mem_release(cm_cm.wpage, cm_cm.npages * sizeof(*cm_cm.wpage));
        cm_mem_release(cm_cm.found, cm_cm.npages * sizeof(*cm_cm.found));
        cm_assert(cm_cm.nlzq == 0); /* resolved by cm_finalize's barrier */
        free(cm_cm.lz);
        free(cm_cm.lzq);
    }
    cm_dir_fini(&cm_cm.dir);
    cm_mem_release(cm_cm.pte, cm_cm.npages * sizeof(*cm_cm.pte));
    free(cm_cm.dirty.v);
    free(cm_cm.unsafe.v);
    free(cm_cm.selfn.v);
    free(cm_cm.home_delta);
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
