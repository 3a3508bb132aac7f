/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one-sided layer every protocol action is built on: registered segments
 * at the same virtual address in every process, put/get (blocking and
 * non-blocking-implicit), 64-bit atomics, flush, progress, and the query
 * whether a peer's memory is directly load/store mapped. Backend: UCX (ucp).
 *
 * Addressing: a remote location is (pe, addr) where addr is the address of the
 * same location in this process; every segment sits at one VA everywhere.
 *
 * Completion: cm_rma_put returns when the source may be reused; the data is
 * visible at the target after cm_rma_flush(pe) / cm_rma_flush_all(). *_nbi
 * operations complete at the next flush (sources must stay untouched and
 * destinations unread until then). Gets and atomics that return a value are
 * complete when they return.
 *
 * Target progress: on transports that emulate RMA in software (TCP), the
 * target's CPU must run UCX progress. Every wait in this layer progresses, and
 * a progress thread (CM_PROGRESS_THREAD) serves peers while the process
 * computes or blocks outside the library.
 */
#ifndef CM_RMA_H
#define CM_RMA_H

#include "cm.h"
#include "rma/cm_boot.h"
#include "rma/cm_heartbeat.h"
#include "rma/cm_rma_delay.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucp/api/ucp.h>

/* Whether a thread serves peers while the process computes (CM_PROGRESS_THREAD), and how a
 * wait for a peer's write waits (CM_WAIT): the runtime translates the settings. */
typedef enum { CM_RMA_PROGRESS_AUTO, CM_RMA_PROGRESS_ON, CM_RMA_PROGRESS_OFF } cm_rma_progress_t;
typedef enum { CM_RMA_WAIT_AUTO, CM_RMA_WAIT_SPIN, CM_RMA_WAIT_BLOCK } cm_rma_wait_t;

typedef struct cm_rma cm_rma_t;
typedef struct cm_rma_seg cm_rma_seg_t;

typedef struct {
    cm_boot_t          *boot;
    cm_rma_progress_t progress;
    uint64_t           handoff_ns;   /* CM_PROGRESS_HANDOFF */
    cm_rma_delay_cfg_t delay;        /* CM_NET_*: delay injection, see cm_rma_delay.h */
    cm_rma_wait_t     wait;         /* CM_WAIT */
    uint64_t           wait_spin_ns; /* CM_WAIT_SPIN */
    cm_heartbeat_params_t heartbeat;  /* CM_PEER_TIMEOUT: see cm_heartbeat.h */
    uint64_t           stuck_ns;     /* CM_STUCK_REPORT: see cm_rma_why_t; 0: off */
} cm_rma_params_t;

/*
 * What a wait waits for, for the line a stuck wait prints (CM_STUCK_REPORT) and the report
 * every rank prints at cmrun's --timeout. `what` is a constant; in it "%s" stands for name,
 * "%a" and "%b" for the numbers, "%x" for the first in hexadecimal; nothing else is a
 * conversion. peer: the rank whose action ends the wait, or -1 (several, or none). Nothing
 * is formatted unless a report is printed.
 */
typedef struct {
    const char *what;
    const char *name;
    uint64_t    a, b;
    int         peer;
} cm_rma_why_t;

/* A description in place: CM_RMA_WHY("the grant of lock %a", NULL, id, 0, manager). */
#define CM_RMA_WHY(what, name, a, b, peer) (&(const cm_rma_why_t){(what), (name), (a), (b), (peer)})

/*
 * Around a stretch of this thread that waits, or may (an API call, a page fault): pushed
 * frames nest; the outermost one's age is the wait's age, the innermost one says what is
 * missing now. The waits of this layer push their own (the why they are given).
 */
void cm_rma_why_push(cm_rma_t *rma, const cm_rma_why_t *why);
void cm_rma_why_pop(cm_rma_t *rma);

