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

static cm_status_t cm_wm_init(const cm_protocol_ctx_t *ctx)
{
    (void)ctx;
    return CM_OK;
}

static void cm_wm_fini(void)
{
}

static int cm_wm_joining(uint64_t p, int home, bool write)
{
    (void)home;
    if (write) {
        cm_cm_mark_dirty(p);
        return PROT_READ | PROT_WRITE;
    }
    return PROT_READ;
}

static cm_status_t cm_wm_write_fault(uint64_t p)
{
    cm_cm_mark_dirty(p);
    return cm_cm_protect(p, PROT_READ | PROT_WRITE);
}

/* No store checks: the program is the plain build. */
static bool cm_wm_armed(uint64_t p)
{
    (void)p;
    return false;
}

/* The stores are in the homes' memory already: ordered before whatever publishes them. */
static void cm_wm_flush(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static cm_status_t cm_wm_settle(uint64_t p)
{
    (void)p;
    return CM_OK;
}

const cm_write_ops_t cm_write_mapped_ops = {
    .name        = "mapped",
    .init        = cm_wm_init,
    .fini        = cm_wm_fini,
    .joining     = cm_wm_joining,
    .write_fault = cm_wm_write_fault,
    .armed       = cm_wm_armed,
    .store       = NULL,
    .flush       = cm_wm_flush,
    .settle      = cm_wm_settle,
    .dropped     = NULL,
    .reset       = NULL,
    .stats       = NULL,
    .faults_on_write = true,
    .stats_reset = NULL,
};
