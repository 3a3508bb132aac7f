/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals of the one-sided layer shared by its files: the UCX lifecycle
 * (cm_rma_ucx.c), segments (cm_rma_seg.c), data movement and its completion
 * (cm_rma_ops.c), active messages (cm_rma_am.c) and the waiting policy with
 * its progress thread (cm_rma_wait.c).
 */
#ifndef CM_RMA_INT_H
#define CM_RMA_INT_H

#include "rma/cm_rma.h"
#include "rma/cm_rma_delay.h"
#include "util/cm_log.h"
#include "util/cm_time.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>

/*
 * The word through which a blocked waiter is woken, one per process, in a
 * segment its node-local peers map: a waker that sees `sleeping` after its
 * store bumps `seq` and wakes the futex on it (a shared futex: the waiter and
 * its peers map the same memory).
 */
typedef struct {
    uint32_t seq;      /* futex word */
    uint32_t sleeping; /* CM_RMA_SLEEP_*: how the owner may be asleep */
    uint32_t bell;     /* futex word of the doorbell (cm_rma_bell.c) */
    uint32_t armed;    /* the owner's threads asleep on its worker's event fd */
} cm_rma_waitword_t;

/* What wakes this process when a peer's message arrives (cm_rma_bell.c). */
typedef enum { CM_RMA_WAKE_UCX, CM_RMA_WAKE_BELL, CM_RMA_WAKE_POLL } cm_rma_wake_t;

/* On the futex (peers' stores and the progress thread wake it) or on the worker's event fd
 * (events wake it; the progress thread through self_fd). */
enum { CM_RMA_SLEEP_NONE, CM_RMA_SLEEP_FUTEX, CM_RMA_SLEEP_EVENTS };

/* Counters of operations: several threads may issue them (the application's, an offload
 * thread's), so they are added atomically. */
#define CM_RMA_COUNT(field, n) __atomic_fetch_add(&(field), (n), __ATOMIC_RELAXED)

/* A thread's stack of waits (cm_rma_watch.c). */
#define CM_RMA_WHY_DEPTH 6
#define CM_RMA_WAITERS   4            /* threads watched: the application's, an offload thread */
#define CM_RMA_WATCH_STOP (1ull << 40) /* eventfd value that stops the watcher */
#define CM_RMA_REPORT_SIGNAL SIGUSR2   /* cmrun --timeout: every rank reports its wait */

typedef struct {
    struct cm_rma  *rma;
    int            tid;
    bool           app;       /* the thread that called cm_init */
    uint32_t       seq;       /* odd while a frame is being written */
    unsigned       depth;     /* may exceed CM_RMA_WHY_DEPTH: deeper frames are not kept */
    uint64_t       gen;       /* outermost frames pushed so far: which wait this is */
    cm_rma_why_t   frames[CM_RMA_WHY_DEPTH];
    /* The watcher's own: it stamps a wait when it first sees it (a push reads no clock). */
    uint64_t       seen_gen, seen_at, busy_at, stuck_next;
} cm_rma_waiter_t;

#define CM_RMA_MAX_SEGS 8
/* Operands of non-blocking operations: UCX may read them after the call returns. */
#define CM_RMA_STASH    1024

struct cm_rma_seg {
    uintptr_t         base;
    size_t            len;
    cm_rma_seg_kind_t kind;
    char              name[32];
    ucp_mem_h         memh;
    bool              own_mmap; /* we mapped the memory and UCX only registered it */
    int               fd;       /* CM_RMA_SEG_FD: the memfd, else -1 */
    ucp_rkey_h        *rkeys;   /* per pe */
    char              **rbase;  /* per pe: where pe's copy of base is mapped here, or NULL */
};

/* What a CM_RMA_SEG_FD segment's owner publishes so that node-local peers can map it. */
typedef struct {
    int32_t pid;
    int32_t fd;
} cm_rma_fd_info_t;

