/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Locks and barriers in two levels (issue 46): inside a host through its shared memory, then
 * between hosts.
 *
 * A lock is a mutex in the host's memory (a futex word and a count of the processes waiting
 * for it) and, where the job has more than one host, the host's place in the lock's queue
 * between hosts, which the host keeps until another host asks for it (as TreadMarks keeps a
 * lock at its last holder; tests/model/hostlock.pml):
 *   acquire  the mutex; a host that holds a place has the lock: nothing crosses the network.
 *            Else the process swaps itself into the lock's tail (at its home) and, behind
 *            another host's place, asks that process (a message) and waits for its grant.
 *   release  if another host asked, grant it the place, unless a process of the host waits
 *            for the mutex and it passed inside the host fewer than CM_2L_PASSES times since
 *            the ask; else the host keeps it. Unlock, then look for an ask once more (below).
 *   ask      (a handler, in whichever thread progresses) record the asker in `next`, then
 *            take the mutex if it is free and grant if the host holds the place. A taken
 *            mutex is someone's who looks at `next` after unlocking: the handler and every
 *            unlock store, fence, then load what the other stores (a Dekker pair).
 * A release costs nothing between hosts where nobody else asked; a lock going from host to
 * host costs a swap at its home, an ask and a grant. The old place (released to its home with
 * a compare-and-swap at every release nobody of the host waited for) cost BARNES 530 k
 * round trips per process across two hosts.
 *
 * A barrier: the host's processes arrive at its leader, which waits for them, takes part in
 * a dissemination barrier of the hosts' leaders, and lets them go.
 *
 * The protocol's release comes before the lock's release and its acquire after the lock's
 * acquire, whichever level the lock passes at: a process of the host that takes the lock next
 * reads the host's copy, where the releaser's stores are, and drains the host's notices.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/protocols/twolevel/cm_2l_int.h"
#include "util/cm_error.h"
#include "util/cm_stats.h"

#include <linux/futex.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Passes inside a host, after another host asked, before the place goes to it. */
#define CM_2L_PASSES 16

#define CM_2L_AM_ASK   22 /* ids in use: cm_2l_batch.c */
#define CM_2L_AM_GRANT 23

typedef struct {
    uint32_t lock, rank;
} cm_2l_ask_t;

static void cm_2l_futex_wait(uint32_t *word, uint32_t val)
{
    cm_rma_sleep_begin(cm_2l.rma);
    syscall(SYS_futex, word, FUTEX_WAIT, val, NULL, NULL, 0);
    cm_rma_sleep_end(cm_2l.rma);
}

static void cm_2l_futex_wake(uint32_t *word, int n)
{
    syscall(SYS_futex, word, FUTEX_WAKE, n, NULL, NULL, 0);
}

static inline void cm_2l_pause(int spin)
{
    if (spin % 64 == 63) {
        sched_yield(); /* processes may outnumber cores */
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Until *word is no longer old: spin, then sleep. */
void cm_2l_wait_change(uint32_t *word, uint32_t old)
{
    for (int spin = 0; spin < 256; spin++) {
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != old) {
            return;
        }
        cm_2l_pause(spin);
    }
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == old) {
        if (cm_2l_must_progress()) {
            cm_rma_progress(cm_2l.rma);
            sched_yield();
        } else {
            cm_2l_futex_wait(word, old);
        }
    }
}

/* ---- locks ---------------------------------------------------------------------------- */

