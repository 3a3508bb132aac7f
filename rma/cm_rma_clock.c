/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One clock for the job (the event trace, issue 47): each rank's offset to rank 0's
 * CLOCK_MONOTONIC by Cristian's algorithm, as the monitoring seed does. A rank asks rank 0
 * for its time with an active message and takes the answer as of the middle of the round
 * trip; of several tries the shortest round trip wins, and half of it bounds the error.
 * Rank 0 takes the askers one at a time, each when it says "go", and both sides poll the
 * worker themselves for the exchange (the progress thread parked): with every asker at once,
 * or through a sleeping thread's wake-up, 4 processes on 2 cores measured bounds of 50-1000
 * us; one at a time, polled, 0.2-0.6 us inside a host and 5-7 us across the two namespace
 * hosts. The others wait for their turn, and then for the last asker's end, in short sleeps
 * (not the layer's waits, which spin where a host has a core per process): a rank spinning
 * beside the pair that measures put a time slice into every round trip (50 us bounds).
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_rma_int.h"
#include "util/cm_error.h"
#include "util/cm_log.h"

#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#define CM_RMA_AM_CLOCK_ASK  30 /* ids in use: TreadMarks 1-11, twolevel 20-23, wake 24, Cashmere 26-27 */
#define CM_RMA_AM_CLOCK_TELL 31

/* To rank 0 (ASK): seq > 0 a question, 0 "done". From rank 0 (TELL): seq > 0 the answer to
 * that question, with t; CM_RMA_CLOCK_GO the asker's turn, CM_RMA_CLOCK_END everyone's end. */
#define CM_RMA_CLOCK_GO  UINT64_MAX
#define CM_RMA_CLOCK_END (UINT64_MAX - 1)
typedef struct {
    uint64_t seq;
    uint64_t t; /* the answer: rank 0's clock in its handler */
} cm_rma_clock_msg_t;

static struct {
    _Atomic uint64_t seq;  /* the last answer's */
    uint64_t         t;
    _Atomic int      go;   /* an asker: its turn came (1), everyone is done (2) */
    _Atomic int      done; /* rank 0: askers finished */
} cm_rma_clock;

static void cm_rma_clock_on_ask(void *arg, int src, const void *data, size_t len)
{
    cm_rma_t *rma = arg;
    cm_rma_clock_msg_t m;

    if (len != sizeof(m)) {
        return;
    }
    memcpy(&m, data, sizeof(m));
    if (m.seq == 0) {
        atomic_fetch_add_explicit(&cm_rma_clock.done, 1, memory_order_release);
        return;
    }
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
    if (m.seq == CM_RMA_CLOCK_GO || m.seq == CM_RMA_CLOCK_END) {
        atomic_store_explicit(&cm_rma_clock.go, (m.seq == CM_RMA_CLOCK_GO) ? 1 : 2,
                              memory_order_release);
        return;
    }
    cm_rma_clock.t = m.t;
    atomic_store_explicit(&cm_rma_clock.seq, m.seq, memory_order_release);
}

/* Until rank 0 says go (1) or end (2): its messages are progressed here, in short sleeps. */
static void cm_rma_clock_await(cm_rma_t *rma, int what)
{
    const struct timespec nap = {.tv_sec = 0, .tv_nsec = 20000};

    while (atomic_load_explicit(&cm_rma_clock.go, memory_order_acquire) < what) {
        if (cm_rma_progress(rma) == 0) {
            nanosleep(&nap, NULL);
        }
    }
}

/* A look at the worker. After CM_RMA_CLOCK_SPIN_NS of nothing since *since, the core goes to
 * whoever else may run (more processes than cores: the other side of the exchange may be
 * waiting for it); before, spinning keeps a quick answer's round trip short. */
#define CM_RMA_CLOCK_SPIN_NS 5000
static void cm_rma_clock_poll(cm_rma_t *rma, uint64_t *since)
{
    if (cm_rma_progress(rma) != 0) {
        *since = cm_time_ns();
    } else if (cm_time_ns() - *since > CM_RMA_CLOCK_SPIN_NS) {
        sched_yield();
    }
}

/* Rank 0: each asker in turn, until it is done; then everyone's end. */
static cm_status_t cm_rma_clock_serve(cm_rma_t *rma)
{
    const cm_rma_clock_msg_t go = {.seq = CM_RMA_CLOCK_GO}, end = {.seq = CM_RMA_CLOCK_END};
    cm_status_t status = CM_OK;
    uint64_t since;

    cm_rma_poll_enter(rma);
    for (int r = 1; r < rma->nprocs && status == CM_OK; r++) {
        status = cm_rma_am_send(rma, r, CM_RMA_AM_CLOCK_TELL, &go, sizeof(go));
        for (since = cm_time_ns();
             status == CM_OK && atomic_load_explicit(&cm_rma_clock.done, memory_order_acquire) < r;) {
            cm_rma_clock_poll(rma, &since);
        }
    }
    for (int r = 1; r < rma->nprocs && status == CM_OK; r++) {
        status = cm_rma_am_send(rma, r, CM_RMA_AM_CLOCK_TELL, &end, sizeof(end));
    }
    cm_rma_poll_leave(rma);
    return status;
}

/* An asker: tries questions, the shortest round trip's answer into *c. */
static cm_status_t cm_rma_clock_ask(cm_rma_t *rma, int tries, cm_rma_clock_t *c)
{
    static uint64_t seq;
    cm_rma_clock_msg_t m = {0};
    uint64_t best = UINT64_MAX;
    cm_status_t status = CM_OK;

    cm_rma_poll_enter(rma);
    cm_rma_clock_await(rma, 1);
    for (int i = 0; i < tries && status == CM_OK; i++) {
        uint64_t t0, t1;

        m.seq  = ++seq;
        t0     = cm_time_ns();
        status = cm_rma_am_send(rma, 0, CM_RMA_AM_CLOCK_ASK, &m, sizeof(m));
        for (uint64_t since = t0;
             status == CM_OK && atomic_load_explicit(&cm_rma_clock.seq, memory_order_acquire) != m.seq;) {
            cm_rma_clock_poll(rma, &since);
        }
        t1 = cm_time_ns();
        if (t1 - t0 < best) {
            best         = t1 - t0;
            c->at_ns     = t0 + (t1 - t0) / 2;
            c->offset_ns = (int64_t)(cm_rma_clock.t - c->at_ns);
        }
    }
    c->error_ns = (best + 1) / 2;
    if (status == CM_OK) {
        m.seq  = 0; /* done */
        status = cm_rma_am_send(rma, 0, CM_RMA_AM_CLOCK_ASK, &m, sizeof(m));
    }
    if (status == CM_OK) {
        cm_rma_clock_await(rma, 2);
    }
    cm_rma_poll_leave(rma);
    return status;
}

cm_status_t cm_rma_clock_sync(cm_rma_t *rma, int tries, cm_rma_clock_t *c)
{
    cm_status_t status;

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
    atomic_store(&cm_rma_clock.go, 0);
    atomic_store(&cm_rma_clock.done, 0);
    /* Every rank has its handlers and zero counts before anyone asks. */
    CM_CHECK(cm_rma_barrier(rma));
    /* What a stuck report says of this process meanwhile (CM_STUCK_REPORT). */
    cm_rma_why_push(rma, CM_RMA_WHY("the clock's exchange with rank 0", NULL, 0, 0, 0));
    status = (rma->rank == 0) ? cm_rma_clock_serve(rma) : cm_rma_clock_ask(rma, tries, c);
    cm_rma_why_pop(rma);
    return status;
}
