/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TreadMarks pages: write notices and intervals, lazy diffs, invalidation by foreign notices,
 * access misses (a copy from the page's manager, then the missing diffs in happened-before
 * order) and the diff requests of other processes. Written pages are found by write faults,
 * or under CM_TMK_WRITE_DETECT=scan also by cm_tmk_scan.c.
 */
#define _GNU_SOURCE
#include "config.h"
#include "util/cm_log.h"
#include "util/cm_time.h"
#include "src/protocols/treadmarks/cm_tmk_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- pages, intervals, diffs -------------------------------------------------- */

cm_status_t cm_tmk_protect(uint64_t p, int prot)
{
    if (mprotect(cm_tmk_app(p), cm_tmk.ps, prot) != 0) {
        cm_error("mprotect of shared page %" PRIu64 " failed: %s", p, strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

static cm_status_t tm_ref_add(uint64_t p, cm_tmk_interval_t *iv, uint32_t k, bool applied)
{
    cm_tmk_page_t *pg = cm_tmk_touch(p);
    if (pg->nrefs == pg->cap) {
        uint32_t cap = pg->cap ? 2 * pg->cap : 4;
        cm_tmk_ref_t *n = realloc(pg->refs, cap * sizeof(*n));
        if (n == NULL) {
            return CM_ERR_NO_MEMORY;
        }
        pg->refs = n;
        pg->cap  = cap;
    }
    pg->refs[pg->nrefs++] = (cm_tmk_ref_t){iv, k, applied};
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

/*
 * Ends the open interval: one write notice per page written in it. The pages
 * are write-protected again so that the next interval's writes are seen, but
 * keep their twins: the diff is made lazily.
 */
cm_status_t cm_tmk_new_interval(void)
{
    cm_tmk_interval_t *iv;
    uint32_t vt[64];
    bool added;

    if (cm_tmk.scan && cm_tmk.np > 1) {
        CM_CHECK(CM_STATS_IN_PHASE(&cm_tmk.st.twin_diff_ns, cm_tmk_scan()));
    }
    if (cm_tmk.ndirty == 0) {
        return CM_OK;
    }
    if (cm_tmk.np == 1) {
        /* Nobody can ever ask for these writes: no notices, no write detection. */
        for (uint32_t k = 0; k < cm_tmk.ndirty; k++) {
            cm_tmk.pages[cm_tmk.dirty[k]].in_dirty = 0;
        }
        cm_tmk.ndirty = 0;
        return CM_OK;
    }
    qsort(cm_tmk.dirty, cm_tmk.ndirty, sizeof(uint32_t), tm_cmp_u32);
    memcpy(vt, cm_tmk.store.vt, (size_t)cm_tmk.np * sizeof(uint32_t));
    vt[cm_tmk.me]++;
    iv = cm_tmk_iv_new(cm_tmk.np, (uint32_t)cm_tmk.me, vt, cm_tmk.dirty, cm_tmk.ndirty);
    if (iv == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    CM_CHECK(cm_tmk_store_add(&cm_tmk.store, iv, &added));
    for (uint32_t k = 0; k < cm_tmk.ndirty; k++) {
        uint64_t p = cm_tmk.dirty[k];
        cm_tmk_page_t *pg = &cm_tmk.pages[p];
        CM_CHECK(tm_ref_add(p, iv, k, true));
        if (pg->state == TM_READ_WRITE && !cm_tmk.scan) {
            CM_CHECK(cm_tmk_protect(p, PROT_READ));
            pg->state = TM_READ_ONLY;
        }
        pg->in_dirty = 0;
    }
    cm_tmk.ndirty = 0;
    cm_tmk.st.intervals++;
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
static inline bool tm_ref_undiffed(const cm_tmk_ref_t *ref)
{
    return ref->iv->proc == (uint32_t)cm_tmk.me && ref->iv->notices[ref->k].diff == NULL;
}

static cm_status_t tm_make_diff_in(uint64_t p)
{
    cm_tmk_page_t *pg = &cm_tmk.pages[p];
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
            CM_CHECK(cm_tmk_protect(p, PROT_READ));
            cm_tmk_scan_closing(p);
            pg->state = TM_READ_ONLY;
        }
        len = cm_tmk_diff_encode(cm_tmk_net(p), pg->twin, cm_tmk.ps, cm_tmk.diffbuf);
        cm_tmk.st.diffs_created++;
        cm_tmk.st.diff_bytes_created += len;
        free(pg->twin);
        pg->twin = NULL;
    }
    for (uint32_t r = pg->undiffed; r < pg->nrefs; r++) {
        cm_tmk_ref_t *ref = &pg->refs[r];
        if (tm_ref_undiffed(ref)) {
            CM_CHECK(cm_tmk_store_set_diff(&cm_tmk.store, ref->iv, ref->k, cm_tmk.diffbuf,
                                           first ? (uint32_t)len : 0));
            first = false;
        }
    }
    pg->undiffed = pg->nrefs;
    return CM_OK;
}

static cm_status_t tm_make_diff(uint64_t p)
{
    return CM_STATS_IN_PHASE(&cm_tmk.st.twin_diff_ns, tm_make_diff_in(p));
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
    cm_tmk_page_t *pg = &cm_tmk.pages[p];

    CM_CHECK(tm_make_diff(p));
    cm_tmk_pf_invalidated(p, pg->state == TM_READ_ONLY || pg->state == TM_READ_WRITE);
    if (pg->state == TM_READ_ONLY || pg->state == TM_READ_WRITE) {
        CM_CHECK(cm_tmk_protect(p, PROT_NONE));
        cm_tmk_scan_closing(p);
        pg->state = TM_INVALID;
    }
    return CM_OK;
}

/* Takes in the intervals packed in buf (count of them), noting their write notices. */
cm_status_t cm_tmk_incorporate(const char *buf, size_t len, uint32_t count)
{
    size_t off = 0;

    for (uint32_t i = 0; i < count; i++) {
        cm_tmk_interval_t *iv;
        size_t used;
        bool added;
        CM_CHECK(cm_tmk_iv_unpack(buf + off, len - off, cm_tmk.np, &iv, &used));
        off += used;
        CM_CHECK(cm_tmk_store_add(&cm_tmk.store, iv, &added));
        if (!added) {
            continue;
        }
        for (uint32_t k = 0; k < iv->npages; k++) {
            uint64_t p = iv->notices[k].page;
            if (p >= cm_tmk.npages) {
                return CM_ERR_INVALID;
            }
            CM_CHECK(tm_ref_add(p, iv, k, false));
            CM_CHECK(tm_invalidate(p));
        }
    }
    return off == len ? CM_OK : CM_ERR_INVALID;
}

/* ---- access misses ------------------------------------------------------------------ */

static int tm_cmp_ref_hb(const void *a, const void *b)
{
    const cm_tmk_ref_t *x = *(cm_tmk_ref_t *const *)a, *y = *(cm_tmk_ref_t *const *)b;
    uint64_t sx = cm_tmk_vt_sum(x->iv->vt, cm_tmk.np), sy = cm_tmk_vt_sum(y->iv->vt, cm_tmk.np);
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
    cm_tmk_asked(pe);
    status = cm_tmk_post(pe, TM_DIFF_REQ, msg, len);
    free(msg);
    return status;
}

/* Until every requested page and diff is here (their replies may be served meanwhile). */
static void tm_wait_replies(void)
{
    uint64_t *outer = cm_stats_phase_enter(&cm_tmk.st.data_wait_ns);

    cm_tmk_wait_zero(&cm_tmk.pending,
                     CM_RMA_WHY("the replies to %a diff and page requests", NULL,
                                (uint64_t)atomic_load(&cm_tmk.pending), 0, cm_tmk.asked));
    cm_stats_phase_leave(outer);
}

/* The diffs of need[0..n) applied to p, in that order. */
static cm_status_t tm_apply_diffs(uint64_t p, cm_tmk_ref_t **need, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        cm_tmk_notice_t *nt = &need[i]->iv->notices[need[i]->k];
        if (nt->diff == NULL) {
            cm_error("treadmarks: page %" PRIu64 ": no diff for interval %u of rank %u", p,
                     need[i]->iv->index, need[i]->iv->proc);
            return CM_ERR_INVALID;
        }
        cm_status_t status = cm_tmk_diff_apply(cm_tmk_net(p), cm_tmk.ps, nt->diff, nt->diff_len);
        if (status != CM_OK) {
            cm_error("treadmarks: page %" PRIu64 ": malformed diff", p);
            return status;
        }
        need[i]->applied = 1;
        cm_tmk.st.diffs_applied++;
        cm_tmk.st.diff_bytes_applied += nt->diff_len;
    }
    return CM_OK;
}

/*
 * Brings page p up to date: its manager's copy first if we have none, then
 * the diffs of every write notice not applied yet, in happened-before order.
 * ask_only: sends the requests and returns; their replies count cm_tmk.pending
 * down (the caller waits, for several pages at once: cm_tmk_prefetch.c).
 */
static cm_status_t tm_validate(uint64_t p, bool ask_only)
{
    cm_tmk_page_t *pg = &cm_tmk.pages[p];
    cm_tmk_ref_t **need = NULL;
    cm_tmk_interval_t **newest_of = NULL;
    uint32_t nneed = 0, nnewest = 0, *pairs = NULL, *npairs = NULL;
    cm_status_t status = CM_OK;

    if (!ask_only) {
        atomic_store(&cm_tmk.pending, 0);
        cm_tmk.nmissing = 0;
    }
    if (pg->state == TM_UNMAPPED && cm_tmk_manager(p) != cm_tmk.me) {
        uint32_t req[2] = {(uint32_t)p, 0};
        cm_tmk_asked(cm_tmk_manager(p));
        CM_CHECK(cm_tmk_post(cm_tmk_manager(p), TM_PAGE_REQ, req, sizeof(req)));
        cm_tmk.st.cold_misses++;
    }
    need  = malloc((pg->nrefs ? pg->nrefs : 1) * sizeof(*need));
    pairs = malloc(2 * (size_t)(pg->nrefs ? pg->nrefs : 1) * (size_t)cm_tmk.np * sizeof(*pairs));
    npairs = calloc((size_t)cm_tmk.np, sizeof(*npairs));
    newest_of = malloc((pg->nrefs ? pg->nrefs : 1) * sizeof(*newest_of));
    if (need == NULL || pairs == NULL || npairs == NULL || newest_of == NULL) {
        status = CM_ERR_NO_MEMORY;
        goto out_free;
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
    for (int pe = 0; pe < cm_tmk.np; pe++) {
        if (npairs[pe] > 0) {
            status = tm_request_diffs(pe, p, pairs + 2 * (size_t)pe * pg->nrefs, npairs[pe]);
            if (status != CM_OK) {
                goto out_free;
            }
        }
    }
    if (ask_only) {
        goto out_free;
    }
    tm_wait_replies();
    /* A diff its holder did not have (should not happen): ask its creator. */
    if (cm_tmk.nmissing > 0) {
        uint32_t nm = cm_tmk.nmissing;
        uint32_t *miss = malloc(2 * (size_t)nm * sizeof(uint32_t));
        if (miss == NULL) {
            status = CM_ERR_NO_MEMORY;
            goto out_free;
        }
        memcpy(miss, cm_tmk.missing, 2 * (size_t)nm * sizeof(uint32_t));
        cm_tmk.nmissing = 0;
        for (uint32_t i = 0; i < nm && status == CM_OK; i++) {
            status = tm_request_diffs((int)miss[2 * i], p, miss + 2 * i, 1);
        }
        free(miss);
        if (status != CM_OK) {
            goto out_free;
        }
        tm_wait_replies();
    }
    qsort(need, nneed, sizeof(*need), tm_cmp_ref_hb);
    status = CM_STATS_IN_PHASE(&cm_tmk.st.twin_diff_ns, tm_apply_diffs(p, need, nneed));
    if (status != CM_OK) {
        goto out_free;
    }
    pg->unapplied = pg->nrefs;
    pg->state = TM_INVALID; /* valid contents, still protected */
out_free:
    free(need);
    free(newest_of);
    free(pairs);
    free(npairs);
    return status;
}

cm_status_t cm_tmk_validate(uint64_t p)
{
    return tm_validate(p, false);
}

cm_status_t cm_tmk_validate_ask(uint64_t p)
{
    return tm_validate(p, true);
}

void cm_tmk_validate_wait(void)
{
    tm_wait_replies();
}

static cm_status_t tm_fault(void *addr, bool write)
{
    uint64_t p = ((uintptr_t)addr - (uintptr_t)cm_tmk.app) >> cm_tmk.shift;
    cm_tmk_page_t *pg = cm_tmk_touch(p);
    cm_status_t status = CM_OK;
    bool ready;
    uint64_t *outer = cm_stats_phase_enter(&cm_tmk.st.fault_ns), *twin;

    cm_tmk_mu_lock();
    if (write) {
        cm_tmk.st.write_faults++;
    } else {
        cm_tmk.st.read_faults++;
    }
    ready = pg->prefetch == TM_PF_DONE || pg->prefetch == TM_PF_MISS; /* brought up to date */
    cm_tmk_pf_fault(p);
    if (pg->state == TM_UNMAPPED || pg->state == TM_INVALID) {
        if (!ready) {
            status = cm_tmk_pf_miss(p); /* its block's diffs with its own (CM_PREFETCH) */
            if (status != CM_OK) {
                goto out_unlock;
            }
        }
        status = cm_tmk_validate(p);
        if (status != CM_OK) {
            goto out_unlock;
        }
        status = cm_tmk_protect(p, PROT_READ);
        if (status != CM_OK) {
            goto out_unlock;
        }
        pg->state = TM_READ_ONLY;
    }
    if (write && pg->state == TM_READ_ONLY) {
        /* A twin left by an earlier interval stays: this interval's writes accumulate in it
         * (tm_make_diff). */
        if (pg->twin == NULL && cm_tmk.np > 1) {
            twin     = cm_stats_phase_enter(&cm_tmk.st.twin_diff_ns);
            pg->twin = malloc(cm_tmk.ps);
            if (pg->twin == NULL) {
                cm_stats_phase_leave(twin);
                cm_error("treadmarks: out of memory for the twin of page %" PRIu64, p);
                status = CM_ERR_NO_MEMORY;
                goto out_unlock;
            }
            memcpy(pg->twin, cm_tmk_net(p), cm_tmk.ps);
            cm_tmk.st.twins++;
            cm_stats_phase_leave(twin);
        }
        if (cm_tmk.scan && cm_tmk.np > 1) {
            status = cm_tmk_scan_opened(p);
            if (status != CM_OK) {
                goto out_unlock;
            }
        }
        status = cm_tmk_protect(p, PROT_READ | PROT_WRITE);
        if (status != CM_OK) {
            goto out_unlock;
        }
        pg->state = TM_READ_WRITE;
    }
    if (write) {
        cm_tmk_mark_dirty(p);
    }
out_unlock:
    cm_tmk_mu_unlock();
    cm_stats_phase_leave(outer);
    return status;
}

/* Only this thread changes the wait counters (the progress thread's waits are its own). */
cm_status_t cm_tmk_fault(void *addr, bool write)
{
    cm_status_t status;

    /* Its requests (one per writer) issued and waited for under one hold of the worker, as
     * Cashmere's faults are (cm_rma_hold_begin). */
    cm_rma_hold_begin(cm_tmk.rma);
    status = CM_RMA_COUNT_WAITS(write ? &cm_tmk.st.waits_write_fault : &cm_tmk.st.waits_read_fault,
                                tm_fault(addr, write));
    cm_rma_hold_end(cm_tmk.rma);
    return status;
}

/* ---- diff requests and replies (cm_tmk_msg.c's request handling) ---------------------------- */

/*
 * A page request: we manage page p, the requester has no copy. Our writes that no diff holds
 * yet are closed in a notice and encoded first, so that the copy sent is what our next twin
 * will hold. Sent as it was, the copy could show a word at a value that the later diff leaves
 * out because the word came back to its twin's value (a 4-byte half of a 64-bit store going
 * 0, -1, 0): the requester, applying that diff, would keep the -1 (mp_litmus refill at 3
 * processes; tests/model/treadmarks.pml with TOGGLE, and COLD_RAW for the old way).
 */
cm_status_t cm_tmk_serve_page(int src, const uint32_t *d)
{
    size_t hdr = 2 * sizeof(uint32_t);
    char *out;
    cm_status_t status;

    if (cm_tmk.pages[d[0]].twin != NULL) {
        CM_CHECK(cm_tmk_new_interval());
        CM_CHECK(tm_make_diff(d[0]));
    }
    out = malloc(hdr + cm_tmk.ps);
    if (out == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    memcpy(out, d, hdr);
    memcpy(out + hdr, cm_tmk_net(d[0]), cm_tmk.ps);
    status = cm_tmk_post(src, TM_PAGE_REPLY, out, hdr + cm_tmk.ps);
    free(out);
    return status;
}

cm_status_t cm_tmk_serve_diffs(int src, const uint32_t *d)
{
    uint32_t p = d[0], n = d[1];
    size_t hdr = (3 + 3 * (size_t)n) * sizeof(uint32_t), total = hdr;
    uint32_t *out;
    char *body;
    cm_status_t status;

    for (uint32_t i = 0; i < n; i++) {
        cm_tmk_interval_t *iv = cm_tmk_store_get(&cm_tmk.store, d[3 + 2 * i], d[4 + 2 * i]);
        int k = iv ? tm_notice_of(iv, p) : -1;
        if (k >= 0 && iv->proc == (uint32_t)cm_tmk.me && iv->notices[k].diff == NULL) {
            CM_CHECK(tm_make_diff(p)); /* lazy diffing: made when first asked for */
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
        cm_tmk_interval_t *iv = cm_tmk_store_get(&cm_tmk.store, d[3 + 2 * i], d[4 + 2 * i]);
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
    status = cm_tmk_post(src, TM_DIFF_REPLY, out, total);
    free(out);
    return status;
}

cm_status_t cm_tmk_take_diffs(const uint32_t *d)
{
    uint32_t p = d[0], n = d[1];
    size_t hdr = (3 + 3 * (size_t)n) * sizeof(uint32_t);
    const char *body = (const char *)d + hdr;

    for (uint32_t i = 0; i < n; i++) {
        uint32_t q = d[3 + 3 * i], idx = d[4 + 3 * i], dl = d[5 + 3 * i];
        cm_tmk_interval_t *iv = cm_tmk_store_get(&cm_tmk.store, q, idx);
        int k = iv ? tm_notice_of(iv, p) : -1;
        if (k < 0) {
            return CM_ERR_INVALID;
        }
        if (dl == UINT32_MAX) {
            uint32_t *m = realloc(cm_tmk.missing,
                                  2 * ((size_t)cm_tmk.nmissing + 1) * sizeof(uint32_t));
            if (m == NULL) {
                return CM_ERR_NO_MEMORY;
            }
            cm_tmk.missing = m;
            m[2 * cm_tmk.nmissing]     = q;
            m[2 * cm_tmk.nmissing + 1] = idx;
            cm_tmk.nmissing++;
            continue;
        }
        CM_CHECK(cm_tmk_store_set_diff(&cm_tmk.store, iv, (uint32_t)k, body, dl));
        body += dl;
    }
    return CM_OK;
}
