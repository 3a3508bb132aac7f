/* SPDX-License-Identifier: BSD-3-Clause */
/* TreadMarks diffs: word runs with byte masks where a word changed in part (see cm_tmk_diff.h). */
#include "src/protocols/treadmarks/cm_tmk_diff.h"

#include <string.h>

static inline uint32_t cm_tmk_word(const unsigned char *p, size_t w)
{
    uint32_t v;
    memcpy(&v, p + w * CM_TMK_WORD, sizeof(v));
    return v;
}

/* Which bytes of a 4-byte word differ: bit b for byte b in memory order. */
static inline unsigned cm_tmk_word_mask(const unsigned char *a, const unsigned char *b)
{
    return (unsigned)(a[0] != b[0]) | (unsigned)(a[1] != b[1]) << 1 | (unsigned)(a[2] != b[2]) << 2 |
           (unsigned)(a[3] != b[3]) << 3;
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

static inline size_t cm_tmk_run_len(size_t count, int masked)
{
    return CM_TMK_RUN_HDR + count * CM_TMK_WORD + (masked ? (count + 1) / 2 : 0);
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
        int masked   = 0;
        while (w < words && w - start < CM_TMK_RUN_MAX) {
            uint32_t x = cm_tmk_word(a, w) ^ cm_tmk_word(b, w);
            if (x == 0) {
                break;
            }
            /* A byte of the word unchanged: the run needs masks (any byte order). */
            masked |= (x & 0xffu) == 0 || (x & 0xff00u) == 0 || (x & 0xff0000u) == 0 || (x >> 24) == 0;
            w++;
        }
        size_t count = w - start;
        cm_tmk_put16(o + len, (uint16_t)start);
        cm_tmk_put16(o + len + 2, (uint16_t)(count | (masked ? CM_TMK_RUN_MASKED : 0)));
        memcpy(o + len + CM_TMK_RUN_HDR, a + start * CM_TMK_WORD, count * CM_TMK_WORD);
        if (masked) {
            unsigned char *m = o + len + CM_TMK_RUN_HDR + count * CM_TMK_WORD;
            memset(m, 0, (count + 1) / 2);
            for (size_t i = 0; i < count; i++) {
                size_t off = (start + i) * CM_TMK_WORD;
                m[i / 2] |= (unsigned char)(cm_tmk_word_mask(a + off, b + off) << (4 * (i % 2)));
            }
        }
        len += cm_tmk_run_len(count, masked);
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
        int masked;
        if (len - off < CM_TMK_RUN_HDR) {
            return CM_ERR_INVALID;
        }
        start  = cm_tmk_get16(d + off);
        count  = cm_tmk_get16(d + off + 2);
        masked = (count & CM_TMK_RUN_MASKED) != 0;
        count &= CM_TMK_RUN_MAX;
        if (count == 0 || start + count > words || len - off < cm_tmk_run_len(count, masked)) {
            return CM_ERR_INVALID;
        }
        off += cm_tmk_run_len(count, masked);
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
        int masked = (count & CM_TMK_RUN_MASKED) != 0;
        const unsigned char *src = d + off + CM_TMK_RUN_HDR;

        count &= CM_TMK_RUN_MAX;
        if (!masked) {
            memcpy(p + start * CM_TMK_WORD, src, count * CM_TMK_WORD);
        } else {
            const unsigned char *m = src + count * CM_TMK_WORD;
            for (size_t i = 0; i < count; i++) {
                unsigned bits = (m[i / 2] >> (4 * (i % 2))) & 0xfu;
                unsigned char *dst = p + (start + i) * CM_TMK_WORD;
                if (bits == 0xfu) {
                    memcpy(dst, src + i * CM_TMK_WORD, CM_TMK_WORD);
                    continue;
                }
                for (unsigned byte = 0; byte < CM_TMK_WORD; byte++) {
                    if (bits & (1u << byte)) {
                        dst[byte] = src[i * CM_TMK_WORD + byte];
                    }
                }
            }
        }
        off += cm_tmk_run_len(count, masked);
    }
    return CM_OK;
}
