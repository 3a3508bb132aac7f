/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TreadMarks write detection under CM_TMK_WRITE_DETECT=scan: a page that a write fault opened
 * stays writable across intervals, and the end of each interval finds the written ones by
 * comparing them with a snapshot (cm_tmk_scan).
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/protocols/treadmarks/cm_tmk_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- write detection: CM_TMK_WRITE_DETECT=scan ------------------------------------------- */

/* A writable page was written since its snapshot (the start of the open interval). */
static inline bool tm_scan_changed(uint64_t p)
{
    return memcmp(cm_tmk_net(p), cm_tmk.pages[p].snap, cm_tmk.ps) != 0;
}

/* Scan: p has just been opened for writing by a fault; its snapshot is taken at interval end. */
cm_status_t cm_tmk_scan_opened(uint64_t p)
{
    cm_tmk_page_t *pg = &cm_tmk.pages[p];

    if (pg->snap == NULL && (pg->snap = malloc(cm_tmk.ps)) == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    pg->clean = 0;
    if (!pg->in_rw) {
        pg->in_rw = 1;
        cm_tmk.rw[cm_tmk.nrw++] = (uint32_t)p;
    }
    return CM_OK;
}

/* Scan: a writable page is protected outside cm_tmk_scan (a diff, an invalidation, collection):
 * writes since the interval began must still get this interval's notice. */
void cm_tmk_scan_closing(uint64_t p)
{
    cm_tmk_page_t *pg = &cm_tmk.pages[p];

    if (cm_tmk.scan && pg->state == TM_READ_WRITE && !pg->in_dirty && tm_scan_changed(p)) {
        cm_tmk_mark_dirty(p);
    }
}

/*
 * A writable page found unchanged at this many interval ends in a row is protected again. A
 * clean scan is a compare of two identical pages (~0.1 us); a fault and its two mprotects cost
 * ~10 us here, so keeping a page that phases write every other interval writable pays.
 */
#define TM_SCAN_AGE 8

/* Scan: p leaves the writable pages (its clean count restarts when a fault opens it again). */
static cm_status_t tm_scan_protect(uint64_t p)
{
    CM_CHECK(cm_tmk_protect(p, PROT_READ));
    cm_tmk.pages[p].state = TM_READ_ONLY;
    cm_tmk.pages[p].in_rw = 0;
    return CM_OK;
}

/*
 * The end of an interval under scan: every page still writable was written in this interval if
 * it faulted in it or differs from its snapshot; those stay writable with a new snapshot, the
 * others are protected once clean for TM_SCAN_AGE intervals (their next write faults, as under
 * fault detection). A written page costs a compare and a copy: ~0.2 us against ~10 us for a
 * fault and two mprotects. The progress thread may end an interval (a lock granted while the
 * application computes) while the application writes: it protects every writable page first.
 */
cm_status_t cm_tmk_scan(void)
{
    bool app = pthread_equal(pthread_self(), cm_tmk.app_thread);
    uint32_t kept = 0;

    for (uint32_t i = 0; i < cm_tmk.nrw; i++) {
        uint64_t p = cm_tmk.rw[i];
        cm_tmk_page_t *pg = &cm_tmk.pages[p];
        if (pg->state != TM_READ_WRITE) {
            pg->in_rw = 0; /* protected since (a diff, an invalidation, collection) */
            continue;
        }
        if (!app) {
            CM_CHECK(tm_scan_protect(p));
            if (!pg->in_dirty && tm_scan_changed(p)) {
                cm_tmk_mark_dirty(p);
            }
            continue;
        }
        if (pg->in_dirty || tm_scan_changed(p)) {
            cm_tmk_mark_dirty(p);
            memcpy(pg->snap, cm_tmk_net(p), cm_tmk.ps);
            pg->clean = 0;
            cm_tmk.rw[kept++] = (uint32_t)p;
            cm_tmk.st.scan_written++;
            continue;
        }
        cm_tmk.st.scan_clean++;
        if (++pg->clean < TM_SCAN_AGE) {
            cm_tmk.rw[kept++] = (uint32_t)p; /* written every few intervals (red-black phases) */
        } else {
            CM_CHECK(tm_scan_protect(p));
            cm_tmk.st.scan_protected++;
        }
    }
    cm_tmk.nrw = kept;
    return CM_OK;
}
