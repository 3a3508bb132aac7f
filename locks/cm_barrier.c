/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "locks/cm_barrier.h"

void cm_barrier_init(cm_barrier_t *b, cm_rma_t *rma, uint64_t *flags)
{
    cm_barrier_init_group(b, rma, flags, NULL, cm_rma_nprocs(rma), cm_rma_rank(rma));
}

void cm_barrier_init_group(cm_barrier_t *b, cm_rma_t *rma, uint64_t *flags, const int *members,
                           int n, int me)
{
    b->rma     = rma;
    b->members = members;
    b->n       = n;
    b->me      = me;
    b->flags   = flags;
    b->epoch   = 0;
}

static inline int cm_barrier_rank(const cm_barrier_t *b, int i)
{
    return (b->members != NULL) ? b->members[i] : i;
}

cm_status_t cm_barrier_wait(cm_barrier_t *b)
{
    int me = b->me, n = b->n;
    uint64_t epoch = ++b->epoch;
    cm_status_t status;

    for (int k = 0, dist = 1; dist < n && k < CM_BARRIER_ROUNDS; k++, dist <<= 1) {
        int to = cm_barrier_rank(b, (me + dist) % n);
        int w = 2 * k + (int)(epoch & 1);
        uint64_t *flag = &b->flags[w];

        /* One way: the wait below progresses the worker, which sends it (cm_barrier.h). */
        status = cm_rma_signal_u64(b->rma, to, flag, epoch, b->sent[w]);
        if (status != CM_OK) {
            return status;
        }
        cm_rma_wait_u64(b->rma, flag, CM_CMP_GE, epoch,
                        CM_RMA_WHY("round %b of barrier %a", NULL, epoch, (uint64_t)k,
                                   cm_barrier_rank(b, (me - dist + n) % n)));
    }
    return CM_OK;
}
