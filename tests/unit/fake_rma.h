/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A fake one-sided layer for unit tests of the layers above rma/ (locks, directory, the
 * protocol's mechanisms): nprocs ranks in one process, one thread each, each rank with its
 * own copy of a memory area. A rank's code uses addresses in its own copy, as every process
 * uses the same address in the real layer; an operation on rank pe at address a lands at the
 * same offset in pe's copy. Every operation completes at once, as a sequentially consistent
 * atomic or copy, and an active message runs its target's handler in the sender's thread:
 * the tests check what the code computes and excludes, not the orderings of a network (the
 * SPIN models and the multi-process tests do that).
 */
#ifndef FAKE_RMA_H
#define FAKE_RMA_H

#include "rma/cm_rma.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fake_world fake_world_t;

/* nprocs copies of size bytes (zeroed, page aligned). */
fake_world_t *fake_world_create(int nprocs, size_t size);
void fake_world_destroy(fake_world_t *w);

/* Whether the ranks' copies are mapped at each other, as node-local peers over shared memory
 * (cm_rma_ptr, cm_rma_alias work); by default not, as peers across a network. */
void fake_world_map_peers(fake_world_t *w, bool mapped);

/* Rank r's handle and its copy of the area. */
cm_rma_t *fake_rma(fake_world_t *w, int r);
char *fake_base(fake_world_t *w, int r);

/* Operations so far, all ranks: puts and gets, atomics, flushes and fences, active messages
 * (what a test may count to say what a code path costs). */
typedef struct {
    uint64_t puts, gets, atomics, flushes, fences, msgs;
} fake_counts_t;

void fake_counts(fake_world_t *w, fake_counts_t *c);

/* Runs fn(r, arg) on nprocs threads, one per rank, and joins them. */
void fake_run(fake_world_t *w, void (*fn)(int r, void *arg), void *arg);

#endif
