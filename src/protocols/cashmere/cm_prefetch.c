/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prefetch on a miss: the mechanism and its argument are in cm_prefetch.h. The block's pages
 * in two small arrays, their entry words and the swaps' answers beside them.
 */
#include "config.h"
#include "src/protocols/cashmere/cm_prefetch.h"
#include "src/protocols/cashmere/cm_cm_int.h"
#include "src/protocols/cashmere/cm_refetch.h"

#define CM_PF_MAX 64

static struct {
    unsigned       n;                    /* pages per block; 0: off */
    unsigned       count;                /* pages picked by the miss under way */
    bool           peeked;               /* some entry words are on their way */
    uint64_t       page[CM_PF_MAX];
    uint64_t       word[CM_PF_MAX];      /* the entry as last seen or peeked */
    uint64_t       old[CM_PF_MAX];       /* the swap's answer */
    cm_dir_entry_t after[CM_PF_MAX];
    cm_dir_effects_t fx[CM_PF_MAX];
    bool           issued[CM_PF_MAX];
} cm_pf;

void cm_prefetch_init(unsigned n, bool possible)
{
    memset(&cm_pf, 0, sizeof(cm_pf));
    cm_pf.n = (possible && n > 1) ? (n > CM_PF_MAX ? CM_PF_MAX : n) : 0;
}

bool cm_prefetch_on(void)
{
    return cm_pf.n != 0;
}

cm_status_t cm_prefetch_issue(uint64_t p)
{
    uint64_t first;

    cm_pf.count  = 0;
    cm_pf.peeked = false;
    if (cm_pf.n == 0) {
        return CM_OK;
    }
    first = p - p % cm_pf.n;
    for (uint64_t q = first; q < first + cm_pf.n && q < cm_cm.npages; q++) {
        unsigned i = cm_pf.count;
        if (q == p || cm_cm.pte[q].mapped || cm_refetch_held(q)) {
            continue;
        }
        cm_pf.page[i] = q;
        if (!cm_dir_seen_word(&cm_cm.dir, q, &cm_pf.word[i])) {
            CM_CHECK(cm_dir_peek_nbi(&cm_cm.dir, q, &cm_pf.word[i]));
            cm_pf.peeked = true;
        }
        cm_pf.count++;
    }
    return CM_OK;
}

cm_status_t cm_prefetch_complete(void)
{
    unsigned n = cm_pf.count, issued = 0;

    cm_pf.count = 0;
    if (n == 0) {
        return CM_OK;
    }
    if (cm_pf.peeked) {
        CM_CHECK(cm_rma_flush_all(cm_cm.rma));
    }
    for (unsigned i = 0; i < n; i++) {
        uint64_t q = cm_pf.page[i];
        cm_pf.issued[i] = false;
        if (cm_cm.pte[q].mapped || cm_refetch_held(q)) {
            continue; /* mapped meanwhile (the faulting access touched two pages) */
        }
        CM_CHECK(cm_dir_join_nbi(&cm_cm.dir, q, cm_pf.word[i], &cm_pf.old[i], &cm_pf.after[i],
                                 &cm_pf.fx[i], &cm_pf.issued[i]));
        if (!cm_pf.issued[i]) {
            continue;
        }
        issued++;
        if ((int)cm_pf.after[i].home != cm_cm.me) {
            CM_CHECK(cm_rma_get_nbi(cm_cm.rma, (int)cm_pf.after[i].home, cm_cm_net(q),
                                    cm_cm_net(q), cm_cm.ps));
        }
    }
    if (issued == 0) {
        return CM_OK;
    }
    CM_CHECK(CM_STATS_IN_PHASE(&cm_cm.st.page_copy_ns, cm_rma_flush_all(cm_cm.rma)));
    for (unsigned i = 0; i < n; i++) {
        uint64_t q = cm_pf.page[i];
        cm_pte_t *pte = &cm_cm.pte[q];
        if (!cm_pf.issued[i] ||
            !cm_dir_join_done(&cm_cm.dir, q, cm_pf.word[i], cm_pf.old[i], &cm_pf.after[i])) {
            continue;
        }
        pte->home = (uint8_t)cm_pf.after[i].home;
        pte->flags &= CM_PTE_DIRTY | CM_PTE_LISTED;
        cm_refetch_prefetched(q);
        if ((int)pte->home != cm_cm.me) {
            cm_cm_fetched(q, (int)pte->home, 0);
            cm_cm.st.pages_prefetched++;
        }
        CM_CHECK(cm_cm_effects(q, &cm_pf.after[i], &cm_pf.fx[i]));
    }
    return CM_OK;
}
