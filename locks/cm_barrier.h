/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A dissemination barrier over one-sided puts (Hensgen, Finkel & Manber): in
 * round k every process puts the barrier's epoch into a flag of process
 * rank + 2^k and waits for its own flag of round k to reach the epoch; after
 * ceil(log2 P) rounds everyone has heard, directly or not, from everyone.
 * Flags hold monotonically growing epochs, so they are never reset, and each
 * flag has exactly one writer. No central manager, no remote CPU.
 *
 * A round is one one-way message: the put is not flushed (a flush is a round
 * trip on every transport that acknowledges puts, TCP included). Each round
 * has two flags, for odd and even epochs, so an unflushed put can never be
 * overtaken: our put of epoch e+2 to a flag follows our completion of barrier
 * e+1, for which its target must have arrived at e+1, that is completed e and
 * so seen our put of e there. The caller's data is complete before (a
 * release flushes it); the barrier's own puts need not be, and are signals
 * (cm_rma_signal_u64) that no later flush of the caller waits for either: the
 * acquire after a barrier used to wait a round trip for their completion. The
 * same argument keeps a signal's operand and reply words ours again by the
 * time the flag's next epoch is sent.
 */
#ifndef CM_BARRIER_H
#define CM_BARRIER_H

#include "rma/cm_rma.h"

#include <stdint.h>

/* Rounds: enough for 2^32 processes; two flag words each (odd and even epochs). */
#define CM_BARRIER_ROUNDS 32
#define CM_BARRIER_WORDS  (2 * CM_BARRIER_ROUNDS)

typedef struct {
    cm_rma_t *rma;
    const int *members; /* the ranks taking part, in order (NULL: every rank) */
    int      n, me;     /* how many, and our index among them */
    uint64_t *flags;  /* CM_BARRIER_WORDS words, same address in every process */
    uint64_t epoch;   /* barriers completed by this process */
    uint64_t sent[CM_BARRIER_WORDS][2]; /* each flag's signal: operand and reply (cm_rma.h) */
} cm_barrier_t;

void cm_barrier_init(cm_barrier_t *b, cm_rma_t *rma, uint64_t *flags);
/* A barrier of the n ranks in members (one per host, say) only; me: our index there. */
void cm_barrier_init_group(cm_barrier_t *b, cm_rma_t *rma, uint64_t *flags, const int *members,
                           int n, int me);

/* Waits until every process has called it as often as this one. */
cm_status_t cm_barrier_wait(cm_barrier_t *b);

#endif
