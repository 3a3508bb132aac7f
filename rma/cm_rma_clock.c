/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One clock for the job (the event trace, issue 47): each rank's offset to rank 0's
 * CLOCK_MONOTONIC by Cristian's algorithm, as the monitoring seed does. A rank asks rank 0
 * for its time with an active message and takes the answer as of the middle of the round
 * trip; of several tries the shortest round trip wins, and half of it bounds the error.
 * Rank 0 answers from its handler, in whichever thread progresses the worker: it waits in
 * the barrier that ends the exchange meanwhile.
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_rma_int.h"
#include "util/cm_error.h"
#include "util/cm_log.h"

#include <stdatomic.h>
#include <string.h>

#define CM_RMA_AM_CLOCK_ASK  30 /* ids in use: TreadMarks 1-11, twolevel 20-23, wake 24, Cashmere 26-27 */
#define CM_RMA_AM_CLOCK_TELL 31

typedef struct {
    uint64_t seq;
    uint64_t t; /* the answer: rank 0's clock in its handler */
} cm_rma_clock_msg_t;

static struct {
    _Atomic uint64_t seq; /* the last answer's */
    uint64_t         t;
} cm_rma_clock;

static void cm_rma_clock_on_ask(void *arg, int src, const void *data, size_t len)
{
    cm_rma_t *rma = arg;
    cm_rma_clock_msg_t m;

    if (len != sizeof(m)) {
        return;
    }
    memcpy(&m, data, sizeof(m));
    m.t = cm_time_ns();
    if (cm_rma_am_post(rma, src, CM_RMA_AM_CLOCK_TELL, &m, sizeof(m)) != CM_OK) {
        cm_error("clock: cannot answer rank %d", src);
    }
}

static void cm_rma_clock_on_tell(void *arg, int src, const void *data, size_t len)
{
    cm_rma_clock_msg_t m;

    (void)arg;
    (void)src;
    if (len != sizeof(m)) {
        return;
    }
    memcpy(&m, data, sizeof(m));
    cm_rma_clock.t = m.t;
    atomic_store_explicit(&cm_rma_clock.seq, m.seq, memory_order_release);
}

static bool cm_rma_clock_told(void *arg)
{
    return atomic_load_explicit(&cm_rma_clock.seq, memory_order_acquire) == *(uint64_t *)arg;
}

cm_status_t cm_rma_clock_sync(cm_rma_t *rma, int tries, cm_rma_clock_t *c)
{
    static uint64_t seq;

    c->offset_ns = 0;
    c->error_ns  = 0;
    c->at_ns     = cm_time_ns();
    if (rma->nprocs == 1) {
        return CM_OK;
    }
    CM_CHECK(cm_rma_am_set_handler(rma, CM_RMA_AM_CLOCK_ASK, cm_rma_clock_on_ask, rma,
                                   "a clock question"));
    CM_CHECK(cm_rma_am_set_handler(rma, CM_RMA_AM_CLOCK_TELL, cm_rma_clock_on_tell, NULL,
                                   "rank 0's time"));
    /* Every rank has its handlers before anyone asks. */
    CM_CHECK(cm_rma_barrier(rma));
    if (rma->rank != 0) {
        uint64_t best = UINT64_MAX;

        for (int i = 0; i < tries; i++) {
            cm_rma_clock_msg_t m = {.seq = ++seq};
            uint64_t t0, t1;

            t0 = cm_time_ns();
            CM_CHECK(cm_rma_am_send(rma, 0, CM_RMA_AM_CLOCK_ASK, &m, sizeof(m)));
            cm_rma_wait_events(rma, cm_rma_clock_told, &m.seq,
                               CM_RMA_WHY("rank 0's time (clock offset %a)", NULL, m.seq, 0, 0));
            t1 = cm_time_ns();
            if (t1 - t0 < best) {
                best         = t1 - t0;
                c->at_ns     = t0 + (t1 - t0) / 2;
                c->offset_ns = (int64_t)(cm_rma_clock.t - c->at_ns);
            }
        }
        c->error_ns = (best + 1) / 2;
    }
    return cm_rma_barrier(rma);
}
