/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prefetch on a miss (CM_PREFETCH=n, as ArgoDSM fetches a block of 8 pages): a page-copy
 * variant's fault also joins and copies the other pages of its aligned block of n pages that
 * this process does not hold, all of them in one round trip after the faulting page's own
 * (plus one before it, riding with that page's join, for entries it has never seen). Each
 * such page is left without access, held (cm_refetch.h): its first use is a local fault.
 *
 * The alternative to refetch at acquire (CM_REFETCH): that one re-gets the pages this process
 * used, at the acquire; this one guesses by address, at the miss. CM_PREFETCH=0 is the paper.
 *
 * Why it is safe. A prefetched page's join is an ordinary JOIN, one compare-and-swap on its
 * entry word; only a join that needs nothing while the entry is held is issued this way (not
 * on a BUSY or UNSAFE entry, nor one that would claim the home or post notices), so the
 * protocol step is the model's JOIN with the copy travelling with it (cm_fill_page.c): every
 * write released before our last acquire is at the home before the get is issued, a writer
 * in the entry we join makes it WEAK (a self-notice; one it would notify is not prefetched),
 * one whose transition follows the join notifies us, and the swap compares the word seen
 * before the get was issued, tag included (cm_dir.h): it succeeds only if no writer joined,
 * wrote and left in between. A swap that fails leaves the page as it was: not a sharer, its
 * copy ignored, joined at its own fault.
 */
#ifndef CM_PREFETCH_H
#define CM_PREFETCH_H

#include "cm.h"

#include <stdbool.h>
#include <stdint.h>

/* n pages per block (0 or 1: off); on only for page copies with the CAS directory. */
void cm_prefetch_init(unsigned n, bool possible);
bool cm_prefetch_on(void);
/* Page p missed and is about to join: picks the block's other pages and reads the entries not
 * seen before, without waiting (the reads complete with p's own join). */
cm_status_t cm_prefetch_issue(uint64_t p);
/* p is mapped: joins and copies the pages picked, one round trip for all. */
cm_status_t cm_prefetch_complete(void);

#endif