/* Installs the handler of the signal by which cmrun --timeout asks for every rank's report
 * (SIGUSR2, where the program has none): as early as possible, so that a rank still starting
 * is not killed by the signal's default action; its watcher answers once it runs. */
void cm_rma_watch_signal(void);

/* Counters of this process's operations (issued by it). */
typedef struct {
    uint64_t puts, gets, atomics, flushes;
    uint64_t bytes_put, bytes_got;
    uint64_t am_sent, am_bytes_sent, am_received; /* active messages */
    uint64_t am_queued;       /* posted messages UCX queued (no room at the peer yet) */
    uint64_t delay_ns;        /* time spent in injected delays */
    uint64_t progress_wakeups; /* progress thread wake-ups */
    uint64_t interrupts;       /* requests served here at an injected interrupt (CM_NET_INTERRUPT) */
    uint64_t wait_blocks;      /* waits that slept (CM_WAIT) */
    uint64_t wait_missed;      /* sleeps that outlasted a change of their word: never expected */
    uint64_t wake_bells;       /* doorbells rung for peers their transport cannot wake */
    uint64_t arm_caught;       /* events found on looking again after arming the worker */
    uint64_t waits;            /* the calling thread's waits on its peers (cm_rma_waits_here) */
    /* Of the puts, gets, atomics and messages issued, those to processes on other hosts (as the
     * process manager places them), and their bytes (an atomic counts 8). */
    uint64_t off_host_ops, off_host_bytes;
} cm_rma_stats_t;

typedef enum { CM_CMP_EQ, CM_CMP_NE, CM_CMP_GT, CM_CMP_GE, CM_CMP_LT, CM_CMP_LE } cm_rma_cmp_t;

/*
 * A put into a peer's directly mapped memory, written the way a NIC writes it:
 * every byte once, each aligned word by one 8-byte store (an aligned 4-byte
 * word at either end by one 4-byte store), in ascending order.
 * memcpy may store a byte twice (glibc copies 8 to 15 bytes with two
 * overlapping 8-byte stores). A peer polling the word can see the first store,
 * act on it and reset the word before the second lands and writes the old
 * value back: that is how a queue link reappeared in a node its owner had just
 * reset (a hand-off to a process that was not waiting, i.e. two holders and a
 * lost update, or a cycle and a hang, once in about 600 runs).
 */
static inline void cm_rma_copy_once(char *dst, const char *src, size_t len)
{
#if defined(__x86_64__)
    if (len >= 256) {
        /* A string move stores each byte once, at memcpy's speed (enhanced rep movsb). */
        __asm__ __volatile__("rep movsb" : "+D"(dst), "+S"(src), "+c"(len) : : "memory");
        return;
    }
#endif
    while (len > 0 && ((uintptr_t)dst & 7) != 0) {
        if (len >= 4 && ((uintptr_t)dst & 3) == 0) {
            uint32_t h;
            memcpy(&h, src, sizeof(h));
            __atomic_store_n((uint32_t *)(void *)dst, h, __ATOMIC_RELAXED);
            dst += 4, src += 4, len -= 4;
            continue;
        }
        *(volatile char *)dst++ = *src++;
        len--;
    }
    for (; len >= 8; len -= 8, dst += 8, src += 8) {
        uint64_t w;
        memcpy(&w, src, sizeof(w)); /* one (possibly unaligned) load */
        __atomic_store_n((uint64_t *)(void *)dst, w, __ATOMIC_RELAXED);
    }
    if (len >= 4) { /* dst is 8-aligned here */
        uint32_t h;
        memcpy(&h, src, sizeof(h));
        __atomic_store_n((uint32_t *)(void *)dst, h, __ATOMIC_RELAXED);
        dst += 4, src += 4, len -= 4;
    }
    while (len > 0) {
        *(volatile char *)dst++ = *src++;
        len--;
    }
}

/* Collective: UCX context and worker, address exchange, endpoints to every rank (self included). */
cm_status_t cm_rma_init(const cm_rma_params_t *params, cm_rma_t **rma_p);