struct cm_rma {
    cm_boot_t          *boot;
    cm_heartbeat_t     *heartbeat;  /* heartbeats: a lost peer ends the job */
    int                rank;
    int                nprocs;
    ucp_context_h      context;
    ucp_worker_h       worker;
    ucp_ep_h           *eps;
    cm_rma_seg_t       *segs[CM_RMA_MAX_SEGS];
    int                nsegs;
    bool               all_mapped;
    bool               *shm_peer;   /* per pe: UCX reaches it through shared memory */
    bool               *same_host;  /* per pe: on this host, as the process manager says */
    uint64_t           *irq_ns;     /* per pe: CM_NET_INTERRUPT where a CPU there executes our
                                       one-sided operations (UCX over TCP, emulated atomics) */
    bool               shm_known;   /* shm_peer is filled (an ATOMIC segment was mapped) */

    cm_rma_progress_t progress_mode;
    bool               thread_running;
    pthread_t          thread;
    int                stop_fd;
    atomic_uint_fast64_t wakeups;
    atomic_uint_fast64_t interrupts; /* requests served at an injected interrupt */
    atomic_uint_fast64_t arm_caught; /* found by the look after arming (cm_rma_arm) */
    atomic_int         main_polling;  /* the application thread is progressing the worker */
    atomic_int         main_held;     /* threads inside a cm_rma_hold_begin/end section */
    uint64_t           handoff_ns;    /* how often a parked progress thread looks again */

    /* Blocking waits (cm_rma_wait.c). */
    cm_rma_wait_t     wait_mode;
    uint64_t           wait_spin_ns;  /* spin (and yield) this long before blocking */
    bool               blocking;      /* waits may block (decided by cm_rma_wait_setup) */
    int                worker_fd;     /* the worker's event fd where waits block, else -1 */
    int                self_fd;       /* eventfd: the progress thread wakes a wait on worker_fd */
    cm_rma_waitword_t  *wait_self;    /* our word, in a segment peers map */
    cm_rma_waitword_t  **wait_peer;   /* per pe: its word mapped here, or NULL */
    atomic_uint_fast64_t wait_blocks, wait_missed;
    /* Peers whose transport cannot wake us (cm_rma_bell.c). */
    cm_rma_wake_t      *wake;         /* per pe, or NULL before the plan */
    atomic_bool        bells_on;      /* sleepers count themselves in `armed` */
    atomic_bool        bell_stop;
    bool               bell_running;
    pthread_t          bell_thread;
    uint32_t           bell_seen;
    uint64_t           poll_ns;       /* sleeps on the worker look again this often (0: never) */
    atomic_uint_fast64_t bell_rings;

    /* Stuck waits (cm_rma_watch.c). */
    uint64_t           stuck_ns;      /* CM_STUCK_REPORT; 0: no reports but cmrun's */
    int                app_tid;
    int                watch_fd;      /* eventfd: report now, or stop */
    bool               watch_running;
    pthread_t          watch_thread;
    atomic_uint        nwaiters;
    cm_rma_waiter_t    waiters[CM_RMA_WAITERS];
    _Atomic uint64_t   *am_last_ns;   /* per pe: when its last active message came (or 0) */
    atomic_uint        *am_last_id;   /* ... and its id */

    cm_rma_delay_t     delay;
    uint64_t           *pending_ns; /* per pe: completion time of injected delays of *_nbi ops */
    uint64_t           pending_all_ns;

    cm_rma_stats_t     stats;
    /* Handlers post from any thread. */
    atomic_uint_fast64_t am_sent, am_bytes_sent, am_received, am_queued;
    struct cm_rma_am {
        cm_rma_t            *rma;
        cm_rma_am_handler_t fn;
        void                *arg;
        const char          *name;  /* "a lock grant": in stuck-wait reports */
        bool                request; /* served at an interrupt (CM_NET_INTERRUPT) */
    } am[CM_RMA_AM_MAX_ID];
    bool               strong_fence;   /* ucp_worker_fence does not order every peer's operations:
                                          complete them before the next UCX operation too */
    bool               self_amo_cpu;   /* our own words' atomics are CPU atomics, done here */
    bool               amo_emulated;   /* some peer's atomics are messages its CPU executes */
    /*
     * UCX operations in flight, as counts: the application thread and an offload thread
     * (CHH*, NSH*) issue through one worker, and a flush one thread began before the other
     * issued an operation does not complete that operation. A flag cleared after any flush
     * let a directory update skip the flush of its entry's get and read the words before
     * they came (the page's home moved a second time, and stores were lost). Each
     * operation that needs a flush counts itself once issued; a worker flush completes
     * what was counted when it began.
     */
    uint64_t           ucx_issued;     /* operations issued through UCX (atomic) */
    uint64_t           ucx_flushed;    /* ... of which complete: counted before a worker flush */
    uint64_t           ucx_fenced;     /* ... issued before the latest fence */
    /* Operands of non-blocking atomics (the application thread's: nobody else issues them),
     * kept until a flush completes the operations that read them. */
    uint64_t           stash_seq;      /* ucx_issued once the last of them was issued */
    unsigned           stash_used;
    uint64_t           stash[CM_RMA_STASH];
};

