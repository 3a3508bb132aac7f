/* SPDX-License-Identifier: BSD-3-Clause */
/* Write notices in per-sender bins: see cm_wn_bin.h. */
#include "config.h"
#include "writenotice/cm_wn_bin.h"
#include "util/cm_trace.h"
#include "util/cm_error.h"
#include "util/cm_log.h"

#include <stdlib.h>
#include <string.h>

/* Word 0 tail, word 1 overflow count, then the slots. */
static inline uint64_t *cm_wn_bin_at(const cm_wn_bin_t *wb, int sender)
{
    return (uint64_t *)(wb->bins + (size_t)sender * wb->bin_bytes);
}

cm_status_t cm_wn_bin_init(cm_wn_bin_t *wb, cm_rma_t *rma, const cm_wn_bin_seg_t *seg)
{
    size_t n;

    memset(wb, 0, sizeof(*wb));
    if (seg->cap == 0 || (seg->cap & (seg->cap - 1)) != 0) {
        cm_error("write-notice bins: %u slots is not a power of two", seg->cap);
        return CM_ERR_INVALID;
    }
    wb->rma       = rma;
    wb->rank      = cm_rma_rank(rma);
    wb->nprocs    = cm_rma_nprocs(rma);
    wb->bins      = seg->base + seg->bins;
    wb->heads     = (uint64_t *)(seg->base + seg->heads);
    wb->cap       = seg->cap;
    wb->bin_bytes = cm_wn_bin_bytes(seg->cap);
    n             = (size_t)wb->nprocs;
    wb->tail      = calloc(n, sizeof(*wb->tail));
    wb->ovf       = calloc(n, sizeof(*wb->ovf));
    wb->unsent    = calloc(n, sizeof(*wb->unsent));
    wb->touched   = calloc(n, sizeof(*wb->touched));
    wb->head      = calloc(n, sizeof(*wb->head));
    wb->ovf_seen  = calloc(n, sizeof(*wb->ovf_seen));
    if (wb->tail == NULL || wb->ovf == NULL || wb->unsent == NULL || wb->touched == NULL ||
        wb->head == NULL || wb->ovf_seen == NULL) {
        cm_wn_bin_fini(wb);
        cm_error("write-notice bins: out of memory");
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

void cm_wn_bin_fini(cm_wn_bin_t *wb)
{
    free(wb->tail);
    free(wb->ovf);
    free(wb->unsent);
    free(wb->touched);
    free(wb->head);
    free(wb->ovf_seen);
    wb->tail = wb->ovf = wb->head = wb->ovf_seen = NULL;
    wb->unsent  = NULL;
    wb->touched = NULL;
}

cm_status_t cm_wn_bin_post(cm_wn_bin_t *wb, int target, uint64_t page)
{
    uint64_t *bin = cm_wn_bin_at(wb, wb->rank); /* our bin, at the target's same address */
    uint64_t seen_head = __atomic_load_n(&wb->heads[target], __ATOMIC_ACQUIRE);

    cm_assert(target != wb->rank && target >= 0 && target < wb->nprocs);
    cm_trace_instant(CM_TRACE_NOTICE_POST, page, target, 0);
    if (!wb->unsent[target]) {
        wb->unsent[target]          = true;
        wb->touched[wb->ntouched++] = target;
    }
    if (wb->tail[target] - seen_head >= wb->cap) {
        wb->ovf[target]++;
        wb->overflows++;
        return CM_OK;
    }
    wb->posted++;
    return cm_rma_put_u64_nbi(wb->rma, target, &bin[2 + (wb->tail[target]++ & (wb->cap - 1))],
                              page + 1);
}

cm_status_t cm_wn_bin_commit(cm_wn_bin_t *wb)
{
    uint64_t *bin = cm_wn_bin_at(wb, wb->rank);

    if (wb->ntouched == 0) {
        return CM_OK;
    }
    /* Every slot lands before any tail that covers it. */
    CM_CHECK(cm_rma_fence(wb->rma));
    for (int i = 0; i < wb->ntouched; i++) {
        int t = wb->touched[i];
        uint64_t words[2] = {wb->tail[t], wb->ovf[t]};

        wb->unsent[t] = false;
        /* Blocking until UCX has read `words` (at once, unless the send waits for room): a
         * non-blocking put may read them after we return, and a tail of stack garbage made
         * receivers drain slots never written (NSHM across hosts, 13 of 270 stress runs). */
        CM_CHECK(cm_rma_put(wb->rma, t, bin, words, sizeof(words)));
    }
    wb->ntouched = 0;
    return CM_OK;
}

cm_status_t cm_wn_bin_drain(cm_wn_bin_t *wb, cm_wn_bin_visit_fn_t visit, void *arg,
                            bool *overflowed)
{
    *overflowed = false;
    for (int s = 0; s < wb->nprocs; s++) {
        uint64_t *bin = cm_wn_bin_at(wb, s);
        /* The tail first: the slots before it landed ahead of it (the sender's fence). */
        uint64_t tail = __atomic_load_n(&bin[0], __ATOMIC_ACQUIRE);
        uint64_t ovf  = __atomic_load_n(&bin[1], __ATOMIC_ACQUIRE);

        if (s == wb->rank || (tail == wb->head[s] && ovf == wb->ovf_seen[s])) {
            continue;
        }
        cm_assert(tail - wb->head[s] <= wb->cap); /* the sender never overtakes our head */
        cm_trace_instant(CM_TRACE_DRAIN, 0, s, (uint32_t)(tail - wb->head[s]));
        for (; wb->head[s] != tail; wb->head[s]++) {
            uint64_t v = __atomic_load_n(&bin[2 + (wb->head[s] & (wb->cap - 1))],
                                         __ATOMIC_RELAXED);
            cm_assert(v != 0);
            wb->drained++;
            CM_CHECK(visit(v - 1, arg));
        }
        if (ovf != wb->ovf_seen[s]) {
            wb->ovf_seen[s] = ovf;
            *overflowed     = true;
        }
        /* The room back to the sender, after the slots were read. */
        CM_CHECK(cm_rma_put_u64_nbi(wb->rma, s, &wb->heads[wb->rank], tail));
    }
    return CM_OK;
}

cm_status_t cm_wn_bin_reset_local(cm_wn_bin_t *wb)
{
    /* Nobody posts now: consume everything without a visit, and say so to each sender. */
    for (int s = 0; s < wb->nprocs; s++) {
        uint64_t *bin = cm_wn_bin_at(wb, s);
        if (s == wb->rank) {
            continue;
        }
        wb->head[s]     = __atomic_load_n(&bin[0], __ATOMIC_ACQUIRE);
        wb->ovf_seen[s] = __atomic_load_n(&bin[1], __ATOMIC_ACQUIRE);
        CM_CHECK(cm_rma_put_u64_nbi(wb->rma, s, &wb->heads[wb->rank], wb->head[s]));
    }
    return CM_OK;
}
