/* SPDX-License-Identifier: BSD-3-Clause */
/* The form of every TreadMarks message (see cm_tmk_wire.h). */
#include "config.h"
#include "src/protocols/treadmarks/cm_tmk_wire.h"
#include "src/protocols/treadmarks/cm_tmk_diff.h"

#include <string.h>

/* Word i of a message that may be unaligned. */
static uint32_t tm_word(const void *data, size_t i)
{
    uint32_t w;

    memcpy(&w, (const char *)data + i * sizeof(w), sizeof(w));
    return w;
}

/* Intervals packed after an interval message's header: count of them filling [off, len). */
static cm_status_t tm_check_intervals(const cm_tmk_geom_t *g, const char *data, size_t off,
                                      size_t len, uint32_t count)
{
    const size_t np = (size_t)g->nprocs;

    for (uint32_t i = 0; i < count; i++) {
        const char *iv = data + off;
        uint32_t proc, index, npages;

        if (len - off < 3 * sizeof(uint32_t)) {
            return CM_ERR_INVALID;
        }
        proc   = tm_word(iv, 0);
        index  = tm_word(iv, 1);
        npages = tm_word(iv, 2);
        /* In words, so that no multiplication can overflow before the comparison. */
        if (proc >= np || index == 0 || (len - off) / sizeof(uint32_t) < 3 + np ||
            npages > (len - off) / sizeof(uint32_t) - 3 - np || tm_word(iv, 3 + proc) != index) {
            return CM_ERR_INVALID;
        }
        for (uint32_t k = 0; k < npages; k++) {
            if (tm_word(iv, 3 + np + k) >= g->npages) {
                return CM_ERR_INVALID;
            }
        }
        off += (3 + np + npages) * sizeof(uint32_t);
    }
    return off == len ? CM_OK : CM_ERR_INVALID;
}

static cm_status_t tm_check_diff_reply(const cm_tmk_geom_t *g, const char *data, size_t len)
{
    uint32_t n = tm_word(data, 1);
    size_t words = len / sizeof(uint32_t), off;

    if (n > (words - 3) / 3) {
        return CM_ERR_INVALID;
    }
    off = (3 + 3 * (size_t)n) * sizeof(uint32_t);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t dl = tm_word(data, 5 + 3 * (size_t)i);

        if (tm_word(data, 3 + 3 * (size_t)i) >= (uint32_t)g->nprocs) {
            return CM_ERR_INVALID;
        }
        if (dl == UINT32_MAX) {
            continue; /* not at that process */
        }
        if (dl > len - off || cm_tmk_diff_check(g->page_size, data + off, dl) != CM_OK) {
            return CM_ERR_INVALID;
        }
        off += dl;
    }
    return off == len ? CM_OK : CM_ERR_INVALID;
}

cm_status_t cm_tmk_wire_check(const cm_tmk_geom_t *g, int type, const void *msg, size_t len)
{
    const char *data = msg;
    const size_t np = (size_t)g->nprocs, words = len / sizeof(uint32_t);

    if (g->nprocs <= 0 ||
        (len % sizeof(uint32_t) != 0 && type != TM_PAGE_REPLY && type != TM_DIFF_REPLY)) {
        return CM_ERR_INVALID;
    }
    switch (type) {
    case TM_LOCK_REQ:
    case TM_LOCK_FWD:
        return (len == (2 + np) * sizeof(uint32_t) && tm_word(data, 0) < g->nlocks &&
                tm_word(data, 1) < np) ? CM_OK : CM_ERR_INVALID;
    case TM_LOCK_GRANT:
    case TM_BAR_ARRIVE:
    case TM_BAR_DEPART:
        if (words < 3 + np || (type == TM_LOCK_GRANT && tm_word(data, 0) >= g->nlocks)) {
            return CM_ERR_INVALID;
        }
        return tm_check_intervals(g, data, (3 + np) * sizeof(uint32_t), len, tm_word(data, 1));
    case TM_DIFF_REQ: {
        uint32_t n;

        if (words < 3 || tm_word(data, 0) >= g->npages) {
            return CM_ERR_INVALID;
        }
        n = tm_word(data, 1);
        if (n != (words - 3) / 2 || len != (3 + 2 * (size_t)n) * sizeof(uint32_t)) {
            return CM_ERR_INVALID;
        }
        for (uint32_t i = 0; i < n; i++) {
            if (tm_word(data, 3 + 2 * (size_t)i) >= np) {
                return CM_ERR_INVALID;
            }
        }
        return CM_OK;
    }
    case TM_DIFF_REPLY:
        if (len < 3 * sizeof(uint32_t) || tm_word(data, 0) >= g->npages) {
            return CM_ERR_INVALID;
        }
        return tm_check_diff_reply(g, data, len);
    case TM_PAGE_REQ:
        return (len == 2 * sizeof(uint32_t) && tm_word(data, 0) < g->npages) ? CM_OK
                                                                           : CM_ERR_INVALID;
    case TM_PAGE_REPLY:
        return (len == 2 * sizeof(uint32_t) + g->page_size && tm_word(data, 0) < g->npages)
                   ? CM_OK : CM_ERR_INVALID;
    case TM_GC_DONE:
    case TM_GC_GO:
        return (len == sizeof(uint32_t) && tm_word(data, 0) == 1) ? CM_OK : CM_ERR_INVALID;
    default:
        return CM_ERR_INVALID;
    }
}
