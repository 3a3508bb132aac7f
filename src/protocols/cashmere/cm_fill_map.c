/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * No copy, hardware reads (the NH of NH**): a page's application view is
 * mapped onto its home's memory, so loads and stores reach the master copy
 * with no software in between, as the paper's network interface that fills
 * cache lines from remote memory and snoops stores. Here the "network" is a
 * node-local peer's memory (its memfd, mapped through rma/), whose caches
 * the hardware keeps coherent: nothing is ever copied and nothing is doubled.
 *
 * The protocol still runs every event: a first access faults and joins the
 * directory (the mapping is made then, onto the home of that moment, so a
 * first-touch home migration remaps), written pages are known by their write
 * fault (cm_write_mapped.c), and self-invalidation takes the mapping's
 * access away as the paper's purge of the page's lines would.
 *
 * Where a peer's memory cannot be mapped (another node, a TCP path) the
 * variant is refused at start, naming the peers and their transports.
 */
#include "config.h"
#include "src/protocols/cashmere/cm_cm_int.h"

#include <stdio.h>
#include <stdlib.h>

static cm_status_t cm_fm_init(const cm_protocol_ctx_t *ctx, cm_fill_t **self)
{
    char peers[256] = "", path[96];
    size_t used = 0;
    int missing = 0;

    (void)ctx;
    for (int pe = 0; pe < cm_cm.nprocs; pe++) {
        if (pe == cm_cm.me || cm_rma_ptr(cm_cm.rma, pe, cm_cm.net) != NULL) {
            continue;
        }
        if (missing++ < 4 && used < sizeof(peers)) {
            cm_rma_describe_peer(cm_cm.rma, pe, path, sizeof(path));
            used += (size_t)snprintf(peers + used, sizeof(peers) - used, "%s%d (%s)",
                                     used ? ", " : "", pe, path);
        }
    }
    if (missing > 0) {
        /* The relation is symmetric (node-local peers map each other): rank 0 has such a peer
         * whenever anyone does, and says it once for the job. */
        if (cm_cm.me == 0) {
            cm_error("CM_VARIANT=%s maps each page onto its home's memory, but %d peer%s of rank 0 "
                     "%s not mapped here: rank%s %s%s; run the job on one node over shared memory "
                     "(UCX_TLS with posix or sysv), or use a C or NS variant",
                     cm_cm.vname, missing, (missing > 1) ? "s" : "",
                     (missing > 1) ? "are" : "is", (missing > 1) ? "s" : "", peers,
                     (missing > 4) ? ", ..." : "");
        } else {
            cm_debug("some peers are not mapped here (rank 0 reports it)");
        }
        return CM_ERR_UNSUPPORTED;
    }
    /* Nothing of its own: the mapping is the page table's and the one-sided layer's. */
    *self = calloc(1, sizeof(**self));
    if (*self == NULL) {
        cm_error("cashmere: out of memory for the mapped fill");
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

static void cm_fm_fini(cm_fill_t *self)
{
    free(self);
}

/* The page's view becomes the home's memory (our own for a page homed here: its own view may
 * still alias a former home). The access comes after, from the write mechanism. */
static cm_status_t cm_fm_map(cm_fill_t *self, uint64_t p, int home, bool claimed_home,
                             bool whole)
{
    (void)self;
    (void)whole; /* the whole page, always */
    (void)claimed_home; /* copied into our memory while the entry was held: mapped like any */
    CM_CHECK(cm_rma_alias(cm_cm.rma, home, cm_cm_net(p), cm_cm_app(p), cm_cm.ps));
    cm_cm.pte[p].prot = CM_PTE_PROT_UNKNOWN; /* a new mapping: whatever it allows, set it */
    cm_cm.st.pages_mapped++;
    return CM_OK;
}

/* No access until the page joins again: the paper's purge of the page's cached lines. */
static cm_status_t cm_fm_drop(cm_fill_t *self, uint64_t p)
{
    (void)self;
    return cm_cm_protect(p, PROT_NONE);
}

const cm_fill_ops_t cm_fill_map_ops = {
    .name = "map",
    .init = cm_fm_init,
    .fini = cm_fm_fini,
    .map  = cm_fm_map,
    .drop = cm_fm_drop,
};
