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
 * Every write released before our acquire is at the home before this get is issued. A later
 * write the copy may lack is a writer's whose writes land after the get read the page: if it
 * is in the entry we join, the page turns or is WEAK and we self-notice; if its transition
 * follows our join, it notifies us. Either way our next acquire drops the copy. What is left
 * is a writer that joined, wrote and left between the word we saw and our join: it is in no
 * entry we see. So the copy counts only if the join's first compare-and-swap, on the word
 * seen before the get was issued, succeeds: the word's tag counts writers that left
 * (cm_dir.h), so an unchanged word had none. Otherwise (fill op .early with home -1) the
 * page is got again after the join, as without the early copy. In the add form, where the
 * data lives at the directory home, the get is issued after the join's add and fenced behind
 * it (cm_dir_add_join_issue): the home reads the page after the join, and no tag is needed.
 */
#include "config.h"
#include "src/protocols/cashmere/cm_cm_int.h"

#include <stdlib.h>

typedef struct {
    cm_fill_t base; /* first: the instance the ops get as self */
    int64_t        page; /* the page whose get is in flight (-1: none) */
    int            home;
    cm_rma_fetch_t get;  /* waited for alone: a flush of the home would also wait for the
                            acknowledgements of our forwarded stores there */
} cm_fp_t;

static cm_status_t cm_fp_init(const cm_protocol_ctx_t *ctx, cm_fill_t **self)
{
    cm_fp_t *fp = calloc(1, sizeof(*fp));

    (void)ctx;
    if (fp == NULL) {
        cm_error("cashmere: out of memory for the page fill");
        return CM_ERR_NO_MEMORY;
    }
    fp->page = -1;
    *self    = &fp->base;
    return CM_OK;
}

static cm_status_t cm_fp_early(cm_fill_t *self, uint64_t p, int home)
{
    cm_fp_t *fp = (cm_fp_t *)self;

    if (home < 0) {
        fp->home = -1; /* stale: it lands at map's flush, and map gets the page again */
        cm_cm.st.early_stale++;
        return CM_OK;
    }
    cm_cm.st.early_copies++;
    CM_CHECK(cm_rma_get_fetch(cm_cm.rma, home, cm_cm_net(p), cm_cm_net(p), cm_cm.ps, &fp->get));
    fp->page = (int64_t)p;
    fp->home = home;
    return CM_OK;
}

static cm_status_t cm_fp_early_wait(cm_fill_t *self)
{
    cm_fp_t *fp = (cm_fp_t *)self;

    return (fp->page >= 0) ? cm_rma_fetch_wait(cm_cm.rma, &fp->get) : CM_OK;
}

static void cm_fp_fini(cm_fill_t *self)
{
    (void)self;
    free(self);
}

static cm_status_t cm_fp_map(cm_fill_t *self, uint64_t p, int home, bool claimed_home, bool whole)
{
    cm_fp_t *fp = (cm_fp_t *)self;
    bool early = fp->page == (int64_t)p && fp->home == home;
    uint64_t t0 = cm_trace_begin();

    (void)whole; /* the whole page, always */
    if (fp->page >= 0) {
        /* Ours, right or not: it lands now. */
        fp->page = -1;
        CM_CHECK(cm_rma_fetch_wait(cm_cm.rma, &fp->get));
    }
    /* A page that just moved here was copied in while its entry was held (cm_cm_held). */
    if (!claimed_home && home != cm_cm.me) {
        if (!early) {
            CM_CHECK(cm_rma_get(cm_cm.rma, home, cm_cm_net(p), cm_cm_net(p), cm_cm.ps));
        }
        /* An early copy was issued with the directory update: only its wait is timed. */
        cm_cm_fetched(p, home, t0);
    }
    return CM_OK;
}

static cm_status_t cm_fp_drop(cm_fill_t *self, uint64_t p)
{
    (void)self;
    (void)self;
    return cm_cm_protect(p, PROT_NONE);
}

const cm_fill_ops_t cm_fill_page_ops = {
    .name = "page",
    .init = cm_fp_init,
    .fini = cm_fp_fini,
    .map  = cm_fp_map,
    .early = cm_fp_early,
    .early_wait = cm_fp_early_wait,
    .drop = cm_fp_drop,
    .copies = true,
};
