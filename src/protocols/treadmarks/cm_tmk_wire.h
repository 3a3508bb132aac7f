/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The form of every TreadMarks message, checked before anything acts on it. A message's
 * numbers index arrays (a page, a lock, a rank, a diff's words): one that is out of range or
 * a length that does not add up is rejected here with CM_ERR_INVALID, so the handlers never
 * read past a message or write through a bad index; the job then ends with one line naming
 * the message. Pure functions of the bytes and the job's geometry, so that libFuzzer drives
 * them alone (tests/fuzz/fuzz_tmk_wire.c).
 *
 * Forms (32-bit words in host order; the message types of cm_tmk_int.h):
 *   LOCK_REQ, LOCK_FWD      lock, requester, vt[np]
 *   LOCK_GRANT, BAR_ARRIVE, BAR_DEPART
 *                           id, count, flag, vt[np], then count intervals, each
 *                           proc, index, npages, vt[np], page[npages] (cm_tmk_iv_pack)
 *   DIFF_REQ                page, n, 0, then n pairs (proc, index)
 *   DIFF_REPLY              page, n, 0, then n triples (proc, index, diff length or
 *                           0xffffffff: not here), then the diffs (cm_tmk_diff.h)
 *   PAGE_REQ                page, 0
 *   PAGE_REPLY              page, 0, then the page's bytes
 *   GC_DONE, GC_GO          1
 */
#ifndef CM_TMK_WIRE_H
#define CM_TMK_WIRE_H

#include "cm.h"

#include <stddef.h>
#include <stdint.h>

/* Message types (active message ids). */
enum {
    TM_LOCK_REQ = 1, /* acquirer -> manager */
    TM_LOCK_FWD,     /* manager -> last requester */
    TM_LOCK_GRANT,   /* token holder -> acquirer, with the send_set */
    TM_BAR_ARRIVE,   /* worker -> barrier manager, with intervals */
    TM_BAR_DEPART,   /* barrier manager -> worker, with what it lacks */
    TM_DIFF_REQ,
    TM_DIFF_REPLY,
    TM_PAGE_REQ,
    TM_PAGE_REPLY,
    TM_GC_DONE,      /* worker -> manager: every copy here is valid */
    TM_GC_GO,        /* manager -> worker: everyone is; drop the history */
    TM_NTYPES
};

typedef struct {
    int      nprocs;
    unsigned nlocks;
    uint64_t npages;
    size_t   page_size;
} cm_tmk_geom_t;

/* CM_OK if data (len bytes, any alignment) is a well-formed message of this type for a job
 * of geometry g; else CM_ERR_INVALID (an unknown type too). Reads only data[0..len). */
cm_status_t cm_tmk_wire_check(const cm_tmk_geom_t *g, int type, const void *data, size_t len);

#endif
