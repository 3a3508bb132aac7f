/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Write-notice lists: a bounded ring per process in its metadata segment,
 * appended to remotely by any process, drained locally at acquire (Cashmere,
 * HPCA'96 section 2.2; the paper protects each list with a lock, here a slot
 * is reserved with one compare-and-swap).
 *
 *   ctl word: bit 63 overflow | bits 32-62 head | bits 0-30 tail
 *   slots:    page + 1, 0 = not yet written
 *   pending:  one word per page: 1 says a notice for it is in the ring, not yet
 *             visited (duplicate suppression)
 *
 * A poster reads the page's pending word (1: done, suppressed), else reserves
 * slot `tail` only if the ring has room, then puts 1 into the pending word
 * and, ordered behind it, the page into the slot. A full ring gets the
 * overflow bit instead: nothing is lost, the owner then invalidates every
 * cached page at its next acquire. Every reservation is followed by exactly
 * one put, so the owner may wait for reserved slots.
 *
 * Suppression invariant: a pending word reads 1 only while some reserved
 * notice for the page has not been visited. A poster sets it only after its
 * reservation, and it lands before that poster's slot; the owner clears it
 * only after it has seen a slot for the page, and visits that slot after
 * clearing. So whoever reads 1 can rely on a visit that is still to come, in
 * the owner's current or next drain. (Setting the word before reserving, as
 * an earlier version did, let a second poster rely on a notice that nobody
 * could drain yet: tests/model/.) Two posters that both read 0 both post:
 * a duplicate costs a slot, never a notice.
 */
#ifndef CM_WN_H
#define CM_WN_H

#include "rma/cm_rma.h"

#include <stdbool.h>
#include <stdint.h>

#define CM_WN_OVERFLOW   (1ull << 63)
#define CM_WN_HEAD(c)    ((uint32_t)((c) >> 32) & 0x7fffffffu)
#define CM_WN_TAIL(c)    ((uint32_t)(c) & 0x7fffffffu)
#define CM_WN_CTL(h, t)  (((uint64_t)(h) << 32) | (uint64_t)(t))

/* Where the ring lives in the processes' metadata segments (same offsets in each). */
typedef struct {
    char     *base;     /* the segment: same address in every process */
    size_t   ctl;       /* one word: head (high 32 bits) | tail (low 32 bits) */
    size_t   slots;     /* cap words: page + 1, 0 = empty */
    size_t   pending;   /* npages words: 1 while a notice for the page sits in the ring */
    uint32_t cap;       /* slots in the ring, a power of two */
    uint64_t npages;
} cm_wn_seg_t;

typedef struct {
    cm_rma_t *rma;
    int      rank;
    uint64_t *ctl;       /* all three at the same address in every process */
    uint64_t *slots;
    uint64_t *pending;
    uint32_t cap;        /* power of two */
    uint64_t npages;
    uint64_t *guess;     /* per target: the ctl value our last reservation left */
    /* counters */
    uint64_t posted, suppressed, full, drained, overflows;
} cm_wn_t;

cm_status_t cm_wn_init(cm_wn_t *wn, cm_rma_t *rma, const cm_wn_seg_t *seg);
void cm_wn_fini(cm_wn_t *wn);

/*
 * Pure: the ctl value a poster installs given the current one, and whether it
 * got a slot (tail of cur). Unchanged cur means "already flagged full".
 */
uint64_t cm_wn_reserve_next(uint64_t cur, uint32_t cap, bool *reserved);

/* Pure: the owner's new ctl after consuming n entries of cur (rebases, clears overflow). */
uint64_t cm_wn_consume_next(uint64_t cur, uint32_t n, uint32_t cap);

/* Posts a notice for page to target's ring (target may be this process). Complete at flush. */
cm_status_t cm_wn_post(cm_wn_t *wn, int target, uint64_t page);

typedef cm_status_t (*cm_wn_visit_fn_t)(uint64_t page, void *arg);

/*
 * Consumes this process's ring: visit(page) for every notice (its pending
 * word cleared first). *overflowed: notices were dropped since the last drain, the
 * caller must invalidate everything.
 */
cm_status_t cm_wn_drain(cm_wn_t *wn, cm_wn_visit_fn_t visit, void *arg, bool *overflowed);

/* Empties this process's ring and pending words; only while nobody can post (between two barriers). */
void cm_wn_reset_local(cm_wn_t *wn);

#endif
