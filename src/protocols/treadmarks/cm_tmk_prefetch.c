/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Diffs fetched at the acquire (CM_REFETCH, the same setting as Cashmere's refetch: the fair
 * counterpart). The thesis's TreadMarks fetches a page's diffs at its next access; a page read
 * again after every acquire then waits one round of requests per access, one page after
 * another. Here the pages an acquire invalidates that were valid (so used since their last
 * validation) get their diff requests sent at the acquire's end, all pages together, the
 * replies awaited once, and the diffs applied in happened-before order as the access would
 * (cm_tmk_validate, which then finds nothing to ask). The page stays protected: its next
 * access only opens it, which tells the next acquire it was used. What is applied is what the
 * access would have applied: no notice arrives between the acquire and the access.
 *
 * paper: the thesis's lazy fetch; used: always; auto (default): where some peer is reached
 * over a network, while it pays, as the process's own accesses show (a prefetched page opened, against one invalidated again
 * unopened, and a page invalidated without a prefetch and accessed in the very next interval).
 */
#include "config.h"
#include "util/cm_config.h"
#include "util/cm_log.h"
#include "util/cm_mem.h"
#include "src/protocols/treadmarks/cm_tmk_int.h"

#include <inttypes.h>
#include <stdlib.h>

#define TM_PF_SCORE_MAX 16

static void tm_pf_learn(int delta)
{
    cm_tmk.pf_score += delta;
    if (cm_tmk.pf_score > TM_PF_SCORE_MAX) {
        cm_tmk.pf_score = TM_PF_SCORE_MAX;
    } else if (cm_tmk.pf_score < -TM_PF_SCORE_MAX) {
        cm_tmk.pf_score = -TM_PF_SCORE_MAX;
    }
}