/* An operation that needs a flush to complete was issued through UCX: counted after the
 * issue, so that a flush begun after the count completes it. Returns the new count. */
static inline uint64_t cm_rma_ucx_count(cm_rma_t *rma)
{
    return __atomic_add_fetch(&rma->ucx_issued, 1, __ATOMIC_SEQ_CST);
}

/* Has a flush of all completed the first seq operations counted (ucx_issued's values)? */
static inline bool cm_rma_ucx_flushed_to(cm_rma_t *rma, uint64_t seq)
{
    return __atomic_load_n(&rma->ucx_flushed, __ATOMIC_SEQ_CST) >= seq;
}

/* Operations issued through UCX that no flush of all has completed yet? */
static inline bool cm_rma_ucx_pending(cm_rma_t *rma)
{
    return !cm_rma_ucx_flushed_to(rma, __atomic_load_n(&rma->ucx_issued, __ATOMIC_SEQ_CST));
}

/* *v = max(*v, x), from any thread. */
static inline void cm_rma_seq_raise(uint64_t *v, uint64_t x)
{
    uint64_t cur = __atomic_load_n(v, __ATOMIC_SEQ_CST);

    while (cur < x &&
           !__atomic_compare_exchange_n(v, &cur, x, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
}

static inline void cm_rma_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* One step of a spin loop that made no progress: spin briefly, then give the core away. */
static inline void cm_rma_idle(unsigned *idle)
{
    if (++*idle < 16) {
        cm_rma_cpu_relax();
    } else {
        sched_yield();
    }
}


/*
 * While the application thread spins on the worker, the progress thread stays
 * parked: two threads fighting over one worker (UCX's lock, a wake-up for
 * every reply) made TCP round trips 2-5x slower and erratic, and waking the
 * thread each time the application stopped polling was as bad. So the parked
 * thread looks again every CM_PROGRESS_HANDOFF: when the application has left
 * the library, the thread takes over serving peers within that time.
 */
static inline void cm_rma_poll_begin(cm_rma_t *rma)
{
    if (rma->thread_running) {
        atomic_store_explicit(&rma->main_polling, 1, memory_order_relaxed);
    }
}

static inline void cm_rma_poll_end(cm_rma_t *rma)
{
    if (rma->thread_running) {
        atomic_store_explicit(&rma->main_polling, 0, memory_order_relaxed);
    }
}

/*
 * Shared between this layer's files only. Hidden: like the static functions
 * they were while the backend was one file, they stay out of the library's
 * exported symbols and are called without the PLT.
 */
#define CM_RMA_INTERNAL __attribute__((visibility("hidden")))

/* ---- lifecycle (cm_rma_ucx.c) ---------------------------------------------- */

/* A collective through the process manager: an exchange of what was put, or a fence. */
CM_RMA_INTERNAL cm_status_t cm_rma_boot_sync(cm_rma_t *rma, bool exchange);
/* Waits until every operation issued through UCX (and every connection handshake) is done. */
CM_RMA_INTERNAL cm_status_t cm_rma_ucx_complete(cm_rma_t *rma, const char *what);

/* ---- segments (cm_rma_seg.c) ----------------------------------------------- */

/* Releases a segment's keys, mappings and registration; also one cm_rma_seg_map set up in part. */
CM_RMA_INTERNAL void cm_rma_seg_free(cm_rma_t *rma, cm_rma_seg_t *seg);

/* The segment holding [addr, addr+len), or NULL (with a message). */
static inline cm_rma_seg_t *cm_rma_seg_find(cm_rma_t *rma, const void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr;

    for (int i = 0; i < rma->nsegs; i++) {
        cm_rma_seg_t *seg = rma->segs[i];
        if (a >= seg->base && a + len <= seg->base + seg->len && a + len >= a) {
            return seg;
        }
    }
    cm_error("address range %p+%zu is not inside a registered RMA segment", addr, len);
    return NULL;
}

/* ---- completion and delays (cm_rma_ops.c) ----------------------------------- */

/* Waits for a UCX request, progressing; op and pe (-1: none) name it in a message. */
CM_RMA_INTERNAL cm_status_t cm_rma_req_wait(cm_rma_t *rma, ucs_status_ptr_t req, const char *op,
                                            int pe);
/* Non-blocking-implicit: the request completes by the next flush. */
CM_RMA_INTERNAL cm_status_t cm_rma_req_release(cm_rma_t *rma, ucs_status_ptr_t req, const char *op,
                                               int pe);
/* An operation to pe (-1: to all) failed with st: logged; where st means the peer is gone, the
 * job ends here with one line naming its rank and host (cm_heartbeat_lost_peer). */
CM_RMA_INTERNAL cm_status_t cm_rma_failed(cm_rma_t *rma, const char *op, int pe, ucs_status_t st);
/* No atomic lane to pe: UCX emulates our atomics there with messages that pe's CPU executes
 * when it progresses (UCX_ATOMIC_MODE=device over shared memory, some networks). */
CM_RMA_INTERNAL bool cm_rma_ucx_amo_emulated(cm_rma_t *rma, int pe);
/* Does a CPU at pe execute some of our one-sided operations there (puts and gets over TCP,
 * atomics without an atomic lane)? Those pay CM_NET_INTERRUPT. */
CM_RMA_INTERNAL bool cm_rma_ucx_target_cpu(cm_rma_t *rma, int pe);

/* Charges an operation to pe; returns when it may complete (0: no delay). */
static inline uint64_t cm_rma_delay_begin(cm_rma_t *rma, int pe, size_t bytes)
{
    uint64_t now, ready, cpu_until;

    if (!rma->delay.enabled || pe == rma->rank) {
        return 0;
    }
    now   = cm_time_ns();
    ready = cm_rma_delay_charge(&rma->delay, now, bytes, &cpu_until) + rma->irq_ns[pe];
    /* The overhead is CPU time of the issuer: burn it, do not sleep. */
    while (cm_time_ns() < cpu_until) {
        cm_rma_cpu_relax();
    }
    CM_RMA_COUNT(rma->stats.delay_ns, cpu_until - now);
    return ready;
}

/* Charges a message to pe (its sender's overhead burnt here); returns when it may be delivered
 * at pe (0: no delay). */
static inline uint64_t cm_rma_delay_message_begin(cm_rma_t *rma, int pe, size_t bytes)
{
    uint64_t now, due, cpu_until;

    if (!rma->delay.enabled || pe == rma->rank) {
        return 0;
    }
    now = cm_time_ns();
    due = cm_rma_delay_message(&rma->delay, now, bytes, &cpu_until);
    while (cm_time_ns() < cpu_until) {
        cm_rma_cpu_relax();
    }
    CM_RMA_COUNT(rma->stats.delay_ns, cpu_until - now);
    return due;
}

/* A blocking operation to pe just completed for real, with the injected completion time ready:
 * when it completes with them. The interrupt at a target whose CPU executed it follows the real
 * operation (it starts the handler that served it); the rest overlaps it, from its issue. */
static inline uint64_t cm_rma_delay_done(cm_rma_t *rma, int pe, uint64_t ready)
{
    uint64_t after;

    if (ready == 0 || rma->irq_ns[pe] == 0) {
        return ready;
    }
    after = cm_time_ns() + rma->irq_ns[pe];
    return (after > ready) ? after : ready;
}

/* Waits, progressing, until an injected delay's completion time ready (0: none). */
CM_RMA_INTERNAL void cm_rma_delay_until(cm_rma_t *rma, uint64_t ready);

/* Makes a completion time due at the next flush of pe and of all. */
static inline void cm_rma_delay_defer(cm_rma_t *rma, int pe, uint64_t ready)
{
    if (ready > rma->pending_ns[pe]) {
        rma->pending_ns[pe] = ready;
    }
    if (ready > rma->pending_all_ns) {
        rma->pending_all_ns = ready;
    }
}

/* ---- waits (cm_rma_wait.c) ------------------------------------------------- */

/* The progress thread. */
cm_status_t cm_rma_thread_start(cm_rma_t *rma);
void cm_rma_thread_stop(cm_rma_t *rma);

/* Bumps w's sequence and wakes whoever sleeps on it. */
void cm_rma_wake(cm_rma_waitword_t *w);

/* After our store into pe's directly mapped memory: wakes pe if it sleeps in a wait. */
static inline void cm_rma_wake_peer(cm_rma_t *rma, int pe)
{
    cm_rma_waitword_t *w;

    if (rma->wait_peer == NULL || (w = rma->wait_peer[pe]) == NULL) {
        return;
    }
    /* Store, fence, look: the sleeper sets `sleeping`, fences, looks at the word (Dekker). */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&w->sleeping, __ATOMIC_RELAXED) == CM_RMA_SLEEP_FUTEX) {
        cm_rma_wake(w);
    }
}

