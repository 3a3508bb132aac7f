/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: cm_trace's reader of trace files (src/tools/cm_trace_read.c) and its report
 * (cm_trace_top.c). The input is one rank's PREFIX.RANK.cmtrace; a file that is no trace must
 * be refused with a reason, and one that is accepted (any records, any clock values, any
 * peers and sequence numbers) is put on one clock, its messages matched to their sends and
 * summed up as --top does, without crashing or touching memory out of bounds.
 */
#include "config.h"
#include "src/tools/cm_trace_tool.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    cmt_proc_t p;
    char err[256] = "";

    if (null == NULL && (null = fopen("/dev/null", "w")) == NULL) {
        abort();
    }
    memset(&p, 0, sizeof(p));
    if (cmt_parse(&p, data, size, err, sizeof(err)) != CM_OK) {
        if (err[0] == '\0') {
            abort(); /* a refusal says why */
        }
        return 0;
    }
    /* One rank of a job of one: what cm_trace does after reading every rank. */
    p.h.rank   = 0;
    p.h.nprocs = 1;
    cmt_procs  = &p;
    cmt_nprocs = 1;
    cmt_origin = UINT64_MAX;
    for (size_t k = 0; k < p.n; k++) {
        uint64_t g = cmt_global_ns(&p, p.rec[k].t);
        if (!cmt_is_meta(&p.rec[k]) && g < cmt_origin) {
            cmt_origin = g;
        }
    }
    if (cmt_origin == UINT64_MAX) {
        cmt_origin = 0;
    }
    cmt_index_sends();
    for (size_t k = 0; k < p.n; k++) {
        if (p.rec[k].kind == CM_TRACE_MSG_SERVE) {
            (void)cmt_send_of(&p, &p.rec[k]);
        }
        (void)cmt_us(&p, p.rec[k].t + cmt_dur(&p.rec[k]));
    }
    cmt_top(null, 10);
    cmt_free_sends();
    free(p.rec);
    return 0;
}