cm_status_t cm_tmk_pf_init(int mode)
{
    cm_tmk.pf_mode = mode;
    /* auto: only where some peer is reached over a network (as Cashmere's refetch). */
    if (mode == CM_REFETCH_PAPER || cm_tmk.np == 1 ||
        (mode == CM_REFETCH_AUTO && cm_rma_all_mapped(cm_tmk.rma))) {
        cm_tmk.pf_mode = CM_REFETCH_PAPER;
        return CM_OK;
    }
    cm_tmk.pf_score = TM_PF_SCORE_MAX;
    cm_tmk.pf_epoch = 1;
    cm_tmk.pf_list  = cm_mem_reserve(cm_tmk.npages * sizeof(*cm_tmk.pf_list));
    cm_tmk.pf_left  = cm_mem_reserve(cm_tmk.npages * sizeof(*cm_tmk.pf_left));
    if (cm_tmk.pf_list == NULL || cm_tmk.pf_left == NULL) {
        cm_error("treadmarks: out of memory for the prefetch lists of %" PRIu64 " pages",
                 cm_tmk.npages);
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

void cm_tmk_pf_fini(void)
{
    if (cm_tmk.pf_list != NULL) {
        cm_mem_release(cm_tmk.pf_list, cm_tmk.npages * sizeof(*cm_tmk.pf_list));
    }
    if (cm_tmk.pf_left != NULL) {
        cm_mem_release(cm_tmk.pf_left, cm_tmk.npages * sizeof(*cm_tmk.pf_left));
    }
    cm_tmk.pf_list = cm_tmk.pf_left = NULL;
}

void cm_tmk_pf_invalidated(uint64_t p, bool used)
{
    cm_tmk_page_t *pg = &cm_tmk.pages[p];

    if (pg->prefetch == TM_PF_MISS) {
        pg->prefetch = TM_PF_NONE; /* brought by a neighbour's miss, never opened */
        return;
    }
    if (cm_tmk.pf_mode == CM_REFETCH_PAPER) {
        return;
    }
    if (pg->prefetch == TM_PF_DONE) {
        pg->prefetch = TM_PF_NONE; /* prefetched, never opened: for nothing */
        tm_pf_learn(-1);
        return;
    }
    if (!used || pg->prefetch == TM_PF_QUEUED) {
        return;
    }
    if (cm_tmk.pf_mode == CM_REFETCH_AUTO && cm_tmk.pf_score <= 0) {
        cm_tmk.pf_left[p] = cm_tmk.pf_epoch + 1; /* the interval this acquire begins */
        return;
    }
    pg->prefetch = TM_PF_QUEUED;
    cm_tmk.pf_list[cm_tmk.npf++] = (uint32_t)p;
}

void cm_tmk_pf_fault(uint64_t p)
{
    cm_tmk_page_t *pg = &cm_tmk.pages[p];

    if (pg->prefetch == TM_PF_MISS) {
        pg->prefetch = TM_PF_NONE;
        cm_tmk.st.prefetch_used++;
        return;
    }
    if (cm_tmk.pf_mode == CM_REFETCH_PAPER) {
        return;
    }
    if (pg->prefetch == TM_PF_DONE) {
        pg->prefetch = TM_PF_NONE;
        cm_tmk.st.refetch_used++;
        tm_pf_learn(+1);
    } else if (cm_tmk.pf_left[p] == cm_tmk.pf_epoch) {
        cm_tmk.pf_left[p] = 0;
        tm_pf_learn(+1); /* invalidated at this interval's acquire, and needed in it */
    }
}

/*
 * Brings the invalid pages among list[0..n) up to date in one batch: their diff requests (and
 * those of page `with`, if not UINT64_MAX, whose own access applies them) go out together,
 * the replies are awaited once, and each page's diffs are applied in happened-before order as
 * its access would (cm_tmk_validate then asks nothing). Each page brought is marked `mark` and
 * counted in *count; the others are left unmarked. A diff its holder lacked: no page is
 * brought, each one's access asks again (the creator).
 */
static cm_status_t tm_pf_bring(const uint32_t *list, uint32_t n, uint64_t with, uint8_t mark,
                               uint64_t *count)
{
    cm_status_t status = CM_OK;

    atomic_store(&cm_tmk.pending, 0);
    cm_tmk.nmissing = 0;
    if (with != UINT64_MAX && cm_tmk.pages[with].state == TM_INVALID) {
        status = cm_tmk_validate_ask(with);
    }
    for (uint32_t i = 0; i < n && status == CM_OK; i++) {
        if (cm_tmk.pages[list[i]].state == TM_INVALID) { /* not opened since (garbage collection) */
            status = cm_tmk_validate_ask(list[i]);
        }
    }
    cm_tmk_validate_wait();
    for (uint32_t i = 0; i < n && status == CM_OK; i++) {
        cm_tmk_page_t *pg = &cm_tmk.pages[list[i]];
        pg->prefetch = TM_PF_NONE;
        if (pg->state != TM_INVALID || cm_tmk.nmissing > 0) {
            continue;
        }
        status = cm_tmk_validate(list[i]); /* every diff is here: applies them, asks nothing */
        if (status == CM_OK) {
            pg->prefetch = mark;
            (*count)++;
        }
    }
    cm_tmk.nmissing = 0;
    return status;
}

cm_status_t cm_tmk_pf_acquired(void)
{
    uint32_t n = cm_tmk.npf;

    if (cm_tmk.pf_mode == CM_REFETCH_PAPER) {
        return CM_OK;
    }
    cm_tmk.pf_epoch++;
    cm_tmk.npf = 0;
    if (n == 0) {
        return CM_OK;
    }
    return tm_pf_bring(cm_tmk.pf_list, n, UINT64_MAX, TM_PF_DONE, &cm_tmk.st.pages_refetched);
}

/*
 * Prefetch on a miss (CM_PREFETCH, the counterpart of Cashmere's, cm_prefetch.h): the diff
 * requests of the block's other invalid pages go out with the faulting page's (tm_pf_bring).
 * Cold pages (never copied) are left to their access: their manager's copy is a page, not a
 * diff.
 */
cm_status_t cm_tmk_pf_miss(uint64_t p)
{
    uint32_t list[64], n = 0;
    uint64_t first;

    if (cm_tmk.pf_block <= 1 || cm_tmk.np == 1) {
        return CM_OK;
    }
    first = p - p % cm_tmk.pf_block;
    for (uint64_t q = first; q < first + cm_tmk.pf_block && q < cm_tmk.npages; q++) {
        if (q != p && cm_tmk.pages[q].state == TM_INVALID &&
            cm_tmk.pages[q].prefetch == TM_PF_NONE) {
            list[n++] = (uint32_t)q;
        }
    }
    if (n == 0) {
        return CM_OK;
    }
    return tm_pf_bring(list, n, p, TM_PF_MISS, &cm_tmk.st.pages_prefetched);
}
