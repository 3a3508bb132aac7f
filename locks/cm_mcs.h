/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MCS queue locks over one-sided RMA (Mellor-Crummey & Scott): the lock is a
 * tail word at the lock's home; each contender has a queue node at the same
 * address in its own metadata segment. Acquire is one remote fetch-and-store
 * on the tail and, if the lock was held, one remote put linking us behind our
 * predecessor, then spinning on local memory. Release hands the lock to the
 * successor with one remote put (or frees it with one compare-and-swap).
 * Queue entries are rank + 1 (0 = none).
 *
 * A lock may carry data (the directory's MCS form: an entry travels with its
 * lock): the acquire fetches it from the home in the same round trip as the
 * fetch-and-store, and a release hands it to the successor ahead of the lock
 * (before_handoff puts it into the successor's handoff area), so each hand-off
 * costs one latency.
 */
#ifndef CM_MCS_H
#define CM_MCS_H

#include "rma/cm_rma.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    volatile uint64_t next;    /* successor's rank + 1, written by the successor */
    volatile uint64_t locked;  /* 1 while waiting, cleared by the predecessor */
} cm_mcs_qnode_t;

/*
 * Acquires the lock whose tail word is *tail at rank home; qnode is this
 * process's node for it. *pred gets the predecessor's rank + 1 (0: the lock
 * was free), for callers that pipeline data behind the lock.
 */
cm_status_t cm_mcs_acquire(cm_rma_t *rma, int home, uint64_t *tail, cm_mcs_qnode_t *qnode,
                           uint64_t *pred);

/*
 * The same with data carried by the lock: len bytes end up in dst. While the lock is free they
 * are at home's src (fetched behind the fetch-and-store, fenced, waited for with it); if it was
 * held, the predecessor's release put them at handoff (our node's data area, in our memory)
 * before clearing our locked word. len 0: cm_mcs_acquire.
 */
cm_status_t cm_mcs_acquire_data(cm_rma_t *rma, int home, uint64_t *tail, cm_mcs_qnode_t *qnode,
                                const void *src, const void *handoff, void *dst, size_t len,
                                uint64_t *pred);

/*
 * Releases it. *succ gets the successor's rank + 1 (0: the lock is now free);
 * if before_handoff is not NULL it is called with the successor's rank just
 * before the hand-off put, so that data can travel ahead of the lock.
 */
cm_status_t cm_mcs_release(cm_rma_t *rma, int home, uint64_t *tail, cm_mcs_qnode_t *qnode,
                           cm_status_t (*before_handoff)(int succ, void *arg), void *arg,
                           uint64_t *succ);

/*
 * The application lock whose release waits for nothing (tests/model/lock.pml). The node's
 * `next` is one word changed only by atomics: a successor fetch-adds its rank + 1 into its
 * predecessor's, and the release fetch-ors CM_MCS_RELEASED into its own. A successor whose
 * add returns RELEASED has the lock at once; a release whose or returns a successor hands it
 * over (a put and its flush, as before); else the release's compare-and-swap of the tail back
 * to free is issued and not waited for. Our node is reset only once that position is
 * resolved (cm_mcs_resolve): the swap came back as ours, or the one who swapped in behind us
 * has linked (and found RELEASED). Uncontended, a lock whose tail is elsewhere costs one round
 * trip (the acquire's fetch-and-store) instead of two.
 */
#define CM_MCS_RELEASED (1ull << 32)

typedef struct {
    cm_rma_fetch_t f;        /* the release's compare-and-swap, in flight */
    uint64_t       old;      /* its result: us (swapped, nobody behind) or whoever swapped in */
    bool           pending;  /* a position not resolved yet */
    bool           listed;   /* the caller's: on its list of locks to resolve */
} cm_mcs_lazy_t;

cm_status_t cm_mcs_acquire_lazy(cm_rma_t *rma, int home, uint64_t *tail, cm_mcs_qnode_t *qnode,
                                cm_mcs_lazy_t *lz);
cm_status_t cm_mcs_release_lazy(cm_rma_t *rma, int home, uint64_t *tail, cm_mcs_qnode_t *qnode,
                                cm_mcs_lazy_t *lz);
/* Waits until nobody can link into our last position (before our node is reset or freed). */
cm_status_t cm_mcs_resolve(cm_rma_t *rma, cm_mcs_qnode_t *qnode, cm_mcs_lazy_t *lz);

#endif
