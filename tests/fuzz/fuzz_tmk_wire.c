/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: every TreadMarks message decoder. The first byte picks the message type, the
 * second the job's size (1-8 processes); the rest is the message, as a peer's bytes would
 * arrive. cm_tmk_wire_check must reject what is malformed and read nothing past the end;
 * what it accepts must then decode whole: every interval unpacks (cm_tmk_iv_unpack) and
 * every diff applies (cm_tmk_diff_apply) to a page, in bounds.
 */
#include "config.h"
#include "src/protocols/treadmarks/cm_tmk_diff.h"
#include "src/protocols/treadmarks/cm_tmk_interval.h"
#include "src/protocols/treadmarks/cm_tmk_wire.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 256 /* small, so that page replies and whole-page diffs are within reach */

static uint32_t word(const char *p, size_t i)
{
    uint32_t w;
    memcpy(&w, p + 4 * i, 4);
    return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cm_tmk_geom_t g = {.nlocks = 16, .npages = 64, .page_size = PAGE};
    int type;
    char *msg;
    size_t len;

    if (size < 2) {
        return 0;
    }
    type     = data[0] % (TM_NTYPES + 1);
    g.nprocs = data[1] % 8 + 1;
    len      = size - 2;
    msg      = malloc(len ? len : 1); /* exactly the message: ASan sees a read past it */
    if (msg == NULL) {
        return 0;
    }
    memcpy(msg, data + 2, len);
    if (cm_tmk_wire_check(&g, type, msg, len) != CM_OK) {
        free(msg);
        return 0;
    }
    if (type == TM_LOCK_GRANT || type == TM_BAR_ARRIVE || type == TM_BAR_DEPART) {
        size_t off = (3 + (size_t)g.nprocs) * 4;
        for (uint32_t i = 0; i < word(msg, 1); i++) {
            cm_tmk_interval_t *iv;
            size_t used;
            if (cm_tmk_iv_unpack(msg + off, len - off, g.nprocs, &iv, &used) != CM_OK) {
                abort(); /* accepted, yet an interval does not unpack */
            }
            off += used;
            cm_tmk_iv_free(iv);
        }
        if (off != len) {
            abort();
        }
    } else if (type == TM_DIFF_REPLY) {
        uint32_t n = word(msg, 1);
        size_t off = (3 + 3 * (size_t)n) * 4;
        char page[PAGE];
        memset(page, 0, sizeof(page));
        for (uint32_t i = 0; i < n; i++) {
            uint32_t dl = word(msg, 5 + 3 * (size_t)i);
            if (dl == UINT32_MAX) {
                continue;
            }
            if (cm_tmk_diff_apply(page, PAGE, msg + off, dl) != CM_OK) {
                abort(); /* accepted, yet a diff does not apply */
            }
            off += dl;
        }
    }
    free(msg);
    return 0;
}
