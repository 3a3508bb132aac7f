/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Page copy on a fault (the C of C***): the first access to a page copies all
 * of it from its home with one RMA get into the local copy; later loads hit
 * the copy (the "hardware" of the paper's CH** reads). Dropping the page at
 * self-invalidation takes all access away, so the next one faults and copies
 * again. The home's own pages are its master copy and are never copied.
 */
#include "config.h"
#include "src/cashmere/cm_cm_int.h"

static cm_status_t cm_fp_init(void)
{
    return CM_OK;
}

static void cm_fp_fini(void)
{
}

static cm_status_t cm_fp_map(uint64_t p, int home, bool claimed_home, bool whole)
{
    (void)whole; /* the whole page, always */
    /* A page that just moved here was copied in while its entry was held (cm_cm_held). */
    if (!claimed_home && home != cm_cm.me) {
        CM_CHECK(cm_rma_get(cm_cm.rma, home, cm_cm_net(p), cm_cm_net(p), cm_cm.ps));
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
    .drop = cm_fp_drop,
    .copies = true,
};
