/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TreadMarks locks: a static manager (lock % nprocs) forwards each request to the last
 * requester; the token moves with a grant that carries the intervals the acquirer has not
 * seen; re-acquiring a lock whose token is here costs no message.
 */
#define _GNU_SOURCE
#include "config.h"
#include "util/cm_log.h"
#include "util/cm_time.h"
#include "src/protocols/treadmarks/cm_tmk_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- locks ---------------------------------------------------------------------------- */

/* Grants lock l to a: a new interval, and every interval a has not seen. */
static cm_status_t tm_grant(unsigned l, uint32_t a, const uint32_t *vt_a)
{
    cm_status_t status;

    CM_CHECK(cm_tmk_new_interval());
    status = cm_tmk_send_intervals((int)a, TM_LOCK_GRANT, l, 0, vt_a);
    cm_tmk.locks[l].local = false;
    return status;
}

/* A request for lock l from a reached the last requester before it (us). */
cm_status_t cm_tmk_lock_request_here(unsigned l, uint32_t a, const uint32_t *vt_a)
{
    cm_tmk_lock_t *lk = &cm_tmk.locks[l];

    if (lk->local && !lk->held) {
        return tm_grant(l, a, vt_a);
    }
    if (lk->has_next) {
        cm_error("treadmarks: lock %u: a second request (rank %u) queued at rank %d", l, a,
                 cm_tmk.me);
        return CM_ERR_INVALID;
    }
    if (lk->next_vt == NULL &&
        (lk->next_vt = malloc((size_t)cm_tmk.np * sizeof(uint32_t))) == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    lk->has_next = true;
    lk->next     = a;
    memcpy(lk->next_vt, vt_a, (size_t)cm_tmk.np * sizeof(uint32_t));
    return CM_OK;
}

/* At the manager: forward to the last requester, who has or will have the token. */
cm_status_t cm_tmk_lock_manage(unsigned l, uint32_t a, const uint32_t *vt_a, const void *msg,
                               size_t len)
{
    cm_tmk_lock_t *lk = &cm_tmk.locks[l];
    uint32_t prev = lk->last_req;

    lk->last_req = a;
    if (prev == (uint32_t)cm_tmk.me) {
        return cm_tmk_lock_request_here(l, a, vt_a);
    }
    return cm_tmk_post((int)prev, TM_LOCK_FWD, msg, len);
}

static cm_status_t tm_lock_acquire(unsigned id)
{
    cm_tmk_lock_t *lk;
    uint32_t *msg;
    size_t len = (2 + (size_t)cm_tmk.np) * sizeof(uint32_t);
    uint64_t *outer;
    cm_status_t status;

    cm_tmk_mu_lock();
    lk = &cm_tmk.locks[id];
    if (lk->local) {
        /* The token is here: no message (Fig. 2.11). */
        lk->held = true;
        cm_tmk.st.lock_acquires_local++;
        cm_tmk_mu_unlock();
        return CM_OK;
    }
    msg = malloc(len);
    if (msg == NULL) {
        cm_tmk_mu_unlock();
        return CM_ERR_NO_MEMORY;
    }
    msg[0] = id;
    msg[1] = (uint32_t)cm_tmk.me;
    memcpy(msg + 2, cm_tmk.store.vt, (size_t)cm_tmk.np * sizeof(uint32_t));
    atomic_store(&cm_tmk.granted, 0);
    if ((int)(id % (unsigned)cm_tmk.np) == cm_tmk.me) {
        status = cm_tmk_lock_manage(id, (uint32_t)cm_tmk.me, msg + 2, msg, len);
    } else {
        status = cm_tmk_post((int)(id % (unsigned)cm_tmk.np), TM_LOCK_REQ, msg, len);
    }
    free(msg);
    if (status != CM_OK) {
        goto out_unlock;
    }
    /* A new interval after the request: the grant's notices then meet no dirty page. */
    status = cm_tmk_new_interval();
    if (status != CM_OK) {
        goto out_unlock;
    }
    cm_tmk_wait_ge(&cm_tmk.granted, 1,
                   CM_RMA_WHY("the grant of lock %a (asked of its manager, rank %b)", NULL, id,
                              id % (unsigned)cm_tmk.np, (int)(id % (unsigned)cm_tmk.np)));
    outer  = cm_stats_phase_enter(&cm_tmk.st.acquire_ns);
    status = cm_tmk_take_intervals(&cm_tmk.grant);
    cm_tmk_drop(&cm_tmk.grant);
    if (status == CM_OK) {
        status = cm_tmk_pf_acquired();
    }
    /* The grant came: the token is here whatever its intervals did. */
    lk->local = lk->held = true;
    cm_tmk.st.lock_acquires_remote++;
    cm_tmk.st.acquires++;
    cm_stats_phase_leave(outer);
out_unlock:
    cm_tmk_mu_unlock();
    return status;
}

/* From the request to the grant: waiting (lock_wait_ns); taking its intervals: acquire_ns. */
cm_status_t cm_tmk_lock_acquire(unsigned id)
{
    return CM_RMA_COUNT_WAITS(&cm_tmk.st.waits_lock,
                              CM_STATS_IN_PHASE(&cm_tmk.st.lock_wait_ns, tm_lock_acquire(id)));
}

static cm_status_t tm_lock_release(unsigned id)
{
    cm_tmk_lock_t *lk;
    cm_status_t status;

    cm_tmk_mu_lock();
    lk = &cm_tmk.locks[id];
    if (!lk->held) {
        cm_tmk_mu_unlock();
        cm_error("cm_lock_release(%u): the lock is not held here", id);
        return CM_ERR_INVALID;
    }
    status = cm_tmk_new_interval();
    lk->held = false;
    cm_tmk.st.releases++;
    if (status != CM_OK) {
        goto out_unlock;
    }
    if (lk->has_next) {
        lk->has_next = false;
        status = tm_grant(id, lk->next, lk->next_vt);
    }
out_unlock:
    cm_tmk_mu_unlock();
    return status;
}

cm_status_t cm_tmk_lock_release(unsigned id)
{
    return CM_RMA_COUNT_WAITS(&cm_tmk.st.waits_release,
                              CM_STATS_IN_PHASE(&cm_tmk.st.release_ns, tm_lock_release(id)));
}
