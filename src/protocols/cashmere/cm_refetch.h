/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Refetch at acquire (CM_REFETCH=used): a page-copy variant's page that an acquire invalidates,
 * and that was used since its copy was last filled, stays in the directory's sharing set; its
 * copy is fetched again from its home at the end of the acquire, every such page in one batch
 * (one wait for all), after a snapshot of its directory entry (another batch, one wait: a
 * round trip where an entry is on another host, none on this one). The page is left without
 * access ("held"): its next access faults locally (no directory update, no get) and maps it,
 * which is how the next acquire knows it was used. A held page invalidated twice unused leaves
 * the sharing set as the paper's self-invalidation would (CM_REFETCH=paper: every invalidated
 * page leaves, and joins and copies again at its fault).
 *
 * Why it is safe. Our copy is stale only while we are in the acquire: the gets are issued after
 * the acquire's notices were drained and our own write-throughs completed, so they return every
 * write released before our acquire. Staying a sharer keeps us in every later transition's
 * notices; what a notice would not tell us is a write to a page already WEAK (its writers post
 * nothing more), so a page whose snapshot shows it WEAK (or BUSY, or UNSAFE) gets a self-notice
 * and is revalidated at every acquire, as a page joined while WEAK is. A transition that
 * follows the snapshot sees us as a sharer and notifies us. The snapshot must be read before
 * the copy, as a join precedes a fault's copy: read after it, it can miss a writer that was
 * in the entry when the copy was read, then wrote, released and left (its writes to a WEAK
 * page post nothing), and then shows no writer. That lost lock-protected updates across hosts
 * with TCP losing packets, where a snapshot's request waited 200 ms for its retransmission
 * while its copy's did not (issue 30; the SPIN model's REFETCH_SNAP_LATE finds it). Our own
 * directory bits stay as they were: a writer that stays a writer needs no second WRITE (cm_dir_update skips it), and leaves
 * (with its version bump) when its held copy goes unused.
 */
#ifndef CM_REFETCH_H
#define CM_REFETCH_H

#include "cm.h"

#include <stdbool.h>
#include <stdint.h>

/* Whether acquires hold copies (CM_REFETCH and the variant: page copies, a one-word directory),
 * whether only while they pay (CM_REFETCH=auto, cm_refetch.c), and whether misses prefetch into
 * held pages (CM_PREFETCH, cm_prefetch.h): the per-page state exists if either does. */
cm_status_t cm_refetch_init(bool on, bool adaptive, bool prefetch);
void cm_refetch_fini(void);
/* Whether this run holds refetched pages. */
bool cm_refetch_held_on(void);
/* The end of the initialization phase: no page is held. */
void cm_refetch_reset(void);

/* Page p (mapped, used since its fill, not unsafe) is being invalidated by this acquire: true
 * if it is to be held and refetched at the acquire's end (cm_refetch_complete). */
bool cm_refetch_hold(uint64_t p);
/* Held (refetched, unused since): its copy is current as of the last acquire. */
bool cm_refetch_held(uint64_t p);
/* Page p was joined and copied by another page's miss (cm_prefetch.c): held, unused. Its next
 * access maps it locally; invalidated unused, it leaves (no refetch). */
void cm_refetch_prefetched(uint64_t p);
/* Page p faults (held: it was, and is mapped now without a join: no longer held). */
void cm_refetch_fault(uint64_t p, bool held);
/* Held page p is invalidated, unused since its refetch: true if it leaves now (no longer held),
 * false if it is refetched once more at this acquire's end. */
bool cm_refetch_unused(uint64_t p);
/* Page p left the sharing set at an invalidation (not held). */
void cm_refetch_left(uint64_t p);
/* Fetches the pages this acquire held, with their entries, in one batch; self-notices those
 * whose entry needs revalidation at every acquire. */
cm_status_t cm_refetch_complete(void);

#endif
