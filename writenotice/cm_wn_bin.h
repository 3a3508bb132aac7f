/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Write notices in per-sender bins (Cashmere-2L, SOSP'97; issue 45): each process has, in its
 * metadata segment, one bin per sender, and only that sender writes it. Posting needs no lock,
 * no atomic and no round trip of its own: slot puts, then, fenced behind them, the bin's tail
 * (and overflow count) in one put, all completed by the poster's release flush. The receiver
 * drains at acquire: reads each bin's tail, visits the slots before it, and returns its
 * consumed index to the sender with a put (the sender's only view of the room left: an old
 * one only makes it see less room).
 *
 *   bin of sender s, at the receiver: word 0 tail (notices s posted), word 1 overflow count
 *                                     (notices s could not post: the bin was full), then cap
 *                                     slots: page + 1 at index i % cap
 *   heads, at the sender:             word t: receiver t's consumed index of our bin there
 *
 * A full bin loses nothing: the sender counts an overflow instead, and the receiver, seeing
 * the count move, invalidates everything at that acquire. There is no duplicate suppression
 * across releases: a sender's view of a receiver's head can be old, and a notice it believed
 * unconsumed may have been consumed before the receiver joined the page again
 * (tests/model/dir_add.pml); within a release each page is posted to a target once.
 */
#ifndef CM_WN_BIN_H
#define CM_WN_BIN_H

#include "rma/cm_rma.h"

#include <stdbool.h>
#include <stdint.h>

/* Where the bins live in the processes' metadata segments (same offsets in each). */
typedef struct {
    char     *base;   /* the segment: same address in every process */
    size_t   bins;    /* nprocs bins of cm_wn_bin_bytes(cap) bytes each, the sender's at
                         bins + sender * cm_wn_bin_bytes(cap) */
    size_t   heads;   /* nprocs words */
    uint32_t cap;     /* slots per bin, a power of two */
} cm_wn_bin_seg_t;

/* Bytes of one bin with cap slots (a multiple of 64). */
static inline size_t cm_wn_bin_bytes(uint32_t cap)
{
    return ((2 + (size_t)cap) * sizeof(uint64_t) + 63) & ~(size_t)63;
}

typedef struct {
    cm_rma_t *rma;
    int      rank, nprocs;
    char     *bins;      /* ours: a bin per sender */
    uint64_t *heads;     /* ours: each receiver's consumed index of our bin there */
    uint32_t cap;
    size_t   bin_bytes;
    /* As sender, per target: notices posted, overflows counted, and whether the tail is to go
     * out at the next commit. */
    uint64_t *tail, *ovf;
    bool     *unsent;
    int      *touched;   /* targets with unsent tails, in posting order */
    int      ntouched;
    /* As receiver, per sender: consumed index, overflow count seen. */
    uint64_t *head, *ovf_seen;
    /* counters */
    uint64_t posted, overflows, drained;
} cm_wn_bin_t;

cm_status_t cm_wn_bin_init(cm_wn_bin_t *wb, cm_rma_t *rma, const cm_wn_bin_seg_t *seg);
void cm_wn_bin_fini(cm_wn_bin_t *wb);

/*
 * A notice for page to target (never this process): its slot's put, or an overflow count
 * where the bin has no room as far as we know. Nobody sees it before cm_wn_bin_commit.
 */
cm_status_t cm_wn_bin_post(cm_wn_bin_t *wb, int target, uint64_t page);

/*
 * The tails of every bin posted to since the last commit, fenced behind their slots: one put
 * each, complete at the caller's next flush (the release's, before anyone can see it).
 */
cm_status_t cm_wn_bin_commit(cm_wn_bin_t *wb);

typedef cm_status_t (*cm_wn_bin_visit_fn_t)(uint64_t page, void *arg);

/*
 * Consumes this process's bins: visit(page) for every notice, sender by sender in posting
 * order; *overflowed where a sender counted overflows since the last drain (the caller must
 * invalidate everything). The consumed indexes go back to their senders (puts, complete at
 * our next flush).
 */
cm_status_t cm_wn_bin_drain(cm_wn_bin_t *wb, cm_wn_bin_visit_fn_t visit, void *arg,
                            bool *overflowed);

/* Drops every notice in this process's bins unvisited; only while nobody can post (between
 * two barriers). */
cm_status_t cm_wn_bin_reset_local(cm_wn_bin_t *wb);

#endif
