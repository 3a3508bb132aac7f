/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TreadMarks diffs (Keleher's thesis, 2.3.1): a run-length encoding of the
 * 4-byte words in which a page differs from its twin.
 *
 *   diff = run*          run = uint16 first word | uint16 word count | count words
 *
 * Runs are never joined across unchanged words: a gap word may belong to a
 * concurrent writer of the same page (false sharing), and writing it back
 * would undo that writer's store when the diffs of both are applied.
 * Pages are at most 256 KiB (word indexes fit 16 bits).
 */
#ifndef CM_TMK_DIFF_H
#define CM_TMK_DIFF_H

#include "cm.h"

#include <stddef.h>
#include <stdint.h>

#define CM_TMK_WORD           4u
#define CM_TMK_RUN_HDR        4u
#define CM_TMK_MAX_PAGE_WORDS 65536u

/* Largest diff of a page: every other word changed, or the whole page. */
static inline size_t cm_tmk_diff_max(size_t page_size)
{
    size_t words = page_size / CM_TMK_WORD;
    size_t alt   = ((words + 1) / 2) * (CM_TMK_RUN_HDR + CM_TMK_WORD);
    size_t whole = CM_TMK_RUN_HDR * ((words + 0xffffu - 1) / 0xffffu) + page_size;
    return alt > whole ? alt : whole;
}

/* Encodes page against twin into out (cm_tmk_diff_max bytes); returns the diff's length. */
size_t cm_tmk_diff_encode(const void *page, const void *twin, size_t page_size, void *out);

/* Writes the diff's words into page. A malformed diff is CM_ERR_INVALID, page untouched. */
cm_status_t cm_tmk_diff_apply(void *page, size_t page_size, const void *diff, size_t len);

/* Checks a diff's structure against the page size without applying it. */
cm_status_t cm_tmk_diff_check(size_t page_size, const void *diff, size_t len);

#endif
