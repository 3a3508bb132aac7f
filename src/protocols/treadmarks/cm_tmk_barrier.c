/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TreadMarks barriers, a central manager per barrier (round-robin), and the garbage collection
 * that a barrier runs when some process holds more history than CM_TMK_GC_BYTES.
 */
#define _GNU_SOURCE
#include "config.h"
#include "util/cm_log.h"
#include "util/cm_time.h"
#include "src/protocols/treadmarks/cm_tmk_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- barriers and garbage collection ----------------------------------------------------- */

static cm_status_t tm_gc_run(int mgr);

static cm_status_t tm_barrier(void)
{
    const uint32_t seq = cm_tmk.bar_seq++;
    const int mgr = (int)(seq % (uint32_t)cm_tmk.np);
    bool gc;
    cm_status_t status = CM_OK;

    cm_tmk_mu_lock();
    cm_tmk.st.barriers++;
    status = cm_tmk_new_interval();
    gc = cm_tmk.store.bytes > cm_tmk.gc_bytes;
    if (status != CM_OK || cm_tmk.np == 1) {
        goto out_unlock;
    }
    if (cm_tmk.me != mgr) {
        /* The manager knows at least what everyone knew at the last departure. */
        atomic_store(&cm_tmk.departed, 0);
        status = cm_tmk_send_intervals(mgr, TM_BAR_ARRIVE, seq, gc, cm_tmk.bar_vt);
        if (status != CM_OK) {
            goto out_unlock;
        }
        cm_tmk_wait_ge(&cm_tmk.departed, 1,
                       CM_RMA_WHY("the departure from barrier %a, sent by its manager, rank %b",
                                  NULL, seq, (uint64_t)mgr, mgr));
        const uint32_t *d = cm_tmk_ivmsg_header(&cm_tmk.depart);
        if (d[0] != seq) {
            cm_error("treadmarks: departure from barrier %u while in barrier %u", d[0], seq);
            status = CM_ERR_INVALID;
        } else {
            gc = d[2] != 0;
            status = cm_tmk_take_intervals(&cm_tmk.depart);
        }
        cm_tmk_drop(&cm_tmk.depart);
    } else {
        cm_tmk_wait_ge(&cm_tmk.narrived, cm_tmk.np - 1,
                       CM_RMA_WHY("the arrivals of the %a other ranks at barrier %b, managed "
                                  "here", NULL, (uint64_t)cm_tmk.np - 1, seq, -1));
        atomic_store(&cm_tmk.narrived, 0);
        for (int w = 0; w < cm_tmk.np && status == CM_OK; w++) {
            const uint32_t *a = cm_tmk_ivmsg_header(&cm_tmk.arrivals[w]);
            if (w == cm_tmk.me) {
                continue;
            }
            if (a[0] != seq) {
                cm_error("treadmarks: arrival for barrier %u while in barrier %u", a[0], seq);
                status = CM_ERR_INVALID;
                break;
            }
            gc |= a[2] != 0;
            status = cm_tmk_take_intervals(&cm_tmk.arrivals[w]);
        }
        /* Each worker gets what its arrival's timestamp lacks. */
        for (int w = 0; w < cm_tmk.np && status == CM_OK; w++) {
            if (w != cm_tmk.me) {
                status = cm_tmk_send_intervals(w, TM_BAR_DEPART, seq, gc,
                                               cm_tmk_ivmsg_header(&cm_tmk.arrivals[w]) + 3);
            }
        }
        for (int w = 0; w < cm_tmk.np; w++) {
            cm_tmk_drop(&cm_tmk.arrivals[w]);
        }
    }
    memcpy(cm_tmk.bar_vt, cm_tmk.store.vt, (size_t)cm_tmk.np * sizeof(uint32_t));
    cm_tmk.st.acquires++;
    cm_tmk.st.releases++;
    if (status != CM_OK) {
        goto out_unlock;
    }
    if (gc) {
        status = tm_gc_run(mgr);
        if (status != CM_OK) {
            goto out_unlock;
        }
    }
    status = cm_tmk_pf_acquired(); /* after a collection: it validated every copy */
out_unlock:
    cm_tmk_mu_unlock();
    return status;
}

cm_status_t cm_tmk_barrier(void)
{
    return CM_RMA_COUNT_WAITS(&cm_tmk.st.waits_barrier,
                              CM_STATS_IN_PHASE(&cm_tmk.st.barrier_ns, tm_barrier()));
}

/*
 * Garbage collection (thesis 2.3.1): every copy that is not unmapped is
 * brought up to date (a manager's copy always: later first accesses copy it),
 * everyone reports to the barrier's manager, and once all have, every process
 * drops its intervals, notices, diffs and twins.
 */
static cm_status_t tm_gc_run(int mgr)
{
    uint32_t one = 1;

    for (uint64_t t = 0; t < cm_tmk.ntouched; t++) {
        uint64_t p = cm_tmk.touched[t];
        cm_tmk_page_t *pg = &cm_tmk.pages[p];
        bool unapplied = false;
        for (uint32_t r = pg->unapplied; r < pg->nrefs && !unapplied; r++) {
            unapplied = !pg->refs[r].applied;
        }
        if (!unapplied || (pg->state == TM_UNMAPPED && cm_tmk_manager(p) != cm_tmk.me)) {
            continue;
        }
        CM_CHECK(cm_tmk_validate(p));
        CM_CHECK(cm_tmk_protect(p, PROT_READ));
        pg->state = TM_READ_ONLY;
    }
    if (cm_tmk.me != mgr) {
        atomic_store(&cm_tmk.gc_go, 0);
        CM_CHECK(cm_tmk_post(mgr, TM_GC_DONE, &one, sizeof(one)));
        cm_tmk_wait_ge(&cm_tmk.gc_go, 1,
                       CM_RMA_WHY("the end of a garbage collection, sent by its manager, rank %a",
                                  NULL, (uint64_t)mgr, 0, mgr));
    } else {
        cm_tmk_wait_ge(&cm_tmk.gc_done, cm_tmk.np - 1,
                       CM_RMA_WHY("the %a other ranks done with a garbage collection, managed "
                                  "here", NULL, (uint64_t)cm_tmk.np - 1, 0, -1));
        atomic_store(&cm_tmk.gc_done, 0);
        for (int w = 0; w < cm_tmk.np; w++) {
            if (w != cm_tmk.me) {
                CM_CHECK(cm_tmk_post(w, TM_GC_GO, &one, sizeof(one)));
            }
        }
    }
    for (uint64_t t = 0; t < cm_tmk.ntouched; t++) {
        uint64_t p = cm_tmk.touched[t];
        cm_tmk_page_t *pg = &cm_tmk.pages[p];
        pg->nrefs     = 0;
        pg->unapplied = 0;
        pg->undiffed  = 0;
        if (pg->twin != NULL) {
            /* Everyone with a copy asked for our diff; the manager's copy has it. */
            free(pg->twin);
            pg->twin = NULL;
        }
        if (pg->state == TM_READ_WRITE) {
            /* Scan leaves pages writable: the next write must fault to make a twin. The
             * barrier has just ended the interval, so there is nothing unnoticed to lose. */
            CM_CHECK(cm_tmk_protect(p, PROT_READ));
            pg->state = TM_READ_ONLY;
        }
    }
    cm_tmk_store_collect(&cm_tmk.store);
    cm_tmk.st.gc_runs++;
    return CM_OK;
}