/* The host mutex: 0 free, 1 held, 2 held and maybe waited for (futex). */
bool cm_2l_mutex_trylock(cm_2l_lock_t *l)
{
    uint32_t c = 0;
    return __atomic_compare_exchange_n(&l->m, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void cm_2l_mutex_lock(cm_2l_lock_t *l)
{
    uint32_t c = 0;

    if (__atomic_compare_exchange_n(&l->m, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        return;
    }
    __atomic_fetch_add(&l->waiters, 1, __ATOMIC_ACQ_REL);
    for (int spin = 0; spin < 128; spin++) {
        c = 0;
        if (__atomic_compare_exchange_n(&l->m, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            goto out;
        }
        cm_2l_pause(spin);
    }
    while (__atomic_exchange_n(&l->m, 2, __ATOMIC_ACQUIRE) != 0) {
        if (cm_2l_must_progress()) {
            cm_rma_progress(cm_2l.rma);
            sched_yield();
        } else {
            cm_2l_futex_wait(&l->m, 2);
        }
    }
out:
    __atomic_fetch_sub(&l->waiters, 1, __ATOMIC_ACQ_REL);
}

void cm_2l_mutex_unlock(cm_2l_lock_t *l)
{
    if (__atomic_exchange_n(&l->m, 0, __ATOMIC_RELEASE) == 2) {
        cm_2l_futex_wake(&l->m, 1);
    }
}

/* Lock id's place between hosts: its tail's home and our queue node. */
static void cm_2l_lock_addr(unsigned id, int *home, uint64_t **tail, cm_mcs_qnode_t **q)
{
    *home = (int)(id % (unsigned)cm_2l.nprocs);
    *tail = (uint64_t *)(void *)(cm_2l.meta_base + cm_2l.meta->lock_tails) +
            id / (unsigned)cm_2l.nprocs;
    *q    = (cm_mcs_qnode_t *)(void *)(cm_2l.meta_base + cm_2l.meta->lock_qnodes +
                                       (size_t)id * CM_META_LOCK_QNODE);
}

/* Under the mutex: whether the place goes now. Another host asked, and nobody of this host
 * waits for the mutex or it passed inside the host CM_2L_PASSES times since the ask: a lock
 * every process contends for would otherwise cross between hosts at every release (RAYTRACE's
 * work counter ran 2.4x slower). A process counted as waiting takes the mutex next and looks
 * again at its release. */
static bool cm_2l_lock_may_grant(const cm_2l_lock_t *l)
{
    return l->held && __atomic_load_n(&l->next, __ATOMIC_ACQUIRE) != 0 &&
           (__atomic_load_n(&l->waiters, __ATOMIC_ACQUIRE) == 0 || l->passes >= CM_2L_PASSES);
}

/* Under the mutex, the host holding the place and another host's process asking for it: the
 * place is theirs. A message nothing waits for (handlers may only post); whatever the lock
 * protected was released before the mutex was (the protocol's release comes first). */
static cm_status_t cm_2l_lock_grant(unsigned id, cm_2l_lock_t *l)
{
    uint32_t to = __atomic_load_n(&l->next, __ATOMIC_ACQUIRE) - 1;

    l->held   = 0;
    l->passes = 0;
    __atomic_store_n(&l->next, 0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&cm_2l.st.lock_grants, 1, __ATOMIC_RELAXED); /* the handler may run beside us */
    return cm_rma_am_post(cm_2l.rma, (int)to, CM_2L_AM_GRANT, &id, sizeof(id));
}

/* Every unlock: an ask that came while the mutex was taken left its asker in `next` for us.
 * Where the place may not go yet, a process of the host waits for the mutex and looks again
 * at its own release. */
static cm_status_t cm_2l_lock_unlock(unsigned id, cm_2l_lock_t *l)
{
    for (;;) {
        cm_2l_mutex_unlock(l);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (__atomic_load_n(&l->next, __ATOMIC_ACQUIRE) == 0 || !cm_2l_mutex_trylock(l)) {
            return CM_OK;
        }
        if (cm_2l_lock_may_grant(l)) {
            CM_CHECK(cm_2l_lock_grant(id, l));
        } else if (__atomic_load_n(&l->next, __ATOMIC_ACQUIRE) != 0) {
            cm_2l_mutex_unlock(l); /* a waiter here takes it next: one ask per place, no other */
            return CM_OK;
        } /* else granted meanwhile: unlock and look again, a new ask may have found us */
    }
}

static void cm_2l_on_ask(void *arg, int src, const void *data, size_t len)
{
    cm_2l_ask_t a;
    cm_2l_lock_t *l;

    (void)arg;
    (void)src;
    cm_assert(len == sizeof(a));
    memcpy(&a, data, sizeof(a));
    cm_assert(a.lock < cm_2l.meta->nlocks);
    l = &cm_2l.locks[a.lock];
    /* One process behind a place: nobody asked for this one before. */
    cm_assert(__atomic_load_n(&l->next, __ATOMIC_RELAXED) == 0);
    __atomic_store_n(&l->next, a.rank + 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (cm_2l_mutex_trylock(l)) {
        if (cm_2l_lock_may_grant(l)) {
            (void)cm_2l_lock_grant(a.lock, l); /* a failed post ends the job where it fails */
        }
        (void)cm_2l_lock_unlock(a.lock, l);
    }
}

static void cm_2l_on_grant(void *arg, int src, const void *data, size_t len)
{
    unsigned id;
    int home;
    uint64_t *tail;
    cm_mcs_qnode_t *q;

    (void)arg;
    (void)src;
    cm_assert(len == sizeof(id));
    memcpy(&id, data, sizeof(id));
    cm_assert(id < cm_2l.meta->nlocks);
    cm_2l_lock_addr(id, &home, &tail, &q);
    __atomic_store_n(&q->locked, 0, __ATOMIC_RELEASE);
}

cm_status_t cm_2l_sync_init(void)
{
    CM_CHECK(cm_rma_am_set_handler(cm_2l.rma, CM_2L_AM_ASK, cm_2l_on_ask, NULL,
                                   "a lock's ask from another host"));
    CM_CHECK(cm_rma_am_set_request(cm_2l.rma, CM_2L_AM_ASK)); /* served at an interrupt */
    return cm_rma_am_set_handler(cm_2l.rma, CM_2L_AM_GRANT, cm_2l_on_grant, NULL,
                                 "a lock's grant from another host");
}

cm_status_t cm_2l_lock_take(unsigned id)
{
    cm_2l_lock_t *l = &cm_2l.locks[id];
    cm_2l_ask_t ask = {.lock = id, .rank = (uint32_t)cm_2l.rank};
    uint64_t pred = 0;
    int home;
    uint64_t *tail;
    cm_mcs_qnode_t *q;

    if (cm_2l.nhosts > 1 && cm_2l_must_progress()) {
        /* No progress thread: asks are served where we progress. A host whose processes
           take a lock it keeps again and again, and nothing else, would otherwise never see
           the ask another host waits on (litmus msgpass hung at 2+2, CM_PROGRESS_THREAD=off). */
        cm_rma_progress(cm_2l.rma);
    }
    cm_2l_mutex_lock(l);
    if (cm_2l.nhosts == 1 || l->held) {
        cm_2l.st.lock_acquires_local++; /* inside the host: its shared memory only */
        return CM_OK;
    }
    cm_2l_lock_addr(id, &home, &tail, &q);
    /* Before the tail names us: an ask may come as soon as it does. */
    cm_assert(__atomic_load_n(&l->next, __ATOMIC_RELAXED) == 0);
    q->locked = 1;
    l->held   = 1; /* passes: 0 since the last grant */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    CM_CHECK(cm_rma_swap(cm_2l.rma, home, tail, (uint64_t)cm_2l.rank + 1, &pred));
    if (pred != 0) {
        /* Another host's place: a host is in a lock's queue once (its place is given up
           before its processes take another). */
        cm_assert(cm_2l.hosts->host_of[pred - 1] != cm_2l.host);
        CM_CHECK(cm_rma_am_send(cm_2l.rma, (int)pred - 1, CM_2L_AM_ASK, &ask, sizeof(ask)));
        cm_rma_wait_u64(cm_2l.rma, (uint64_t *)&q->locked, CM_CMP_EQ, 0,
                        CM_RMA_WHY("the grant of a lock from rank %a's host, ahead in its queue",
                                   NULL, pred - 1, 0, (int)pred - 1));
    }
    cm_2l.st.lock_acquires_remote++;
    return CM_OK;
}

cm_status_t cm_2l_lock_give(unsigned id)
{
    cm_2l_lock_t *l = &cm_2l.locks[id];

    if (cm_2l.nhosts == 1) {
        cm_2l_mutex_unlock(l);
        return CM_OK;
    }
    if (cm_2l_lock_may_grant(l)) {
        CM_CHECK(cm_2l_lock_grant(id, l)); /* asked while we held it */
    } else if (l->held && __atomic_load_n(&l->next, __ATOMIC_ACQUIRE) != 0) {
        l->passes++; /* to a process of this host first */
    }
    return cm_2l_lock_unlock(id, l);
}

/* ---- barriers ------------------------------------------------------------------------- */

cm_status_t cm_2l_barrier_wait(void)
{
    cm_2l_hdr_t *h = cm_2l.hdr;
    uint32_t gen = __atomic_load_n(&h->bar_gen, __ATOMIC_ACQUIRE);

    if (cm_2l.rank != cm_2l.leader) {
        if (__atomic_add_fetch(&h->bar_arrived, 1, __ATOMIC_ACQ_REL) ==
            (uint32_t)cm_2l.hosts->local_size - 1) {
            cm_2l_futex_wake(&h->bar_arrived, 1);
        }
        cm_2l_wait_change(&h->bar_gen, gen);
        return CM_OK;
    }
    for (;;) {
        uint32_t n = __atomic_load_n(&h->bar_arrived, __ATOMIC_ACQUIRE);
        if (n == (uint32_t)cm_2l.hosts->local_size - 1) {
            break;
        }
        cm_2l_wait_change(&h->bar_arrived, n);
    }
    __atomic_store_n(&h->bar_arrived, 0, __ATOMIC_RELAXED);
    if (cm_2l.nhosts > 1) {
        CM_CHECK(cm_barrier_wait(&cm_2l.barrier));
    }
    __atomic_add_fetch(&h->bar_gen, 1, __ATOMIC_ACQ_REL);
    cm_2l_futex_wake(&h->bar_gen, INT32_MAX);
    return CM_OK;
}
