/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Locks and barriers in two levels (issue 46): inside a host through its shared memory, then
 * between hosts.
 *
 * A lock is a mutex in the host's memory (a futex word and a count of the processes waiting
 * for it) and, where the job has more than one host, a place in the lock's MCS queue between
 * hosts, taken by the process that found the host without one. A release that sees a process
 * of its host waiting passes the mutex on and keeps the host's place (at most CM_2L_PASSES
 * times in a row, so that other hosts get their turn); else it gives the place up, on behalf
 * of whoever took it (cm_mcs_release_owner), then the mutex. A host never keeps a place
 * nobody of it waits for: a process counted as waiting takes the mutex next.
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
#include <sys/syscall.h>
#include <unistd.h>

/* Passes inside a host before its place between hosts goes to the next host in the queue. */
#define CM_2L_PASSES 16

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

cm_status_t cm_2l_lock_take(unsigned id)
{
    cm_2l_lock_t *l = &cm_2l.locks[id];
    int home;
    uint64_t *tail;
    cm_mcs_qnode_t *q;

    cm_2l_mutex_lock(l);
    if (cm_2l.nhosts == 1 || l->held) {
        cm_2l.st.lock_acquires_local++; /* inside the host: its shared memory only */
        return CM_OK;
    }
    cm_2l_lock_addr(id, &home, &tail, &q);
    CM_CHECK(cm_mcs_acquire(cm_2l.rma, home, tail, q, NULL));
    l->held   = 1;
    l->owner  = (uint32_t)cm_2l.rank;
    l->passes = 0;
    cm_2l.st.lock_acquires_remote++;
    return CM_OK;
}

cm_status_t cm_2l_lock_give(unsigned id)
{
    cm_2l_lock_t *l = &cm_2l.locks[id];

    if (cm_2l.nhosts > 1) {
        if (__atomic_load_n(&l->waiters, __ATOMIC_ACQUIRE) > 0 && l->passes < CM_2L_PASSES) {
            l->passes++; /* the host keeps its place: a process here takes the mutex next */
        } else {
            int home;
            uint64_t *tail;
            cm_mcs_qnode_t *q;

            cm_2l_lock_addr(id, &home, &tail, &q);
            CM_CHECK(cm_mcs_release_owner(cm_2l.rma, (int)l->owner, home, tail, q));
            l->held = 0;
        }
    }
    cm_2l_mutex_unlock(l);
    return CM_OK;
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
