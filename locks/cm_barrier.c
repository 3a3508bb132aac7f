/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "locks/cm_barrier.h"

void cm_barrier_init(cm_barrier_t *b, cm_rma_t *rma, uint64_t *flags)
{
    b->rma   = rma;
    b->flags = flags;
    b->epoch = 0;
}

cm_status_t cm_barrier_wait(cm_barrier_t *b)
{
    int me = cm_rma_rank(b->rma), n = cm_rma_nprocs(b->rma);
    uint64_t epoch = ++b->epoch;
    cm_status_t status;

    for (int k = 0, dist = 1; dist < n && k < CM_BARRIER_ROUNDS; k++, dist <<= 1) {
        int to = (me + dist) % n;
        int w = 2 * k + (int)(epoch & 1);
        uint64_t *flag = &b->flags[w];

        /* One way: the wait below progresses the worker, which sends it (cm_barrier.h). */
        status = cm_rma_signal_u64(b->rma, to, flag, epoch, b->sent[w]);
        if (status != CM_OK) {
            return status;
        }
        cm_rma_wait_u64(b->rma, flag, CM_CMP_GE, epoch,
                        CM_RMA_WHY("round %b of barrier %a", NULL, epoch, (uint64_t)k,
                                   (me - dist + n) % n));
    }
    return CM_OK;
}
