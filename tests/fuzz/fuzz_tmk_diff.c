/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: TreadMarks diffs. Odd first byte: the rest is a diff from a peer, applied to a
 * page; it must be refused (page untouched) or applied within the page. Even: the rest is a
 * page and its twin (two halves, at most 1 KiB each, a multiple of 4); the diff encoded
 * from them must pass the check and, applied to the twin, give back the page exactly.
 */
#include "config.h"
#include "src/protocols/treadmarks/cm_tmk_diff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    if (data[0] & 1) {
        enum { PAGE = 4096 };
        static unsigned char page[PAGE], before[PAGE];
        size_t len = size - 1;
        unsigned char *diff = malloc(len ? len : 1);

        if (diff == NULL) {
            return 0;
        }
        memcpy(diff, data + 1, len);
        memset(page, 0x5a, PAGE);
        memcpy(before, page, PAGE);
        if (cm_tmk_diff_apply(page, PAGE, diff, len) != CM_OK && memcmp(page, before, PAGE) != 0) {
            abort(); /* refused, yet the page changed */
        }
        free(diff);
    } else {
        size_t ps = ((size - 1) / 2) & ~(size_t)3;
        unsigned char *page, *twin, *out;
        size_t len;

        if (ps > 1024) {
            ps = 1024;
        }
        if (ps == 0) {
            return 0;
        }
        page = malloc(ps);
        twin = malloc(ps);
        out  = malloc(cm_tmk_diff_max(ps));
        if (page == NULL || twin == NULL || out == NULL) {
            abort();
        }
        memcpy(page, data + 1, ps);
        memcpy(twin, data + 1 + ps, ps);
        len = cm_tmk_diff_encode(page, twin, ps, out);
        if (len > cm_tmk_diff_max(ps) || cm_tmk_diff_check(ps, out, len) != CM_OK ||
            cm_tmk_diff_apply(twin, ps, out, len) != CM_OK || memcmp(twin, page, ps) != 0) {
            abort(); /* the codec does not round-trip */
        }
        free(out);
        free(twin);
        free(page);
    }
    return 0;
}
