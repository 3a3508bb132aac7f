/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who can wake this process, peer by peer, and a doorbell for the peers whose transport cannot.
 *
 * A thread sleeps on the worker's event fd (the progress thread, a wait for messages) and
 * counts on UCX to raise it when a peer's message arrives. Over shared memory UCX raises it
 * with a datagram to an abstract Unix socket of the receiver, and abstract sockets belong to a
 * network namespace: a peer that shares our /dev/shm and IPC namespace but not our network
 * namespace (containers started with the host's IPC, two "hosts" that are namespaces of one
 * kernel) writes its message into our FIFO and its signal fails (ECONNREFUSED, which UCX
 * ignores). Nothing then wakes us: a TreadMarks request to a process computing outside the
 * library waited forever (issue 44). The launcher's idea of hosts cannot tell: such peers
 * are "other hosts" to it, local to UCX.
 *
 * So the plan asks UCX, per peer, which transport carries its messages (ucp_ep_print_info's
 * am lane) and compares network namespaces (published with the worker addresses):
 *   UCX   the transport wakes us (TCP, verbs, shared memory inside one network namespace);
 *   BELL  shared memory across namespaces: after each message to us is in our FIFO the
 *         sender looks at our `armed` count (threads of ours asleep on the worker's fd) and,
 *         if set, bumps our `bell` futex. A thread of ours sleeps on it and raises the
 *         worker's event (ucp_worker_signal) that UCX could not;
 *   POLL  neither (the peer's atomics are messages UCX sends for us, or its wait word is not
 *         mapped here): our sleeps on the worker look again every CM_RMA_POLL_NS.
 * Sender: FIFO written, fence, read `armed`. Sleeper: `armed` raised, fence, ucp_worker_arm,
 * which refuses while the FIFO holds a message: one of the two sees the other.
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_rma_int.h"
#include "util/cm_log.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Where sleeps must look again by themselves (POLL peers). */
#define CM_RMA_POLL_NS 1000000ull

/* This process's network namespace, as published: 0 where /proc does not say. */
typedef struct {
    uint64_t dev, ino;
} cm_rma_netns_t;

static void cm_rma_netns_of_self(cm_rma_netns_t *ns)
{
    struct stat st;

    memset(ns, 0, sizeof(*ns));
    if (stat("/proc/self/ns/net", &st) == 0) {
        ns->dev = (uint64_t)st.st_dev;
        ns->ino = (uint64_t)st.st_ino;
    }
}

cm_status_t cm_rma_bell_publish(cm_rma_t *rma)
{
    cm_rma_netns_t ns;

    cm_rma_netns_of_self(&ns);
    return cm_boot_put(rma->boot, "cm.rma.netns", &ns, sizeof(ns));
}

/* Is pe in our network namespace? Unknown counts as no: a doorbell costs little. */
static bool cm_rma_same_netns(cm_rma_t *rma, int pe, const cm_rma_netns_t *own)
{
    void *data = NULL;
    size_t len = 0;
    bool same;

    if (own->ino == 0 || cm_boot_get(rma->boot, pe, "cm.rma.netns", &data, &len) != CM_OK) {
        return false;
    }
    same = len == sizeof(*own) && memcmp(data, own, sizeof(*own)) == 0;
    free(data);
    return same;
}

static long cm_rma_bell_futex(uint32_t *word, int op, uint32_t val)
{
    /* Shared, not FUTEX_PRIVATE_FLAG: the ringer reaches the word through its own mapping. */
    return syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

const char *cm_rma_wake_name(cm_rma_wake_t wake)
{
    switch (wake) {
    case CM_RMA_WAKE_UCX: return "its transport";
    case CM_RMA_WAKE_BELL: return "a doorbell (shared memory across network namespaces)";
    case CM_RMA_WAKE_POLL: return "nothing: sleeps look again every millisecond";
    }
    return "?";
}

/* The bell's thread: each ring raises the worker's event, which wakes whoever sleeps on it. */
static void *cm_rma_bell_main(void *arg)
{
    cm_rma_t *rma = arg;
    cm_rma_waitword_t *w = rma->wait_self;
    uint32_t seen = rma->bell_seen;

    while (!atomic_load_explicit(&rma->bell_stop, memory_order_acquire)) {
        if (cm_rma_bell_futex(&w->bell, FUTEX_WAIT, seen) != 0 && errno != EAGAIN &&
            errno != EINTR) {
            cm_error("doorbell: futex wait: %s", strerror(errno));
            break;
        }
        /* Read before signalling: a ring after this read makes the next wait return at once. */
        seen = __atomic_load_n(&w->bell, __ATOMIC_ACQUIRE);
        if (atomic_load_explicit(&rma->bell_stop, memory_order_acquire)) {
            break;
        }
        ucp_worker_signal(rma->worker);
    }
    return NULL;
}

cm_status_t cm_rma_bell_plan(cm_rma_t *rma)
{
    cm_rma_netns_t own;
    int bells = 0, polls = 0, rc;

    rma->wake = calloc((size_t)rma->nprocs, sizeof(*rma->wake));
    if (rma->wake == NULL) {
        cm_error("rma: out of memory");
        return CM_ERR_NO_MEMORY;
    }
    cm_rma_netns_of_self(&own);
    for (int pe = 0; pe < rma->nprocs; pe++) {
        char tl[64];

        rma->wake[pe] = CM_RMA_WAKE_UCX;
        if (pe == rma->rank || !cm_rma_peer_am_shm(rma, pe, tl, sizeof(tl)) ||
            cm_rma_same_netns(rma, pe, &own)) {
            continue;
        }
        rma->wake[pe] = (rma->wait_peer[pe] != NULL && !cm_rma_ucx_amo_emulated(rma, pe))
                            ? CM_RMA_WAKE_BELL : CM_RMA_WAKE_POLL;
        bells += rma->wake[pe] == CM_RMA_WAKE_BELL;
        polls += rma->wake[pe] == CM_RMA_WAKE_POLL;
        cm_debug("rank %d reaches us over %s from another network namespace: woken by %s", pe,
                 tl, cm_rma_wake_name(rma->wake[pe]));
    }
    if (polls > 0) {
        rma->poll_ns = CM_RMA_POLL_NS;
        cm_info("%d peers reach this process over shared memory from another network namespace "
                "and cannot wake it: sleeps on the transport look again every %.1f ms", polls,
                CM_RMA_POLL_NS / 1e6);
        /* The progress thread may be asleep already, without a timeout. */
        ucp_worker_signal(rma->worker);
    }
    if (bells == 0) {
        return CM_OK;
    }
    /* Before `bells_on`, which lets sleepers raise `armed`: no ring can come before this read. */
    rma->bell_seen = __atomic_load_n(&rma->wait_self->bell, __ATOMIC_ACQUIRE);
    rc = pthread_create(&rma->bell_thread, NULL, cm_rma_bell_main, rma);
    if (rc != 0) {
        cm_error("cannot start the doorbell thread: %s", strerror(rc));
        return CM_ERR_NO_MEMORY;
    }
    rma->bell_running = true;
    atomic_store_explicit(&rma->bells_on, true, memory_order_release);
    /* A thread that went to sleep before bells_on did not count itself armed: wake it. */
    ucp_worker_signal(rma->worker);
    return CM_OK;
}

void cm_rma_bell_ring_slow(cm_rma_t *rma, int pe)
{
    cm_rma_waitword_t *w = rma->wait_peer[pe];

    /* Our message is in pe's FIFO; now look (Dekker with the sleeper's arm, above). */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&w->armed, __ATOMIC_RELAXED) == 0) {
        return;
    }
    __atomic_fetch_add(&w->bell, 1, __ATOMIC_SEQ_CST);
    cm_rma_bell_futex(&w->bell, FUTEX_WAKE, 1);
    atomic_fetch_add_explicit(&rma->bell_rings, 1, memory_order_relaxed);
}

void cm_rma_bell_stop(cm_rma_t *rma)
{
    if (rma->bell_running) {
        atomic_store_explicit(&rma->bell_stop, true, memory_order_release);
        __atomic_fetch_add(&rma->wait_self->bell, 1, __ATOMIC_SEQ_CST);
        cm_rma_bell_futex(&rma->wait_self->bell, FUTEX_WAKE, INT_MAX);
        pthread_join(rma->bell_thread, NULL);
        rma->bell_running = false;
    }
    free(rma->wake);
    rma->wake = NULL;
}
