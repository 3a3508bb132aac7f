/* SPDX-License-Identifier: BSD-3-Clause */
/* TreadMarks diffs: word-granular run-length encoding (see cm_tmk_diff.h). */
#include "treadmarks/cm_tmk_diff.h"

#include <string.h>

static inline uint32_t cm_tmk_word(const unsigned char *p, size_t w)
{
    uint32_t v;
    memcpy(&v, p + w * CM_TMK_WORD, sizeof(v));
    return v;
}

static inline void cm_tmk_put16(unsigned char *p, uint16_t v)
{
    memcpy(p, &v, sizeof(v));
}

static inline uint16_t cm_tmk_get16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

size_t cm_tmk_diff_encode(const void *page, const void *twin, size_t page_size, void *out)
{
    const unsigned char *a = page, *b = twin;
    unsigned char *o = out;
    const size_t words = page_size / CM_TMK_WORD;
    size_t w = 0, len = 0;

    while (w < words) {
        /* Skip equal words, eight bytes at a time where aligned runs are equal. */
        while (w + 2 <= words && memcmp(a + w * CM_TMK_WORD, b + w * CM_TMK_WORD, 8) == 0) {
            w += 2;
        }
        while (w < words && cm_tmk_word(a, w) == cm_tmk_word(b, w)) {
            w++;
        }
        if (w == words) {
            break;
        }
        size_t start = w;
        while (w < words && w - start < 0xffffu && cm_tmk_word(a, w) != cm_tmk_word(b, w)) {
            w++;
        }
        cm_tmk_put16(o + len, (uint16_t)start);
        cm_tmk_put16(o + len + 2, (uint16_t)(w - start));
        memcpy(o + len + CM_TMK_RUN_HDR, a + start * CM_TMK_WORD, (w - start) * CM_TMK_WORD);
        len += CM_TMK_RUN_HDR + (w - start) * CM_TMK_WORD;
    }
    return len;
}

cm_status_t cm_tmk_diff_check(size_t page_size, const void *diff, size_t len)
{
    const unsigned char *d = diff;
    const size_t words = page_size / CM_TMK_WORD;
    size_t off = 0;

    if (words > CM_TMK_MAX_PAGE_WORDS) {
        return CM_ERR_INVALID;
    }
    while (off < len) {
        size_t start, count;
        if (len - off < CM_TMK_RUN_HDR) {
            return CM_ERR_INVALID;
        }
        start = cm_tmk_get16(d + off);
        count = cm_tmk_get16(d + off + 2);
        if (count == 0 || start + count > words || len - off - CM_TMK_RUN_HDR < count * CM_TMK_WORD) {
            return CM_ERR_INVALID;
        }
        off += CM_TMK_RUN_HDR + count * CM_TMK_WORD;
    }
    return CM_OK;
}

cm_status_t cm_tmk_diff_apply(void *page, size_t page_size, const void *diff, size_t len)
{
    const unsigned char *d = diff;
    unsigned char *p = page;
    size_t off = 0;
    cm_status_t status = cm_tmk_diff_check(page_size, diff, len);

    if (status != CM_OK) {
        return status;
    }
    while (off < len) {
        size_t start = cm_tmk_get16(d + off), count = cm_tmk_get16(d + off + 2);
        memcpy(p + start * CM_TMK_WORD, d + off + CM_TMK_RUN_HDR, count * CM_TMK_WORD);
        off += CM_TMK_RUN_HDR + count * CM_TMK_WORD;
    }
    return CM_OK;
}
