/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waiting: the progress thread, and the waits of this layer and of its users.
 *
 * A wait progresses the worker and spins; with blocking waits (CM_WAIT) it
 * yields for CM_WAIT_SPIN and then sleeps on a futex until woken. Blocking
 * pays where processes outnumber cores: a spinning waiter takes the core from
 * the very process it waits for (at 4 processes on 2 cores, sched_yield
 * spinning was 40-75% of Cashmere's time).
 *
 * Who wakes a sleeper: a peer whose put_u64 stored into our memory directly
 * (node-local, mapped: it sees `sleeping` after its store and bumps the futex
 * word); and our progress thread after any event it handled (a put or atomic
 * a TCP peer's UCX emulates here, an active message's handler). A blocked
 * waiter hands the worker to the progress thread, so blocking needs it; over
 * a transport whose one-sided writes raise no event at the target (RDMA on
 * InfiniBand or RoCE) no one could wake us, so waits there never block.
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_rma_int.h"
#include "util/cm_log.h"
#include "util/cm_time.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A blocked wait looks again after this long even unwoken; finding its word then changed is a
 * missed wake-up, counted (wait_missed) and reported once. */
#define CM_RMA_BLOCK_BACKSTOP_NS 1000000000ull

static void cm_rma_wake_self(cm_rma_t *rma);

/*
 * ucp_worker_arm, and one more look. UCX's verbs transports arm a completion queue with
 * ibv_req_notify_cq, which raises an event for the next completion only; a completion that
 * came between our last progress and the arm raises none where the provider does not report
 * it as missed (soft-RoCE; mlx5's arm carries the consumer index and does). That completion,
 * a peer's message for us or the answer we wait for, then waits for some later event: over
 * rc_verbs a fetch-and-add from a process of the same guest was never answered while its
 * target slept at its host's barrier (two levels, water at 2+2). So progress once after
 * arming: whatever it finds means we must not sleep (UCS_ERR_BUSY); anything after the arm
 * raises its event. What it ran is progress like any other (*progressed): the progress thread
 * wakes the sleeper it may concern, as after its own progress calls.
 */
static ucs_status_t cm_rma_arm(cm_rma_t *rma, bool *progressed)
{
    ucs_status_t st = ucp_worker_arm(rma->worker);

    *progressed = false;
    if (st == UCS_OK && ucp_worker_progress(rma->worker) != 0) {
        atomic_fetch_add_explicit(&rma->arm_caught, 1, memory_order_relaxed);
        *progressed = true;
        return UCS_ERR_BUSY;
    }
    return st;
}

unsigned cm_rma_progress(cm_rma_t *rma)
{
    return ucp_worker_progress(rma->worker);
}

/* ---- progress thread ---------------------------------------------------- */

/*
 * Sleeps on the worker's event fd and progresses when peers' requests arrive:
 * on TCP, UCX executes a peer's put/get/atomic here, in software, so without
 * this a process that computes or blocks outside the library stalls its peers.
 *
 * It sleeps only after ucp_worker_arm returned OK, the loop UCX documents.
 * With UCP_WAKEUP_TX (see cm_rma_init) the arm refuses while one of our sends
 * is still queued in UCX (a peer's shared-memory FIFO was full): such a send
 * goes out only through our own progress, and no event announces that the
 * peer made room. A send queued after the arm, by another thread, signals
 * the worker (cm_rma_am_post).
 */
static void *cm_rma_progress_main(void *arg)
{
    cm_rma_t *rma = arg;
    struct epoll_event ev, events[2];
    int worker_fd, ep_fd;
    unsigned idle = 0;
    ucs_status_t st;

    if (ucp_worker_get_efd(rma->worker, &worker_fd) != UCS_OK) {
        cm_error("progress thread: no UCX event fd");
        return NULL;
    }
    ep_fd = epoll_create1(EPOLL_CLOEXEC);
    if (ep_fd < 0) {
        cm_error("progress thread: epoll_create1: %s", strerror(errno));
        return NULL;
    }
    ev.events  = EPOLLIN;
    ev.data.fd = worker_fd;
    epoll_ctl(ep_fd, EPOLL_CTL_ADD, worker_fd, &ev);
    ev.data.fd = rma->stop_fd;
    epoll_ctl(ep_fd, EPOLL_CTL_ADD, rma->stop_fd, &ev);

    for (;;) {
        if (atomic_load_explicit(&rma->main_polling, memory_order_relaxed) ||
            atomic_load_explicit(&rma->main_held, memory_order_relaxed)) {
            struct timespec ts = {.tv_sec  = (time_t)(rma->handoff_ns / 1000000000u),
                                  .tv_nsec = (long)(rma->handoff_ns % 1000000000u)};
            nanosleep(&ts, NULL);
            continue;
        }
        if (ucp_worker_progress(rma->worker) != 0) {
            /* Whatever a handler or an emulated put changed may be what the application
               thread sleeps on (cm_rma_block). */
            cm_rma_wake_self(rma);
            idle = 0;
            continue;
        }
        bool armed = cm_rma_bell_arm(rma), progressed;
        st = cm_rma_arm(rma, &progressed);
        if (progressed) {
            /* The arm's own progress ran something (a peer's put over TCP), as the call
               above would have: its sleeper waits for this wake (tests/model/wake.pml,
               PROGRESS; without it, test_wait saw a missed wake-up). */
            cm_rma_wake_self(rma);
        }
        if (st == UCS_ERR_BUSY) {
            /* Events to drain, or a queued send waiting for room at a peer:
               keep progressing, but leave the core to that peer. */
            cm_rma_bell_disarm(rma, armed);
            cm_rma_idle(&idle);
            continue;
        }
        if (st != UCS_OK) {
            cm_error("progress thread: ucp_worker_arm: %s", ucs_status_string(st));
            break;
        }
        idle = 0;
        int n = epoll_wait(ep_fd, events, 2, rma->poll_ns ? (int)(rma->poll_ns / 1000000) : -1);
        cm_rma_bell_disarm(rma, armed);
        if (n < 0 && errno != EINTR) {
            cm_error("progress thread: epoll_wait: %s", strerror(errno));
            break;
        }
        atomic_fetch_add_explicit(&rma->wakeups, 1, memory_order_relaxed);
        for (int i = 0; i < n; i++) {
            if (events[i].data.fd == rma->stop_fd) {
                close(ep_fd);
                return NULL;
            }
        }
    }
    close(ep_fd);
    return NULL;
}

cm_status_t cm_rma_thread_start(cm_rma_t *rma)
{
    int rc;

    rma->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (rma->stop_fd < 0) {
        cm_error("eventfd: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    rc = pthread_create(&rma->thread, NULL, cm_rma_progress_main, rma);
    if (rc != 0) {
        cm_error("cannot start the progress thread: %s", strerror(rc));
        close(rma->stop_fd);
        return CM_ERR_NO_MEMORY;
    }
    rma->thread_running = true;
    cm_debug("progress thread started");
    return CM_OK;
}

void cm_rma_thread_stop(cm_rma_t *rma)
{
    uint64_t one = 1;

    if (!rma->thread_running) {
        return;
    }
    if (write(rma->stop_fd, &one, sizeof(one)) != sizeof(one)) {
        cm_warn("cannot signal the progress thread: %s", strerror(errno));
    }
    pthread_join(rma->thread, NULL);
    close(rma->stop_fd);
    rma->thread_running = false;
}

/* ---- blocking ------------------------------------------------------------ */

static long cm_rma_futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
    /* Not FUTEX_PRIVATE_FLAG: peers wake the word through their own mapping of it. */
    return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

void cm_rma_wake(cm_rma_waitword_t *w)
{
    __atomic_fetch_add(&w->seq, 1, __ATOMIC_SEQ_CST);
    cm_rma_futex(&w->seq, FUTEX_WAKE, INT_MAX, NULL);
}

static void cm_rma_wake_self(cm_rma_t *rma)
{
    cm_rma_waitword_t *w = rma->wait_self;

    if (w == NULL || !rma->blocking) {
        return;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    switch (__atomic_load_n(&w->sleeping, __ATOMIC_RELAXED)) {
    case CM_RMA_SLEEP_FUTEX:
        cm_rma_wake(w);
        break;
    case CM_RMA_SLEEP_EVENTS: {
        uint64_t one = 1;
        if (write(rma->self_fd, &one, sizeof(one)) != sizeof(one)) {
            cm_rma_wake(w); /* cannot fail on an eventfd below its maximum; never silent */
        }
        break;
    }
    }
}

/* Why this process cannot be woken from a sleep, or NULL if it can. */
static const char *cm_rma_block_obstacle(cm_rma_t *rma, char *buf, size_t len)
{
    if (rma->progress_mode == CM_RMA_PROGRESS_OFF && rma->nprocs > 1) {
        return "a blocked wait hands the peers' requests to the progress thread, and "
               "CM_PROGRESS_THREAD=off";
    }
    for (int pe = 0; pe < rma->nprocs; pe++) {
        char tl[64]; /* a transport's name ("rc_verbs/mlx5_0:1") */

        if (pe == rma->rank || rma->wait_peer[pe] != NULL) {
            continue; /* wakes us with a futex */
        }
        /* Not mapped: its writes must arrive as events of our worker (TCP: UCX emulates RMA
           at the target). A NIC's RDMA write lands in memory silently. */
        if (!cm_rma_peer_tcp_only(rma, pe, tl, sizeof(tl))) {
            snprintf(buf, len, "rank %d is reached over %s, whose one-sided writes raise no "
                     "event here to wake a sleeper", pe, tl);
            return buf;
        }
    }
    return NULL;
}

static int cm_rma_online_cpus(void)
{
    cpu_set_t set;

    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        return CPU_COUNT(&set);
    }
    return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

cm_status_t cm_rma_wait_setup(cm_rma_t *rma, void *word, int local_procs)
{
    char why[192];
    const char *obstacle;
    int cpus = cm_rma_online_cpus(), shm_procs = 1;
    cm_status_t status;

    if (((uintptr_t)word & 7) != 0 || cm_rma_ptr(rma, rma->rank, word) == NULL) {
        cm_error("wait word %p: not an aligned word of a mapped segment", word);
        return CM_ERR_INVALID;
    }
    rma->wait_peer = calloc((size_t)rma->nprocs, sizeof(*rma->wait_peer));
    if (rma->wait_peer == NULL) {
        cm_error("rma: out of memory");
        return CM_ERR_NO_MEMORY;
    }
    for (int pe = 0; pe < rma->nprocs; pe++) {
        rma->wait_peer[pe] = cm_rma_ptr(rma, pe, word);
    }
    rma->wait_self = word;
    if (rma->nprocs == 1) {
        return CM_OK;
    }
    status = cm_rma_bell_plan(rma);
    if (status != CM_OK) {
        return status;
    }
    /* Who shares this machine's cores follows the transport too: peers UCX reaches through
       shared memory run here whatever the launcher calls their host. */
    for (int pe = 0; pe < rma->nprocs; pe++) {
        shm_procs += pe != rma->rank && rma->shm_peer[pe];
    }
    if (shm_procs > local_procs) {
        cm_debug("the launcher puts %d processes on this node; UCX reaches %d through shared "
                 "memory: waits count %d", local_procs, shm_procs, shm_procs);
        local_procs = shm_procs;
    }

    if (rma->wait_mode == CM_RMA_WAIT_SPIN) {
        return CM_OK;
    }
    if (rma->wait_mode == CM_RMA_WAIT_AUTO && local_procs <= cpus) {
        cm_debug("waits spin: %d processes on this node, %d cores", local_procs, cpus);
        return CM_OK;
    }
    obstacle = cm_rma_block_obstacle(rma, why, sizeof(why));
    if (obstacle != NULL) {
        if (rma->wait_mode == CM_RMA_WAIT_BLOCK) {
            cm_error("CM_WAIT=block: %s", obstacle);
            return CM_ERR_INVALID;
        }
        cm_info("waits spin although %d processes share %d cores: %s", local_procs, cpus,
                obstacle);
        return CM_OK;
    }
    if (!rma->thread_running) {
        status = cm_rma_thread_start(rma);
        if (status != CM_OK) {
            return status;
        }
    }
    rma->self_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (rma->self_fd < 0 || ucp_worker_get_efd(rma->worker, &rma->worker_fd) != UCS_OK) {
        rma->worker_fd = -1; /* waits for events sleep on the futex, woken by the thread */
    }
    rma->blocking = true;
    cm_debug("waits block after %" PRIu64 " ns (%d processes on this node, %d cores)",
             rma->wait_spin_ns, local_procs, cpus);
    return CM_OK;
}

/* A sleep ended by the backstop found its condition true: nobody woke it when it changed. */
static void cm_rma_wake_missed(cm_rma_t *rma)
{
    if (atomic_fetch_add_explicit(&rma->wait_missed, 1, memory_order_relaxed) == 0) {
        cm_warn("a blocked wait was not woken when what it waited for happened (noticed after "
                "%.1f s); please report this", CM_RMA_BLOCK_BACKSTOP_NS / 1e9);
    }
}

/*
 * Sleeps until woken (or the backstop). The sequence is read before `sleeping` is set: a
 * waker that saw `sleeping` bumps it after our read, so the futex either refuses to sleep
 * or is woken. The worker is the progress thread's meanwhile.
 */
/* This thread's depth of cm_rma_hold_begin sections (each thread counts once in main_held). */
static __thread unsigned cm_rma_held_here;

/* Only where some peer is reached through UCX's sends (not mapped here): with every peer
 * mapped, operations are copies and CPU atomics that take no worker lock, and parking the
 * thread through every event made sor 1.38x slower at 4 processes on one host. */
static inline bool cm_rma_holds(const cm_rma_t *rma)
{
    return rma->thread_running && !rma->all_mapped;
}

void cm_rma_hold_begin(cm_rma_t *rma)
{
    if (cm_rma_holds(rma) && cm_rma_held_here++ == 0) {
        atomic_fetch_add_explicit(&rma->main_held, 1, memory_order_relaxed);
    }
}

void cm_rma_hold_end(cm_rma_t *rma)
{
    if (cm_rma_holds(rma) && --cm_rma_held_here == 0) {
        atomic_fetch_sub_explicit(&rma->main_held, 1, memory_order_relaxed);
    }
}

void cm_rma_sleep_begin(cm_rma_t *rma)
{
    if (cm_rma_holds(rma) && cm_rma_held_here > 0) {
        atomic_fetch_sub_explicit(&rma->main_held, 1, memory_order_seq_cst);
    }
}

void cm_rma_sleep_end(cm_rma_t *rma)
{
    if (cm_rma_holds(rma) && cm_rma_held_here > 0) {
        atomic_fetch_add_explicit(&rma->main_held, 1, memory_order_relaxed);
    }
}

static void cm_rma_block(cm_rma_t *rma, cm_rma_ready_fn_t ready, void *arg)
{
    cm_rma_waitword_t *w = rma->wait_self;
    uint32_t seq = __atomic_load_n(&w->seq, __ATOMIC_ACQUIRE);
    struct timespec ts = {.tv_sec  = (time_t)(CM_RMA_BLOCK_BACKSTOP_NS / 1000000000ull),
                          .tv_nsec = (long)(CM_RMA_BLOCK_BACKSTOP_NS % 1000000000ull)};

    __atomic_store_n(&w->sleeping, CM_RMA_SLEEP_FUTEX, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (cm_rma_held_here > 0) {
        atomic_fetch_sub_explicit(&rma->main_held, 1, memory_order_seq_cst); /* back at wake-up */
    }
    atomic_store_explicit(&rma->main_polling, 0, memory_order_seq_cst);
    if (!ready(arg)) {
        atomic_fetch_add_explicit(&rma->wait_blocks, 1, memory_order_relaxed);
        if (cm_rma_futex(&w->seq, FUTEX_WAIT, seq, &ts) != 0 && errno == ETIMEDOUT &&
            ready(arg)) {
            cm_rma_wake_missed(rma);
        }
    }
    __atomic_store_n(&w->sleeping, 0, __ATOMIC_RELAXED);
    atomic_store_explicit(&rma->main_polling, 1, memory_order_relaxed);
    if (cm_rma_held_here > 0) {
        atomic_fetch_add_explicit(&rma->main_held, 1, memory_order_relaxed);
    }
}

/*
 * Sleeps on the worker's event fd until an event arrives (or the backstop): for conditions
 * only handlers of worker events change. This thread keeps the worker (the progress thread
 * stays parked), so an answer wakes the one thread that waits for it, and a request that
 * arrives meanwhile is served here, as while spinning.
 */
static void cm_rma_block_events(cm_rma_t *rma, cm_rma_ready_fn_t ready, void *arg)
{
    cm_rma_waitword_t *w = rma->wait_self;
    struct pollfd pfd[2] = {{.fd = rma->worker_fd, .events = POLLIN},
                            {.fd = rma->self_fd, .events = POLLIN}};
    int timeout_ms = (int)((rma->poll_ns ? rma->poll_ns : CM_RMA_BLOCK_BACKSTOP_NS) / 1000000);
    uint64_t drained;
    bool armed, progressed;

    /* The progress thread may be inside a progress call it began just before this thread
     * took the worker back: an event it consumed raises nothing more on the worker's fd, so
     * it wakes us through self_fd when its handler is done (cm_rma_wake_self). */
    __atomic_store_n(&w->sleeping, CM_RMA_SLEEP_EVENTS, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    armed = cm_rma_bell_arm(rma);
    /* (Whatever the arm's own progress ran is this thread's: ready() looks at it next.) */
    if (cm_rma_arm(rma, &progressed) == UCS_OK && !ready(arg)) {
        atomic_fetch_add_explicit(&rma->wait_blocks, 1, memory_order_relaxed);
        /* Where some peer cannot wake us (rma->poll_ns), finding the condition true after a
           timeout is the plan, not a missed wake-up. */
        if (poll(pfd, 2, timeout_ms) == 0 && rma->poll_ns == 0 && ready(arg)) {
            cm_rma_wake_missed(rma);
        }
    }
    cm_rma_bell_disarm(rma, armed);
    __atomic_store_n(&w->sleeping, 0, __ATOMIC_RELAXED);
    if (read(rma->self_fd, &drained, sizeof(drained)) < 0) {
        /* EAGAIN: nobody wrote */
    }
}

/* ---- waits ---------------------------------------------------------------- */

__thread uint64_t cm_rma_thread_waits __attribute__((tls_model("initial-exec")));

static void cm_rma_wait_loop(cm_rma_t *rma, cm_rma_ready_fn_t ready, void *arg, bool events,
                             const cm_rma_why_t *why)
{
    unsigned idle = 0;
    uint64_t since = 0, now;

    if (ready(arg)) {
        return;
    }
    cm_rma_thread_waits++;
    cm_rma_why_push(rma, why != NULL ? why : CM_RMA_WHY("a word of this process", NULL, 0, 0, -1));
    cm_rma_poll_begin(rma);
    while (!ready(arg)) {
        if (ucp_worker_progress(rma->worker) != 0) {
            idle = 0;
            continue;
        }
        if (!rma->blocking) {
            cm_rma_idle(&idle);
            continue;
        }
        if (++idle < 16) {
            cm_rma_cpu_relax();
            continue;
        }
        now = cm_time_ns();
        if (since == 0) {
            since = now;
        }
        if (now - since < rma->wait_spin_ns) {
            sched_yield();
            continue;
        }
        if (events && rma->worker_fd >= 0) {
            cm_rma_block_events(rma, ready, arg);
        } else {
            cm_rma_block(rma, ready, arg);
        }
        idle = 0;
        since = 0;
    }
    cm_rma_poll_end(rma);
    cm_rma_why_pop(rma);
}

void cm_rma_wait_until(cm_rma_t *rma, cm_rma_ready_fn_t ready, void *arg, const cm_rma_why_t *why)
{
    cm_rma_wait_loop(rma, ready, arg, false, why);
}

void cm_rma_wait_events(cm_rma_t *rma, cm_rma_ready_fn_t ready, void *arg, const cm_rma_why_t *why)
{
    cm_rma_wait_loop(rma, ready, arg, true, why);
}

static inline bool cm_rma_cmp(uint64_t a, cm_rma_cmp_t cmp, uint64_t b)
{
    switch (cmp) {
    case CM_CMP_EQ: return a == b;
    case CM_CMP_NE: return a != b;
    case CM_CMP_GT: return a > b;
    case CM_CMP_GE: return a >= b;
    case CM_CMP_LT: return a < b;
    case CM_CMP_LE: return a <= b;
    }
    return false;
}

typedef struct {
    volatile uint64_t *addr;
    cm_rma_cmp_t      cmp;
    uint64_t          value;
} cm_rma_word_wait_t;

static bool cm_rma_word_ready(void *arg)
{
    cm_rma_word_wait_t *w = arg;
    return cm_rma_cmp(__atomic_load_n(w->addr, __ATOMIC_ACQUIRE), w->cmp, w->value);
}

void cm_rma_wait_u64(cm_rma_t *rma, volatile uint64_t *addr, cm_rma_cmp_t cmp, uint64_t value,
                     const cm_rma_why_t *why)
{
    cm_rma_word_wait_t w = {addr, cmp, value};

    cm_rma_wait_until(rma, cm_rma_word_ready, &w, why);
}
