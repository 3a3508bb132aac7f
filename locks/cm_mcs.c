/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "locks/cm_mcs.h"
#include "util/cm_error.h"

#include <string.h>

/* Our node, ready before anyone can find it through the tail. */
static void cm_mcs_node_reset(cm_mcs_qnode_t *qnode)
{
    qnode->next   = 0;
    qnode->locked = 1;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void cm_mcs_wait_handoff(cm_rma_t *rma, cm_mcs_qnode_t *qnode, uint64_t pred)
{
    cm_rma_wait_u64(rma, &qnode->locked, CM_CMP_EQ, 0,
                    CM_RMA_WHY("the hand-off from rank %a, ahead in the queue", NULL, pred - 1, 0,
                               (int)pred - 1));
}

/* The lock goes to succ (rank + 1): one put, complete before our node may be reused. */
static cm_status_t cm_mcs_handoff(cm_rma_t *rma, cm_mcs_qnode_t *qnode, uint64_t succ)
{
    CM_CHECK(cm_rma_put_u64_nbi(rma, (int)succ - 1, (uint64_t *)&qnode->locked, 0));
    return cm_rma_flush(rma, (int)succ - 1);
}

cm_status_t cm_mcs_acquire_data(cm_rma_t *rma, int home, uint64_t *tail, cm_mcs_qnode_t *qnode,
                                const void *src, const void *handoff, void *dst, size_t len,
                                uint64_t *pred_out)
{
    uint64_t me = (uint64_t)cm_rma_rank(rma) + 1, pred = 0;
    cm_rma_fetch_t lock_f = {0}, data_f = {0};

    cm_mcs_node_reset(qnode);
    if (len == 0) {
        CM_CHECK(cm_rma_swap(rma, home, tail, me, &pred));
    } else {
        /* Lock and data in one round trip: the get is fenced behind the fetch-and-store. We
         * wait for the two alone: a flush of the home also waits for our last write-back's
         * acknowledgement, which nothing here needs (rma/cm_rma.h). */
        CM_CHECK(cm_rma_swap_fetch(rma, home, tail, me, &pred, &lock_f));
        CM_CHECK(cm_rma_fence(rma));
        CM_CHECK(cm_rma_get_fetch(rma, home, dst, src, len, &data_f));
        CM_CHECK(cm_rma_fetch_wait(rma, &lock_f));
        CM_CHECK(cm_rma_fetch_wait(rma, &data_f));
    }
    cm_assert(pred <= (uint64_t)cm_rma_nprocs(rma) && pred != me);
    if (pred != 0) {
        /* Link behind the predecessor (its node for this lock is at the same address). */
        CM_CHECK(cm_rma_put_u64_nbi(rma, (int)pred - 1, (uint64_t *)&qnode->next, me));
        CM_CHECK(cm_rma_flush(rma, (int)pred - 1));
        cm_mcs_wait_handoff(rma, qnode, pred);
        if (len > 0) {
            /* Handed over with the lock: what the home held was stale. */
            memcpy(dst, handoff, len);
        }
    }
    if (pred_out != NULL) {
        *pred_out = pred;
    }
    return CM_OK;
}

cm_status_t cm_mcs_acquire(cm_rma_t *rma, int home, uint64_t *tail, cm_mcs_qnode_t *qnode,
                           uint64_t *pred_out)
{
    return cm_mcs_acquire_data(rma, home, tail, qnode, NULL, NULL, NULL, 0, pred_out);
}

cm_status_t cm_mcs_release(cm_rma_t *rma, int home, uint64_t *tail, cm_mcs_qnode_t *qnode,
                           cm_status_t (*before_handoff)(int succ, void *arg), void *arg,
                           uint64_t *succ_out)
{
    uint64_t me = (uint64_t)cm_rma_rank(rma) + 1, old, succ;

    succ = __atomic_load_n(&qnode->next, __ATOMIC_ACQUIRE);
    if (succ == 0) {
        CM_CHECK(cm_rma_cswap(rma, home, tail, me, 0, &old));
        if (old == me) {
            if (succ_out != NULL) {
                *succ_out = 0;
            }
            return CM_OK; /* nobody waiting: the lock is free */
        }
        /* Someone swapped in behind us and is about to link itself. */
        cm_rma_wait_u64(rma, &qnode->next, CM_CMP_NE, 0,
                        CM_RMA_WHY("the link of the next process in the queue (at home rank "
                                   "%a)", NULL, (uint64_t)home, 0, -1));
        succ = qnode->next;
    }
    cm_assert(succ >= 1 && (int)succ <= cm_rma_nprocs(rma) && succ != me);
    if (succ_out != NULL) {
        *succ_out = succ;
    }
    if (before_handoff != NULL) {
        CM_CHECK(before_handoff((int)succ - 1, arg));
    }
    return cm_mcs_handoff(rma, qnode, succ);
}

/* ---- the release that waits for nothing (cm_mcs.h, tests/model/lock.pml) ---------------- */

cm_status_t cm_mcs_resolve(cm_rma_t *rma, cm_mcs_qnode_t *qnode, cm_mcs_lazy_t *lz)
{
    uint64_t me = (uint64_t)cm_rma_rank(rma) + 1;

    if (!lz->pending) {
        return CM_OK;
    }
    CM_CHECK(cm_rma_fetch_wait(rma, &lz->f));
    lz->pending = false;
    if (lz->old == me) {
        return CM_OK; /* the tail was still ours: nobody behind us */
    }
    /* Someone swapped in behind us: its link lands here, and it found (or finds) RELEASED. */
    cm_rma_wait_u64(rma, (uint64_t *)&qnode->next, CM_CMP_GT, CM_MCS_RELEASED,
                    CM_RMA_WHY("the link of rank %a, behind us in a lock's queue", NULL,
                               lz->old - 1, 0, (int)lz->old - 1));
    return CM_OK;
}

cm_status_t cm_mcs_acquire_lazy(cm_rma_t *rma, int home, uint64_t *tail, cm_mcs_qnode_t *qnode,
                                cm_mcs_lazy_t *lz)
{
    uint64_t me = (uint64_t)cm_rma_rank(rma) + 1, pred = 0, old;

    CM_CHECK(cm_mcs_resolve(rma, qnode, lz));
    cm_mcs_node_reset(qnode);
    CM_CHECK(cm_rma_swap(rma, home, tail, me, &pred));
    cm_assert(pred <= (uint64_t)cm_rma_nprocs(rma) && pred != me);
    if (pred == 0) {
        return CM_OK;
    }
    /* Link behind the predecessor (its node for this lock is at the same address): one
     * atomic, whose answer says whether it released already. */
    CM_CHECK(cm_rma_fadd(rma, (int)pred - 1, (uint64_t *)&qnode->next, me, &old));
    cm_assert((old & ~CM_MCS_RELEASED) == 0); /* one successor per position */
    if (!(old & CM_MCS_RELEASED)) {
        cm_mcs_wait_handoff(rma, qnode, pred);
    }
    return CM_OK;
}

cm_status_t cm_mcs_release_lazy(cm_rma_t *rma, int home, uint64_t *tail, cm_mcs_qnode_t *qnode,
                                cm_mcs_lazy_t *lz)
{
    uint64_t me = (uint64_t)cm_rma_rank(rma) + 1, old, succ;

    cm_assert(!lz->pending);
    /* Atomic with a successor's link: of the two, one sees the other. */
    CM_CHECK(cm_rma_fadd(rma, (int)me - 1, (uint64_t *)&qnode->next, CM_MCS_RELEASED, &old));
    succ = old & ~CM_MCS_RELEASED;
    if (succ == 0) {
        lz->pending = true;
        return cm_rma_cswap_fetch(rma, home, tail, me, 0, &lz->old, &lz->f);
    }
    cm_assert(succ <= (uint64_t)cm_rma_nprocs(rma) && succ != me);
    return cm_mcs_handoff(rma, qnode, succ);
}