/* Collective: completes everything, waits for every process, tears down (segments included). */
cm_status_t cm_rma_finalize(cm_rma_t *rma);

typedef enum {
    /*
     * UCX allocates the memory (posix/sysv shared memory where available, so
     * that node-local peers reach it with ucp_rkey_ptr): put, get and atomics.
     */
    CM_RMA_SEG_ATOMIC,
    /*
     * This layer allocates the memory as a memfd and registers it with UCX: put
     * and get only. The owner may map further views of it (cm_rma_seg_fd), e.g.
     * one it protects page by page, without affecting remote access, which
     * always goes through this view. Peers that UCX reaches over shared memory
     * map the memfd directly and put/get to them are plain copies.
     */
    CM_RMA_SEG_FD
} cm_rma_seg_kind_t;

/*
 * Collective: allocates len bytes at addr in every process and registers them
 * for RMA. Fails with CM_ERR_ADDR_IN_USE if anything is mapped in
 * [addr, addr+len) here. name is used in messages. Map CM_RMA_SEG_ATOMIC
 * segments first: they tell which peers share this node's memory.
 */
cm_status_t cm_rma_seg_map(cm_rma_t *rma, void *addr, size_t len, cm_rma_seg_kind_t kind,
                           const char *name, cm_rma_seg_t **seg_p);

/*
 * What registering memory costs here. Registration asks UCX for on-demand paging
 * (UCP_MEM_MAP_NONBLOCK: ConnectX NICs map pages as the NIC touches them), but a
 * transport without it (soft-RoCE, older NICs) pins every page of a registered
 * range when it is registered: a region of many GiB then needs that much memory.
 * Measured, not guessed: a few registered pages are probed and the kernel's count
 * of this process's pinned pages (VmPin) read before and after. *pins: whether
 * registration pinned them; *limit: the bytes this process may pin (RLIMIT_MEMLOCK
 * unless it holds CAP_IPC_LOCK, and its share, among local_procs processes, of the
 * memory available here); *why: the limit in words, for an error message.
 */
cm_status_t cm_rma_pin_budget(cm_rma_t *rma, int local_procs, bool *pins, size_t *limit,
                              char *why, size_t why_len);

/* The memfd behind a CM_RMA_SEG_FD segment (owned by the segment), or -1. */
int cm_rma_seg_fd(const cm_rma_seg_t *seg);

/*
 * Maps another view of a CM_RMA_SEG_FD segment at addr (fixed; fails with
 * CM_ERR_ADDR_IN_USE if anything is mapped there) with protection prot. The
 * caller unmaps it (munmap) before finalize.
 */
cm_status_t cm_rma_seg_map_view(cm_rma_seg_t *seg, void *addr, int prot, const char *name);

int cm_rma_rank(const cm_rma_t *rma);
int cm_rma_nprocs(const cm_rma_t *rma);

/*
 * Hosts (issue 46): the ranks the process manager puts on one host (PMIX_LOCAL_PEERS), each
 * checked to run under the same kernel and in the same PID namespace as the host's first rank
 * (else the job ends with one line: they could not open each other's memory files). Hosts are numbered in the order of
 * their lowest ranks, the host's leader. Collective (one exchange through the process manager).
 */
typedef struct {
    int     host, nhosts;
    int     local_rank, local_size; /* this rank among its host's, in rank order */
    int     *host_of;               /* [rank] */
    int     *leader;                /* [host]: its lowest rank */
    int     *local;                 /* [local_size]: this host's ranks, ascending */
    int32_t *pid;                   /* [rank] */
} cm_rma_hosts_t;

cm_status_t cm_rma_hosts_init(cm_rma_t *rma, cm_rma_hosts_t *h);
void cm_rma_hosts_free(cm_rma_hosts_t *h);

