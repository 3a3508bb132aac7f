/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A dissemination barrier over one-sided puts (Hensgen, Finkel & Manber): in
 * round k every process puts the barrier's epoch into a flag of process
 * rank + 2^k and waits for its own flag of round k to reach the epoch; after
 * ceil(log2 P) rounds everyone has heard, directly or not, from everyone.
 * Flags hold monotonically growing epochs, so they are never reset, and each
 * flag has exactly one writer. No central manager, no remote CPU.
 */
#ifndef CM_BARRIER_H
#define CM_BARRIER_H

#include "rma/cm_rma.h"

#include <stdint.h>

/* Flag words per process: enough rounds for 2^64 processes. */
#define CM_BARRIER_ROUNDS 64

typedef struct {
    cm_rma_t *rma;
    uint64_t *flags;  /* CM_BARRIER_ROUNDS words, same address in every process */
    uint64_t epoch;   /* barriers completed by this process */
} cm_barrier_t;

void cm_barrier_init(cm_barrier_t *b, cm_rma_t *rma, uint64_t *flags);

/* Waits until every process has called it as often as this one. */
cm_status_t cm_barrier_wait(cm_barrier_t *b);

#endif
