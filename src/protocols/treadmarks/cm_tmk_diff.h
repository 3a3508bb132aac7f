/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TreadMarks diffs (Keleher's thesis, 2.3.1): a run-length encoding of the
 * 4-byte words in which a page differs from its twin, precise to the byte.
 *
 *   diff = run*
 *   run  = uint16 first word | uint16 word count (| CM_TMK_RUN_MASKED) | count words
 *          [| ceil(count / 2) mask bytes, if masked: a nibble per word, low nibble first,
 *             bit b set where byte b of the word changed]
 *
 * Only changed bytes are written back. Two processes may write different bytes of one word
 * without a race (an image of 1-byte pixels dealt to processes in blocks that are not
 * word-aligned: SPLASH-3's VOLREND); the bytes of a word the writer left alone still hold the
 * twin's values, and writing them back would undo the other writer's bytes. A run whose
 * words all changed whole (the common case for doubles and pointers) carries no masks.
 * Runs are never joined across unchanged words for the same reason.
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
#define CM_TMK_RUN_MASKED     0x8000u /* flag in the count field */
#define CM_TMK_RUN_MAX        0x7fffu /* words in one run */

/* Largest diff of a page: every other word changed (in part), or the whole page in part. */
static inline size_t cm_tmk_diff_max(size_t page_size)
{
    size_t words = page_size / CM_TMK_WORD;
    size_t alt   = ((words + 1) / 2) * (CM_TMK_RUN_HDR + CM_TMK_WORD + 1);
    size_t runs  = (words + CM_TMK_RUN_MAX - 1) / CM_TMK_RUN_MAX;
    size_t whole = runs * (CM_TMK_RUN_HDR + 1) + page_size + (words + 1) / 2;
    return alt > whole ? alt : whole;
}

/* Encodes page against twin into out (cm_tmk_diff_max bytes); returns the diff's length. */
size_t cm_tmk_diff_encode(const void *page, const void *twin, size_t page_size, void *out);

/* Writes the diff's changed bytes into page. A malformed diff is CM_ERR_INVALID, page untouched. */
cm_status_t cm_tmk_diff_apply(void *page, size_t page_size, const void *diff, size_t len);

/* Checks a diff's structure against the page size without applying it. */
cm_status_t cm_tmk_diff_check(size_t page_size, const void *diff, size_t len);

#endif