/*
 * A node segment: a memory file the host's leader creates and every rank of the host maps
 * read-write at addr (NULL: anywhere), through /proc whatever transport UCX uses. Not
 * registered: only the host's processes reach it. A killed job leaves nothing behind (no
 * name in /dev/shm: the file goes with its last mapping). Collective over the job. *map: where
 * it is mapped; *fd (if fd is not NULL): this process's descriptor of the file, to map it
 * again (the caller closes it). The caller unmaps it.
 */
cm_status_t cm_rma_node_map(cm_rma_t *rma, const cm_rma_hosts_t *h, void *addr, size_t len,
                            const char *name, void **map, int *fd);

/* Maps pe's (a rank of this host) memory file of a CM_RMA_SEG_FD segment at addr with prot, in
 * place of what is there: the processes of a host then see one copy. */
cm_status_t cm_rma_seg_map_peer_view(cm_rma_t *rma, cm_rma_seg_t *seg, int pe,
                                     const cm_rma_hosts_t *h, void *addr, int prot);

/* Capability: pointer through which this process can load/store pe's copy of addr, or NULL. */
void *cm_rma_ptr(cm_rma_t *rma, int pe, const void *addr);
/*
 * Pointer through which plain CPU stores reach pe's copy of addr exactly as a
 * put would (directly mapped memory, no delay injection to honour), or NULL:
 * then stores must go through cm_rma_put*. The caller orders its stores
 * (a fence before anything that publishes them); cm_rma_flush does not know of them.
 */
void *cm_rma_store_ptr(cm_rma_t *rma, int pe, const void *addr);
/*
 * Maps [addr, addr + len) of pe's copy of a segment at dst (page aligned; whatever was
 * mapped there is replaced), read-write, sharing pe's pages: plain loads and stores at dst
 * reach pe's memory. CM_ERR_UNSUPPORTED where pe's memory is not mapped here (cm_rma_ptr is
 * NULL). The caller sets the protection it wants afterwards.
 */
cm_status_t cm_rma_alias(cm_rma_t *rma, int pe, const void *addr, void *dst, size_t len);
/* True if every peer's memory in every segment is directly mapped. */
bool cm_rma_all_mapped(const cm_rma_t *rma);
bool cm_rma_progress_thread_running(const cm_rma_t *rma);
/* Transports UCX uses to reach pe ("sysv/memory", "tcp/eth0"...), for reports. */
void cm_rma_describe_peer(cm_rma_t *rma, int pe, char *buf, size_t len);
/* Whether every transport reaching pe is TCP, whose one-sided operations pe's CPU executes
 * (each raises an event of pe's worker); else the name of the first that is not, in buf. */
bool cm_rma_peer_tcp_only(cm_rma_t *rma, int pe, char *buf, size_t len);

cm_status_t cm_rma_put(cm_rma_t *rma, int pe, void *addr, const void *src, size_t len);
/*
 * cm_rma_put returns once src may be reused (at once, unless the send waits for room); the
 * data is at pe at the next flush. cm_rma_put_nbi may leave src to be read later: it must
 * stay unchanged until the next flush (never a stack buffer of a frame that returns first).
 */
cm_status_t cm_rma_put_nbi(cm_rma_t *rma, int pe, void *addr, const void *src, size_t len);
/*
 * Puts one aligned word as a single 8-byte write: a peer polling it sees the
 * old value, then this one, never a second landing of it after it has reset
 * the word (cm_rma_put lands each byte once only on directly mapped memory;
 * through UCX the target copies with memcpy). Complete at the next flush.
 * Every word a peer waits on is written this way.
 */
cm_status_t cm_rma_put_u64_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value);
/*
 * The same one-word store as a signal nobody flushes: no flush of ours waits for it (a flush
 * is a round trip; a barrier's round is one one-way message). The caller keeps buf (two
 * words: the operand and the reply through UCX) untouched until the store has landed at pe,
 * which only the caller's own protocol can tell (locks/cm_barrier.h).
 */
