/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Aliases of a peer's memory: a range of pe's copy of a segment mapped at an
 * address of the caller's choosing, so that plain loads and stores there reach
 * pe's memory with no software in between (what the paper's NH** variants ask
 * of the network interface). Only where pe's memory is mapped here already
 * (node-local peers: their memfd, or UCX's rkey_ptr mapping); the new mapping
 * shares the same pages (mremap with old size 0 duplicates a shared mapping).
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_rma_int.h"
#include "util/cm_log.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

cm_status_t cm_rma_alias(cm_rma_t *rma, int pe, const void *addr, void *dst, size_t len)
{
    uintptr_t a = (uintptr_t)addr;
    void *src, *p;

    for (int s = 0; s < rma->nsegs; s++) {
        cm_rma_seg_t *seg = rma->segs[s];
        if (a < seg->base || a + len > seg->base + seg->len) {
            continue;
        }
        if (seg->rbase[pe] == NULL) {
            return CM_ERR_UNSUPPORTED;
        }
        src = seg->rbase[pe] + (a - seg->base);
        /* The system call itself: UCX's memory hooks interpose mremap() and drop the new
         * address of MREMAP_FIXED (seen as a mapping placed at 0). */
        p = (void *)syscall(SYS_mremap, src, (size_t)0, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
        if (p != dst) {
            cm_error("cannot map %zu bytes of rank %d's memory at %p: %s%s", len, pe, dst,
                     strerror(errno),
                     (errno == ENOMEM) ? " (too many mappings: see sysctl vm.max_map_count)" : "");
            return CM_ERR_NO_MEMORY;
        }
        return CM_OK;
    }
    cm_error("cm_rma_alias: %p is in no segment", addr);
    return CM_ERR_INVALID;
}
