/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two-level protocol's state (issue 46; docs/ARCHITECTURE.md, "Two levels";
 * tests/model/twolevel.pml). The processes of a host share one copy of each page (the host
 * leader's memory file, mapped by each at the shared region's address with its own
 * protections); the protocol runs between hosts. Each host keeps, in memory only its
 * processes map (rma/cm_rma_node.c), a record per page (a lock, the host's directory role,
 * the notices drained and the copy's currency), twins of the pages it writes, a log of the
 * pages its notices invalidated (each process reads it from its own place: its pending list)
 * and the state of its notice bins.
 */
#ifndef CM_2L_INT_H
#define CM_2L_INT_H

#include "directory/cm_dir.h"
#include "locks/cm_barrier.h"
#include "locks/cm_mcs.h"
#include "rma/cm_rma.h"
#include "src/protocols/cm_protocol.h"
#include "util/cm_stats.h"
#include "writenotice/cm_wn_bin.h"

#include <stdbool.h>
#include <stdint.h>

/* A page's record on its host: lock and role in one word, so that a release can see at once
 * that the host is a writer and that no release of the page is in progress. */
#define CM_2L_LOCKED  0x1u  /* held */
#define CM_2L_WAITERS 0x2u  /* someone sleeps on it (futex) */
#define CM_2L_SHARER  0x4u  /* the host's sharer bit is set (its JOIN landed) */
#define CM_2L_WRITER  0x8u  /* its writer bit is set, and the WRITE's notices are out */
#define CM_2L_TWIN    0x10u /* the host has a twin of the page (a writer here, not its home) */
#define CM_2L_FOUND   0x20u /* the host's last join found another writer (told at the next) */

typedef struct {
    uint32_t state;  /* CM_2L_* */
    uint32_t wn;     /* notices drained here for the page */
    uint32_t upd;    /* the value of wn the host's copy is current for */
    uint32_t home;   /* the home host + 1, once a join learnt it (0: its directory host's) */
} cm_2l_page_t;
_Static_assert(sizeof(cm_2l_page_t) <= CM_META_PAGE_HOST,
               "CM_META_PAGE_HOST undercounts a host's page record (cm_info --memory)");
_Static_assert(sizeof(uint8_t) + sizeof(uint32_t) + 2 * sizeof(uint64_t) <= CM_META_PAGE_PRIVATE,
               "CM_META_PAGE_PRIVATE undercounts the two-level protocol's page table");

/* The host's log: the pages its notices invalidated, in drain order; (uint64_t)-1: all. */
#define CM_2L_LOG_CAP  4096u
#define CM_2L_LOG_ALL  UINT64_MAX
#define CM_2L_SELF_CAP 4096u

typedef struct {
    uint64_t magic;
    uint32_t drain_lock;  /* acquires drain the host's bins one at a time */
    uint32_t self_lock;
    uint64_t log_tail;    /* entries ever appended */
    uint64_t self_n;      /* self-notices queued (SELF_CAP at most; more: self_all) */
    uint64_t self_all;
    uint32_t bar_arrived; /* the host's processes at the barrier, but its leader */
    uint32_t bar_gen;     /* barriers the leader let go (futex) */
} cm_2l_hdr_t;

/* An application lock on the host (cm_2l_sync.c). */
typedef struct {
    uint32_t m;        /* the host's mutex: 0 free, 1 held, 2 maybe waited for (futex) */
    uint32_t waiters;  /* processes here committed to taking it */
    uint32_t held;     /* the host has a place in the lock's queue between hosts */
    uint32_t next;     /* the rank (+ 1) of another host queued behind that place (an ask) */
    uint32_t passes;   /* passes to a process of the host since the ask */
    uint32_t pad[3];
} cm_2l_lock_t;

/* A process's view of a page (private): its protection, and whether the page is in its write
 * list (written since its last release, mapped or not). */
#define CM_2L_NONE  0u
#define CM_2L_RO    1u
#define CM_2L_RW    2u
#define CM_2L_PROT  3u
#define CM_2L_WL    4u
#define CM_2L_IDLE1 8u   /* releases in a row that found the page unchanged: 1 (bits 3-4) */
#define CM_2L_IDLE  0x18u
#define CM_2L_SEEN  0x20u /* faulted during the initialization phase (cm_2l_init_end) */
/* Unchanged releases before a writable page homed elsewhere is protected again (a program
 * that stores the same values, SOR's zeros, would fault at every phase otherwise). */
#define CM_2L_IDLE_MAX 3u

typedef struct {
    int      rank, nprocs;
    cm_rma_t *rma;
    const cm_rma_hosts_t *hosts;
    cm_rma_seg_t *shared_seg;
    int      host, nhosts, leader;   /* our host, hosts, our host's leader */
    char     *app;                   /* the shared region as the application sees it */
    char     *node;                  /* our host's copy, never protected (our net view if we lead) */
    char     *net;                   /* the shared region's network view (its address at peers) */
    size_t   page_size;
    unsigned shift;
    uint64_t npages;
    char     *meta_base;
    const cm_meta_layout_t *meta;
    /* The host's shared state. */
    cm_2l_hdr_t  *hdr;
    cm_2l_page_t *pages;
    uint64_t     *log;
    uint64_t     *selfq;
    uint64_t     *bin_head, *bin_ovf;  /* per sender: the host's consumed index and overflows seen */
    cm_2l_lock_t *locks;
    char         *twins;
    int          twins_fd;             /* (its blocks: the twins' memory) */
    size_t       node_len;
    /* Ours. */
    uint8_t  *pte;
    uint32_t *wl;                    /* the write list */
    uint64_t nwl;
    uint64_t log_cur;                /* our place in the host's log */
    uint64_t *drained;               /* scratch: pages of one drain */
    uint64_t *wold;                  /* scratch: a release's WRITE words */
    char     *fetch;                 /* a page got from its home */
    cm_wn_bin_t bins;
    cm_barrier_t barrier;            /* the hosts' leaders' */
    cm_stats_t st;
    cm_rma_stats_t rma_base;
    uint64_t t_start;
    bool     first_touch;            /* CM_FIRST_TOUCH: homes claimed once initialization ends */
    bool     init_phase;             /* ... and it has not yet */
} cm_2l_t;

extern cm_2l_t cm_2l;

static inline uint64_t cm_2l_page(uintptr_t addr)
{
    return (addr - (uintptr_t)cm_2l.app) >> cm_2l.shift;
}

/* The host of page p's directory word, and its home until a first touch claims it: round
 * robin over the hosts. */
static inline int cm_2l_dir_host(uint64_t p)
{
    return (int)(p % (uint64_t)cm_2l.nhosts);
}

static inline int cm_2l_dir_rank(uint64_t p)
{
    return cm_2l.hosts->leader[cm_2l_dir_host(p)];
}

/* Page p's directory word: at its directory host's leader, one word per page (where the
 * one-level protocol keeps its ring's pending words; cm_meta.h). */
static inline uint64_t *cm_2l_dir_word(uint64_t p)
{
    return (uint64_t *)(void *)(cm_2l.meta_base + cm_2l.meta->wn_pending) + p;
}

/* The host of page p's home: as the host learnt it at its join (cm_2l_home.c), else its
 * directory host. Known wherever the host is or was a sharer since the homes were claimed. */
static inline int cm_2l_home(uint64_t p)
{
    uint32_t h = __atomic_load_n(&cm_2l.pages[p].home, __ATOMIC_RELAXED);
    return (h != 0) ? (int)h - 1 : cm_2l_dir_host(p);
}

static inline int cm_2l_home_rank(uint64_t p)
{
    return cm_2l.hosts->leader[cm_2l_home(p)];
}

/* ---- the host's memory (cm_2l_node.c) ---- */
cm_status_t cm_2l_node_init(const cm_protocol_ctx_t *ctx);
void cm_2l_node_fini(void);
/* Bytes of the host's twins in memory. */
uint64_t cm_2l_node_resident(void);
/* After a barrier: every process of the host mapped the memory its leader stamped. */
cm_status_t cm_2l_node_check(void);
/* A lock word of the host's memory: spin, then sleep on a futex (shared between processes). */
void cm_2l_lock(uint32_t *word);
void cm_2l_unlock(uint32_t *word);
/* The page's record lock (the CM_2L_LOCKED bit of its state word). */
void cm_2l_page_lock(uint64_t p);
void cm_2l_page_unlock(uint64_t p);
static inline uint32_t cm_2l_state(uint64_t p)
{
    return __atomic_load_n(&cm_2l.pages[p].state, __ATOMIC_ACQUIRE);
}
static inline void cm_2l_state_set(uint64_t p, uint32_t set, uint32_t clear)
{
    uint32_t s = __atomic_load_n(&cm_2l.pages[p].state, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&cm_2l.pages[p].state, &s, (s | set) & ~clear, true,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    }
}
/*
 * Whether a wait on the host's memory must keep this process's worker going itself: peers
 * reached through UCX's sends (not mapped here) and no progress thread (CM_PROGRESS_THREAD=off)
 * to serve their operations on us while we sleep. Such a wait polls and progresses instead of
 * sleeping: a process of host b waited in its release's flush for a put to a process of host a
 * asleep at the host's barrier (stress, litmus restore, 2+1 processes, thread off).
 */
static inline bool cm_2l_must_progress(void)
{
    return !cm_rma_progress_thread_running(cm_2l.rma) && !cm_rma_all_mapped(cm_2l.rma);
}

/* ---- locks and barriers (cm_2l_sync.c) ---- */
bool cm_2l_mutex_trylock(cm_2l_lock_t *l);
void cm_2l_mutex_unlock(cm_2l_lock_t *l);
cm_status_t cm_2l_sync_init(void);
cm_status_t cm_2l_lock_take(unsigned id);
cm_status_t cm_2l_lock_give(unsigned id);
cm_status_t cm_2l_barrier_wait(void);
void cm_2l_wait_change(uint32_t *word, uint32_t old);

/* Queues a self-notice of page p for the host's next acquire (the page's lock held). */
void cm_2l_self_notice(uint64_t p);

/* ---- homes (cm_2l_home.c) ---- */
/* The host's JOIN of page p (its page lock held): a fetching add, or where the home is to be
 * claimed and the host does not know it, the claim or a join of the claimed word. *old: the
 * word before. The page's record then holds its home. */
cm_status_t cm_2l_home_join(uint64_t p, uint64_t *old);
/* The end of the initialization phase (after the first barrier): homes are claimed from then. */
cm_status_t cm_2l_init_end(void);
/* The host's bins emptied without acting on them (the leader, at the end of initialization). */
cm_status_t cm_2l_discard_notices(void);

/* ---- outgoing diffs to homes over TCP, in one message per home (cm_2l_batch.c) ---- */
cm_status_t cm_2l_batch_init(void);
void cm_2l_batch_fini(void);
bool cm_2l_batched(int pe);
cm_status_t cm_2l_batch_append(int pe, uint64_t off, const char *src, size_t len);
/* Sends every home's last batch with a request for an acknowledgement, waits for them. */
cm_status_t cm_2l_batch_complete(void);

/* ---- diffs (cm_2l_diff.c): byte-exact, so that words shared across hosts stay right ---- */
/* Incoming: where got differs from twin, into copy and twin; without a twin, got is the copy.
 * Returns the bytes changed. */
size_t cm_2l_diff_in(char *copy, char *twin, const char *got, size_t len, bool has_twin);
/* Outgoing: each run where copy differs from twin is written to the twin and handed to put
 * (offset, length; its bytes are the twin's from there on). Returns the bytes that differed. */
typedef cm_status_t (*cm_2l_put_fn_t)(size_t off, size_t len, void *arg);
cm_status_t cm_2l_diff_out(const char *copy, char *twin, size_t len, cm_2l_put_fn_t put,
                           void *arg, size_t *changed);

#endif