cm_status_t cm_rma_signal_u64(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value,
                              uint64_t buf[2]);
cm_status_t cm_rma_get(cm_rma_t *rma, int pe, void *dst, const void *addr, size_t len);
cm_status_t cm_rma_get_nbi(cm_rma_t *rma, int pe, void *dst, const void *addr, size_t len);

cm_status_t cm_rma_swap(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old);
cm_status_t cm_rma_cswap(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t compare, uint64_t value,
                         uint64_t *old);
cm_status_t cm_rma_fadd(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old);
/* (No fetch-or/and: UCX 1.13's shared-memory transports leave memory unchanged on OR.) */
/* Atomic add without result, complete at the next flush. */
cm_status_t cm_rma_add_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value);
/* Fetch-and-add whose old value lands in *old at the next flush (*old must stay valid). */
cm_status_t cm_rma_fadd_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old);
/* Fetch-and-swap whose old value lands in *old at the next flush (*old must stay valid). */
cm_status_t cm_rma_swap_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old);
/* Compare-and-swap whose old value lands in *old at the next flush (many in one round trip). */
cm_status_t cm_rma_cswap_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t compare,
                             uint64_t value, uint64_t *old);

/*
 * A get or a fetch-and-store whose caller waits for it alone (cm_rma_fetch_wait) rather than
 * flushing its target: over TCP a flush of an endpoint also waits for the acknowledgements of
 * every put issued to it before (a directory update's lock and entry fetch took 63-78 us
 * through a flush, 46-54 us waiting for its two requests). A flush completes it too. The
 * handle is the caller's until the wait, which must come before dst or *old is read.
 */
typedef struct {
    void       *req;     /* UCX's request; NULL once complete */
    uint64_t   ready;    /* an injected delay's completion time (0: none) */
    uint64_t   operand;  /* an atomic's operand, read by UCX until complete */
    const char *what;
    int        pe;
} cm_rma_fetch_t;

cm_status_t cm_rma_get_fetch(cm_rma_t *rma, int pe, void *dst, const void *addr, size_t len,
                             cm_rma_fetch_t *f);
cm_status_t cm_rma_swap_fetch(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value,
                              uint64_t *old, cm_rma_fetch_t *f);
cm_status_t cm_rma_fadd_fetch(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value,
                              uint64_t *old, cm_rma_fetch_t *f);
cm_status_t cm_rma_cswap_fetch(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t compare,
                               uint64_t value, uint64_t *old, cm_rma_fetch_t *f);
cm_status_t cm_rma_fetch_wait(cm_rma_t *rma, cm_rma_fetch_t *f);

/*
 * Operations issued after this to a rank take effect there after those issued
 * before, whichever path each takes: the first copy to or from directly mapped
 * memory after a fence waits for the UCX operations issued before it, and so does
 * the first UCX operation where UCX's own fence does not order the lanes (verbs
 * with emulated atomics, several rails). Active messages are not ordered by it.
 */
cm_status_t cm_rma_fence(cm_rma_t *rma);

/*
 * A section of this thread's operations issued together and waited for (a release's
 * directory updates and notices, an acquire's leaves, a fault's join and copy): meanwhile the
 * progress thread stays parked, as while this thread waits in the library. Over TCP each
 * operation is a send under UCX's worker lock, and a progress thread taking that lock between
 * them made appbt's releases 4x slower across two hosts. Nests; a wait inside that blocks
 * hands the worker back to the progress thread while it sleeps. Nothing where every peer is
 * mapped here (no operation takes the worker's lock there).
 */
void cm_rma_hold_begin(cm_rma_t *rma);
void cm_rma_hold_end(cm_rma_t *rma);
/*
 * Around a sleep outside this layer (a lock of the host's shared memory, which another local
 * process may hold across a round trip): the worker is the progress thread's meanwhile, even
 * inside a hold, so that this process keeps serving its peers. Without it two hosts'
 * processes, each asleep under a hold on a lock whose holder waited for the other's
 * progress, never woke (the two-level protocol, 2 hosts x 2 processes, over TCP).
 */