/* ---- stuck waits (cm_rma_watch.c) ----------------------------------------- */

/* At init: the setting (0: none), and the thread and signal handler that report. */
CM_RMA_INTERNAL cm_status_t cm_rma_watch_start(cm_rma_t *rma, uint64_t stuck_ns);
CM_RMA_INTERNAL void cm_rma_watch_stop(cm_rma_t *rma);

/* ---- doorbells (cm_rma_bell.c) ------------------------------------------- */

/* Publishes our network namespace: before the exchange of worker addresses. */
CM_RMA_INTERNAL cm_status_t cm_rma_bell_publish(cm_rma_t *rma);
/* Once the lanes are final and the wait words mapped: who wakes us, per peer; starts the
 * doorbell's thread where a peer needs it. */
CM_RMA_INTERNAL cm_status_t cm_rma_bell_plan(cm_rma_t *rma);
CM_RMA_INTERNAL void cm_rma_bell_stop(cm_rma_t *rma);
CM_RMA_INTERNAL void cm_rma_bell_ring_slow(cm_rma_t *rma, int pe);
CM_RMA_INTERNAL const char *cm_rma_wake_name(cm_rma_wake_t wake);

/* A message of ours to pe is in its FIFO: ring pe's doorbell if its transport cannot wake it
 * and a thread of pe sleeps on its worker. Any thread. */
