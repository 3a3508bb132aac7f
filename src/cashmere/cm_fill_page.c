/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Page copy on a fault (the C of C***): the first access to a page copies all
 * of it from its home with one RMA get into the local copy; later loads hit
 * the copy (the "hardware" of the paper's CH** reads). Dropping the page at
 * self-invalidation takes all access away, so the next one faults and copies
 * again. The home's own pages are its master copy and are never copied.
 *
 * A page whose home is known before its join (fixed, as the directory word last seen says) is
 * got at the same time as the join's compare-and-swap, not after it: one round trip, not two.
 * The order does not matter to what the copy must hold: every write released before our
 * acquire is at the home before this get is issued; a writer whose transition comes before
 * our join is in the entry we join (WEAK: a self-notice), one after it notifies us; either way
 * our next acquire drops the copy if a write it may lack was released meanwhile.
 */
#include "config.h"
#include "src/cashmere/cm_cm_int.h"

static struct {
    int64_t page; /* the page whose get is in flight (-1: none) */
    int     home;
} cm_fp = {-1, 0};

static cm_status_t cm_fp_init(void)
{
    cm_fp.page = -1;
    return CM_OK;
}

static cm_status_t cm_fp_early(uint64_t p, int home)
{
    CM_CHECK(cm_rma_get_nbi(cm_cm.rma, home, cm_cm_net(p), cm_cm_net(p), cm_cm.ps));
    cm_fp.page = (int64_t)p;
    cm_fp.home = home;
    return CM_OK;
}

static void cm_fp_fini(void)
{
}

static cm_status_t cm_fp_map(uint64_t p, int home, bool claimed_home, bool whole)
{
    bool early = cm_fp.page == (int64_t)p && cm_fp.home == home;

    (void)whole; /* the whole page, always */
    if (cm_fp.page >= 0) {
        CM_CHECK(cm_rma_flush(cm_cm.rma, cm_fp.home)); /* ours, right or not: it lands now */
        cm_fp.page = -1;
    }
    /* A page that just moved here was copied in while its entry was held (cm_cm_held). */
    if (!claimed_home && home != cm_cm.me) {
        if (!early) {
            CM_CHECK(cm_rma_get(cm_cm.rma, home, cm_cm_net(p), cm_cm_net(p), cm_cm.ps));
        }
        cm_cm.st.pages_fetched++;
    }
    return CM_OK;
}

static cm_status_t cm_fp_drop(uint64_t p)
{
    return cm_cm_protect(p, PROT_NONE);
}

const cm_fill_ops_t cm_fill_page_ops = {
    .name = "page",
    .init = cm_fp_init,
    .fini = cm_fp_fini,
    .map  = cm_fp_map,
    .early = cm_fp_early,
    .drop = cm_fp_drop,
    .copies = true,
};