void cm_rma_sleep_begin(cm_rma_t *rma);
void cm_rma_sleep_end(cm_rma_t *rma);

/*
 * A mark of the operations issued so far, and whether those are ordered before whatever is
 * issued from now on (a fence or a flush of all came since): a caller that issued something
 * not waited for fences before a dependent operation only while this says no.
 */
uint64_t cm_rma_issued(cm_rma_t *rma);
bool cm_rma_ordered(cm_rma_t *rma, uint64_t mark);

cm_status_t cm_rma_flush(cm_rma_t *rma, int pe);
cm_status_t cm_rma_flush_all(cm_rma_t *rma);

/* Runs UCX progress once; returns the number of events handled. */
unsigned cm_rma_progress(cm_rma_t *rma);

/*
 * Waits until *addr cmp value holds; addr is local memory written by peers
 * with cm_rma_put_u64_nbi. Progresses meanwhile; spins, yields, and where
 * waits block (cm_rma_wait_setup) sleeps until a peer's put or an event of
 * the worker wakes it.
 */
void cm_rma_wait_u64(cm_rma_t *rma, volatile uint64_t *addr, cm_rma_cmp_t cmp, uint64_t value,
                     const cm_rma_why_t *why);

/*
 * The same for any condition: ready() is called again after every event and
 * every wake-up. What it watches must change only through a put_u64 into
 * this process's memory or in a handler of an event of the worker (an active
 * message), or a blocked wait would not be woken.
 */
typedef bool (*cm_rma_ready_fn_t)(void *arg);
void cm_rma_wait_until(cm_rma_t *rma, cm_rma_ready_fn_t ready, void *arg,
                       const cm_rma_why_t *why);

/*
 * Collective, after the segment holding word is mapped: word is 8 zeroed
 * bytes at the same address in every process, in a CM_RMA_SEG_ATOMIC
 * segment, through which peers wake this process from a blocked wait.
 * Decides whether waits block (CM_WAIT; auto: when local_procs exceeds this
 * process's cores) and starts the progress thread if they do. Refuses
 * CM_WAIT=block, with one line saying why, where nobody could wake a sleeper.
 */
/*
 * For a condition only handlers of worker events (active messages) change:
 * this thread keeps progressing the worker and sleeps on its event fd.
 */
void cm_rma_wait_events(cm_rma_t *rma, cm_rma_ready_fn_t ready, void *arg,
                        const cm_rma_why_t *why);

cm_status_t cm_rma_wait_setup(cm_rma_t *rma, void *word, int local_procs);

/* flush_all + a barrier through the process manager. Not the protocol's barrier (locks/). */
cm_status_t cm_rma_barrier(cm_rma_t *rma);

void cm_rma_get_stats(const cm_rma_t *rma, cm_rma_stats_t *stats);

/*
 * Waits of the calling thread on its peers: a blocking operation whose completion was not there
 * when first asked (a get, a fetching atomic, a flush with operations in flight, a message
 * sent), and a wait for a word or an event that a peer sets (a lock's hand-off, a barrier
 * round, a reply). Each counts once, however long it lasts: what a protocol event costs in
 * round trips is the difference across it (the per-event counters of util/cm_stats.h). Copies
 * into directly mapped memory never wait.
 */
extern __thread uint64_t cm_rma_thread_waits __attribute__((tls_model("initial-exec")));
static inline uint64_t cm_rma_waits_here(void)
{
    return cm_rma_thread_waits;
}

/* The value of expr (a call that returns one), with the waits it took added to *acc. */
#define CM_RMA_COUNT_WAITS(acc, expr) \
    __extension__({ \
        uint64_t cm_waits0_ = cm_rma_waits_here(); \
        __typeof__(expr) cm_waits_value_ = (expr); \
        *(acc) += cm_rma_waits_here() - cm_waits0_; \
        cm_waits_value_; \
    })