static inline void cm_rma_bell_ring(cm_rma_t *rma, int pe)
{
    if (rma->wake != NULL && rma->wake[pe] == CM_RMA_WAKE_BELL) {
        cm_rma_bell_ring_slow(rma, pe);
    }
}

/* Around a sleep on the worker's event fd: armed before ucp_worker_arm, disarmed after with
 * what the arm returned (bells_on may turn on in between). */
static inline bool cm_rma_bell_arm(cm_rma_t *rma)
{
    if (!atomic_load_explicit(&rma->bells_on, memory_order_acquire)) {
        return false;
    }
    __atomic_fetch_add(&rma->wait_self->armed, 1, __ATOMIC_SEQ_CST);
    return true;
}

static inline void cm_rma_bell_disarm(cm_rma_t *rma, bool armed)
{
    if (armed) {
        __atomic_fetch_sub(&rma->wait_self->armed, 1, __ATOMIC_SEQ_CST);
    }
}

/* Does UCX carry pe's messages over shared memory? buf: the transport. (cm_rma_ucx.c) */
CM_RMA_INTERNAL bool cm_rma_peer_am_shm(cm_rma_t *rma, int pe, char *buf, size_t len);

/* Does ucp_worker_fence order every operation issued to pe? (cm_rma_ucx.c) */
bool cm_rma_ucx_fence_orders(cm_rma_t *rma, int pe);
bool cm_rma_ucx_cpu_atomics(cm_rma_t *rma);

/* An operation or message to pe: counted apart too where pe is on another host. */
static inline void cm_rma_count_off(cm_rma_t *rma, int pe, size_t len)
{
    if (!rma->same_host[pe]) {
        CM_RMA_COUNT(rma->stats.off_host_ops, 1);
        CM_RMA_COUNT(rma->stats.off_host_bytes, len);
    }
}

#endif
