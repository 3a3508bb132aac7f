/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two-way diffs (Cashmere-2L): the host's copy of a page against its twin, byte by byte.
 * Other processes of the host may be storing to the copy meanwhile (to other bytes, in a
 * program without races): every byte of the copy is read once and written alone (volatile
 * byte accesses, which the compiler may not widen into word stores that would write
 * neighbours' bytes back).
 */
#include "config.h"
#include "src/protocols/twolevel/cm_2l_int.h"
#include "util/cm_error.h"

#include <string.h>

size_t cm_2l_diff_in(char *copy, char *twin, const char *got, size_t len, bool has_twin)
{
    volatile char *c = copy;
    size_t changed = 0;

    if (!has_twin) {
        /* Nobody here writes the page (a writer makes the twin first): got is the page. */
        memcpy(copy, got, len);
        return len;
    }
    for (size_t i = 0; i < len; i += sizeof(uint64_t)) {
        uint64_t g, t;
        memcpy(&g, got + i, sizeof(g));
        memcpy(&t, twin + i, sizeof(t));
        if (g == t) {
            continue;
        }
        for (size_t b = i; b < i + sizeof(uint64_t); b++) {
            if (got[b] != twin[b]) { /* written at the home since: ours is older */
                c[b]    = got[b];
                twin[b] = got[b];
                changed++;
            }
        }
    }
    return changed;
}

cm_status_t cm_2l_diff_out(const char *copy, char *twin, size_t len, cm_2l_put_fn_t put,
                           void *arg, size_t *changed)
{
    const volatile char *c = copy;
    size_t run = 0, start = 0, total = 0;

    for (size_t i = 0; i < len; i += sizeof(uint64_t)) {
        uint64_t w, t;
        memcpy(&w, copy + i, sizeof(w)); /* a first look: a word unchanged is skipped */
        memcpy(&t, twin + i, sizeof(t));
        if (w == t) {
            if (run > 0) {
                CM_CHECK(put(start, run, arg));
                run = 0;
            }
            continue;
        }
        for (size_t b = i; b < i + sizeof(uint64_t); b++) {
            char v = c[b];
            if (v != twin[b]) {
                twin[b] = v; /* what the home gets: the put reads the twin */
                if (run == 0) {
                    start = b;
                }
                run++;
                total++;
            } else if (run > 0) {
                CM_CHECK(put(start, run, arg));
                run = 0;
            }
        }
    }
    if (run > 0) {
        CM_CHECK(put(start, run, arg));
    }
    *changed = total;
    return CM_OK;
}
