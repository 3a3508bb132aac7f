/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes through the mapping (the third letter H of NHH*, with cm_fill_map.c):
 * the page's view is the home's memory, so every store lands in the master
 * copy as it happens; nothing is forwarded, so nothing is left to merge
 * (NHHM and NHHN are one mechanism here, as the variant table notes).
 *
 * What software still does is the paper's dirty bit: a page joins read-only
 * unless the access that faulted is a store, and the first store faults and
 * marks the page dirty, for the release's write transition (delayed write
 * notices). After the transition (processed bit) the page stays writable
 * until it is invalidated.
 */
#include "config.h"
#include "src/protocols/cashmere/cm_cm_int.h"

#include <stdlib.h>

static cm_status_t cm_wm_init(const cm_protocol_ctx_t *ctx, const cm_merge_ops_t *merge,
                              cm_write_t **self)
{
    /* Nothing of its own: the stores are in the homes' memory already. M collapses into N
     * (nothing is forwarded to merge; the variant table's note). */
    (void)ctx, (void)merge;
    *self = calloc(1, sizeof(**self));
    if (*self == NULL) {
        cm_error("cashmere: out of memory for the mapped writes");
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

static void cm_wm_fini(cm_write_t *self)
{
    free(self);
}

static int cm_wm_joining(cm_write_t *self, uint64_t p, int home, bool write)
{
    (void)self, (void)home;
    if (write) {
        cm_cm_mark_dirty(p);
        return PROT_READ | PROT_WRITE;
    }
    return PROT_READ;
}

static cm_status_t cm_wm_write_fault(cm_write_t *self, uint64_t p)
{
    (void)self;
    cm_cm_mark_dirty(p);
    return cm_cm_protect(p, PROT_READ | PROT_WRITE);
}

/* No store checks: the program is the plain build. */
static bool cm_wm_armed(cm_write_t *self, uint64_t p)
{
    (void)self, (void)p;
    return false;
}

/* The stores are in the homes' memory already: ordered before whatever publishes them. */
static void cm_wm_flush(cm_write_t *self)
{
    (void)self;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

const cm_write_ops_t cm_write_mapped_ops = {
    .name        = "mapped",
    .init        = cm_wm_init,
    .fini        = cm_wm_fini,
    .joining     = cm_wm_joining,
    .write_fault = cm_wm_write_fault,
    .armed       = cm_wm_armed,
    .flush       = cm_wm_flush,
    .faults_on_write = true,
};
