/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "writenotice/cm_wn.h"
#include "util/cm_trace.h"
#include "util/cm_error.h"
#include "util/cm_log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

cm_status_t cm_wn_init(cm_wn_t *wn, cm_rma_t *rma, const cm_wn_seg_t *seg)
{
    memset(wn, 0, sizeof(*wn));
    wn->rma     = rma;
    wn->rank    = cm_rma_rank(rma);
    wn->ctl     = (uint64_t *)(seg->base + seg->ctl);
    wn->slots   = (uint64_t *)(seg->base + seg->slots);
    wn->pending = (uint64_t *)(seg->base + seg->pending);
    wn->cap     = seg->cap;
    wn->npages  = seg->npages;
    wn->guess   = calloc((size_t)cm_rma_nprocs(rma), sizeof(*wn->guess));
    if (wn->guess == NULL) {
        cm_error("write notices: out of memory");
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

void cm_wn_fini(cm_wn_t *wn)
{
    free(wn->guess);
    wn->guess = NULL;
}

uint64_t cm_wn_reserve_next(uint64_t cur, uint32_t cap, bool *reserved)
{
    uint32_t head = CM_WN_HEAD(cur), tail = CM_WN_TAIL(cur);

    if (tail - head < cap) {
        *reserved = true;
        return cur + 1; /* tail stays below 2^31: the owner rebases early */
    }
    *reserved = false;
    return cur | CM_WN_OVERFLOW;
}

uint64_t cm_wn_consume_next(uint64_t cur, uint32_t n, uint32_t cap)
{
    uint32_t head = CM_WN_HEAD(cur) + n, tail = CM_WN_TAIL(cur);

    if (head >= (1u << 30)) {
        /* Keep both below 2^31 without moving any slot: subtract a multiple of cap. */
        uint32_t sub = head & ~(cap - 1);
        head -= sub;
        tail -= sub;
    }
    return CM_WN_CTL(head, tail);
}

cm_status_t cm_wn_post(cm_wn_t *wn, int target, uint64_t page)
{
    uint64_t old, cur, next, pending;
    bool reserved = false;

    cm_trace_instant(CM_TRACE_NOTICE_POST, page, target, 0);
    CM_CHECK(cm_rma_get(wn->rma, target, &pending, &wn->pending[page], sizeof(pending)));
    if (pending != 0) {
        wn->suppressed++; /* a reserved notice is waiting there, not yet visited */
        return CM_OK;
    }
    cur = wn->guess[target];
    for (;;) {
        /* Full and already flagged: the compare-and-swap of cur with itself only confirms that
         * our guess is what is there (a drained ring must not drop the notice). */
        next = cm_wn_reserve_next(cur, wn->cap, &reserved);
        CM_CHECK(cm_rma_cswap(wn->rma, target, wn->ctl, cur, next, &old));
        if (old == cur) {
            break;
        }
        cur = old;
    }
    wn->guess[target] = next;
    if (!reserved) {
        wn->full++;
        return CM_OK;
    }
    wn->posted++;
    /* The slot reserved is inside the ring: at most cap notices between head and tail. */
    cm_assert(CM_WN_TAIL(cur) - CM_WN_HEAD(cur) < wn->cap);
    /* Pending after the reservation, and landing before the slot (see cm_wn.h). */
    CM_CHECK(cm_rma_put_u64_nbi(wn->rma, target, &wn->pending[page], 1));
    CM_CHECK(cm_rma_fence(wn->rma));
    return cm_rma_put_u64_nbi(wn->rma, target, &wn->slots[CM_WN_TAIL(cur) & (wn->cap - 1)],
                              page + 1);
}

cm_status_t cm_wn_drain(cm_wn_t *wn, cm_wn_visit_fn_t visit, void *arg, bool *overflowed)
{
    uint64_t cur, next, old;
    uint32_t head, n;
    cm_status_t status;

    *overflowed = false;
    /* Our own ring: a load sees every poster's atomics (only read-modify-writes must go
     * through the transport, which may implement them in the NIC or in software). */
    cur = __atomic_load_n(wn->ctl, __ATOMIC_ACQUIRE);
    head = CM_WN_HEAD(cur);
    n    = CM_WN_TAIL(cur) - head;
    if (n != 0) {
        cm_trace_instant(CM_TRACE_DRAIN, 0, -1, n);
    }
    for (uint32_t i = 0; i < n; i++) {
        volatile uint64_t *slot = &wn->slots[(head + i) & (wn->cap - 1)];
        uint64_t page;

        /* Reserved before we looked: its put is on the way. */
        cm_rma_wait_u64(wn->rma, slot, CM_CMP_NE, 0,
                        CM_RMA_WHY("a write notice reserved in this process's ring (slot %a)",
                                   NULL, head + i, 0, -1));
        page  = *slot - 1;
        *slot = 0;
        if (page >= wn->npages) {
            cm_error("write notice for page %" PRIu64 " beyond the shared region", page);
            return CM_ERR_INVALID;
        }
        /* The poster's pending put landed before its slot: clear it, then visit (cm_wn.h). */
        __atomic_store_n(&wn->pending[page], 0, __ATOMIC_SEQ_CST);
        status = visit(page, arg);
        if (status != CM_OK) {
            return status;
        }
        wn->drained++;
    }
    if (n == 0 && !(cur & CM_WN_OVERFLOW)) {
        return CM_OK;
    }
    /* Slots are zero before posters can see them free again. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (;;) {
        next   = cm_wn_consume_next(cur, n, wn->cap);
        status = cm_rma_cswap(wn->rma, wn->rank, wn->ctl, cur, next, &old);
        if (status != CM_OK) {
            return status;
        }
        if (old == cur) {
            break;
        }
        cur = old; /* more reservations (or the overflow bit) arrived: keep them */
    }
    if (cur & CM_WN_OVERFLOW) {
        /* Dropped notices: the caller invalidates everything. A poster that found the ring
         * full set no pending word, so none is owed. */
        *overflowed = true;
        wn->overflows++;
    }
    return CM_OK;
}

void cm_wn_reset_local(cm_wn_t *wn)
{
    uint64_t cur = *wn->ctl;
    uint32_t head = CM_WN_HEAD(cur), n = CM_WN_TAIL(cur) - head;

    /* A page's pending word is set only while its notice sits in a reserved slot: clear those,
     * not a word per page of the region (that committed all of it, touched or not). */
    for (uint32_t i = 0; i < n && i < wn->cap; i++) {
        uint64_t slot = wn->slots[(head + i) & (wn->cap - 1)];
        if (slot != 0 && slot - 1 < wn->npages) {
            wn->pending[slot - 1] = 0;
        }
    }
    *wn->ctl = 0;
    memset(wn->slots, 0, (size_t)wn->cap * sizeof(uint64_t));
    memset(wn->guess, 0, (size_t)cm_rma_nprocs(wn->rma) * sizeof(*wn->guess));
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