/* stats -= base, field by field: the counts since base was taken (a statistics reset). */
void cm_rma_stats_since(cm_rma_stats_t *stats, const cm_rma_stats_t *base);

/*
 * Active messages (two-sided; the TreadMarks baseline's transport). A handler
 * runs inside UCX progress: in the application thread while it waits in the
 * library, else in the progress thread, so it must be thread-safe against the
 * application, must not block, and may answer only with cm_rma_am_post. The
 * data is valid during the call only, 8-byte aligned (UCX's TCP transport hands
 * messages over at any offset), and comes from a rank of the job (src < nprocs).
 */
#define CM_RMA_AM_MAX_ID 32
typedef void (*cm_rma_am_handler_t)(void *arg, int src, const void *data, size_t len);

/* name: what a message of this id is ("a lock grant"), for stuck-wait reports; may be NULL. */
cm_status_t cm_rma_am_set_handler(cm_rma_t *rma, unsigned id, cm_rma_am_handler_t fn, void *arg,
                                  const char *name);
/* Injected delays (CM_NET_*) off (pause) or as configured again: cm_bench compares an operation
 * with and without them. A message's target follows its sender's choice. */
void cm_rma_delay_pause(cm_rma_t *rma, bool pause);
typedef enum {
    CM_RMA_DELAY_OP,         /* a one-sided operation of `bytes` to pe, until complete */
    CM_RMA_DELAY_ROUND_TRIP, /* a request of `bytes` to pe and its reply of as many */
} cm_rma_delay_kind_t;
/* What the model adds to one such operation on an idle interface. */
uint64_t cm_rma_delay_expect(cm_rma_t *rma, int pe, cm_rma_delay_kind_t kind, size_t bytes);

/* Messages of id are requests: each is served at an interrupt of its target's CPU (CM_NET_INTERRUPT;
 * the target of a reply waits for it and polls). After cm_rma_am_set_handler. */
cm_status_t cm_rma_am_set_request(cm_rma_t *rma, unsigned id);
/* Sends and returns when data may be reused. Not from a handler. */
cm_status_t cm_rma_am_send(cm_rma_t *rma, int pe, unsigned id, const void *data, size_t len);
/* Copies data and returns at once; completes in the background. Handlers may use it. */
cm_status_t cm_rma_am_post(cm_rma_t *rma, int pe, unsigned id, const void *data, size_t len);

/*
 * The job's one clock (rma/cm_rma_clock.c), collective: this rank's CLOCK_MONOTONIC against
 * rank 0's by Cristian's algorithm, the best of tries round trips. Rank 0's own is 0, 0.
 */
typedef struct {
    int64_t  offset_ns; /* rank 0's clock minus this one's, at at_ns */
    uint64_t error_ns;  /* the bound on offset_ns's error: half the shortest round trip */
    uint64_t at_ns;     /* when, on this rank's clock */
} cm_rma_clock_t;
cm_status_t cm_rma_clock_sync(cm_rma_t *rma, int tries, cm_rma_clock_t *c);

/*
 * For code that drives the UCX worker itself (cm_bench's raw UCX figures, the
 * TreadMarks waits):
 * between enter and leave the caller progresses the worker and the progress
 * thread stays parked, exactly as inside this layer's own waits.
 */
void cm_rma_poll_enter(cm_rma_t *rma);
void cm_rma_poll_leave(cm_rma_t *rma);

/* For cm_bench only: the raw UCX objects behind (pe, addr), to measure UCX itself. */
ucp_worker_h cm_rma_ucp_worker(cm_rma_t *rma);
ucp_ep_h cm_rma_ucp_ep(cm_rma_t *rma, int pe);
ucp_rkey_h cm_rma_ucp_rkey(cm_rma_t *rma, int pe, const void *addr);

#endif
