/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-process protocol statistics, declared once. cm_finalize gathers them on
 * rank 0 (one-sided puts into its metadata segment), which prints a table of
 * every process and the total, and writes JSON when CM_STATS names a file: the
 * schema "cashmere-stats/1" of docs/STATS.md (util/cm_stats_json.c).
 */
#ifndef CM_STATS_H
#define CM_STATS_H

#include "util/cm_time.h"
#include "util/cm_trace.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Times, in nanoseconds: every name ends in _ns (the JSON keeps them; the table prints
 * milliseconds, under the name with _ms). Each is exclusive (cm_stats_phase_enter below): a nanosecond of a
 * thread is charged to the innermost phase it is in, so the breakdown of the paper's Fig. 2
 * (experiments/paper) adds them up without counting anything twice. */
#define CM_STATS_TIMERS(_) \
    _(total_ns,      "wall time from cm_init to cm_finalize") \
    _(fault_ns,      "in page faults (directory, page copy, mapping)") \
    _(lock_wait_ns,  "waiting for locks (MCS queue)") \
    _(barrier_ns,    "waiting in barriers (dissemination rounds)") \
    _(release_ns,    "in releases (write-through flush, delayed notices)") \
    _(acquire_ns,    "in acquires (notice drain, self-invalidation)") \
    _(handler_ns,    "TreadMarks: serving requests while the application computed (interrupts)") \
    _(offload_cpu_ns, "CPU time of the offload thread (CHH*, NSH*: emulating the snooping interface)") \
    _(line_fill_ns,  "in software line fills (NS*: access checks that missed)") \
    _(page_copy_ns,  "copying or mapping whole pages into place (Cashmere's page fills; TreadMarks's page replies)") \
    _(write_through_ns, "completing write-through at releases and acquires (merge buffer, settle, remote completion)") \
    _(data_wait_ns,  "TreadMarks: waiting for the replies of page and diff requests at faults") \
    _(twin_diff_ns,  "TreadMarks: making twins, encoding and applying diffs, scanning for writes") \
    _(trace_ns,      "writing the event trace's buffers to its file (CM_TRACE)")

/* Counts. */
#define CM_STATS_COUNTERS(_) \
    _(read_faults,        "page faults on a load") \
    _(write_faults,       "page faults on a store") \
    _(pages_fetched,      "pages copied from their home") \
    _(early_copies,       "of those, got at the same time as the fault's directory update (one round trip)") \
    _(early_stale,        "early copies got again after the update: the entry had moved since it was seen") \
    _(pages_refetched,    "of those, copied again at an acquire, in one batch (CM_REFETCH)") \
    _(refetch_used,       "refetched pages used before their next invalidation") \
    _(pages_prefetched,   "of those, brought along by another page's miss (CM_PREFETCH)") \
    _(prefetch_used,      "prefetched pages used before their next invalidation") \
    _(pages_mapped,       "pages mapped onto their home's memory (NH variants)") \
    _(local_maps,         "two levels: faults that mapped the host's copy with nothing to get (current already, or the page homed on this host)") \
    _(diffs_in,           "two levels: pages got from their home that changed the host's copy (incoming diffs against its twin)") \
    _(diff_bytes_in,      "two levels: bytes those incoming diffs wrote") \
    _(diffs_out,          "two levels: outgoing diffs (the host's copy against its twin) put to the home") \
    _(diff_bytes_out,     "two levels: bytes those outgoing diffs put") \
    _(line_fills,         "lines fetched from their home by access checks (NS variants)") \
    _(home_migrations,    "pages whose home moved here on first touch") \
    _(dir_updates,        "directory read-modify-writes") \
    _(home_joins,         "of those, joins of pages homed here by an add not waited for (add form)") \
    _(dir_retries,        "directory compare-and-swap retries") \
    _(notices_posted,     "write notices posted to other processes") \
    _(notices_suppressed, "write notices not posted: one already pending there") \
    _(notices_self,       "write notices to itself (joining a weak page)") \
    _(notices_drained,    "write notices consumed at acquires") \
    _(invalidations,      "pages self-invalidated") \
    _(unsafe_pages,       "pages this process marked unsafe") \
    _(unsafe_checks,      "unsafe pages checked in the directory at acquires") \
    _(ring_overflows,     "write-notice ring overflows (everything invalidated)") \
    _(doubled_stores,     "shared stores forwarded to homes (hook calls)") \
    _(forwarded_puts,     "write-through transfers to homes") \
    _(merge_flushes,      "merge-buffer lines written through") \
    _(folded_stores,      "*S*: runs of stored bytes no store report named (a check the compiler dropped or folded into a load check), found by line twins at a flush") \
    _(offload_passes,     "passes of the offload thread over its pages (CHH*, NSH*)") \
    _(lock_acquires_local,  "lock acquires, lock homed here") \
    _(lock_acquires_remote, "lock acquires, lock homed elsewhere") \
    _(lock_grants,        "locks given to another host that asked (twolevel: a host keeps a lock until then)") \
    _(sleeps,             "waits of the TreadMarks and PARMACS layers (conditions, PAUSE flags) that slept until woken") \
    _(sleep_wakes,        "wakes sent to processes asleep on a lock's word") \
    _(barriers,           "barriers") \
    _(acquires,           "acquire operations") \
    _(releases,           "release operations") \
    _(puts,               "one-sided puts issued") \
    _(gets,               "one-sided gets issued") \
    _(atomics,            "one-sided atomics issued") \
    _(bytes_put,          "bytes put") \
    _(bytes_got,          "bytes got") \
    _(off_host_ops,       "of the puts, gets, atomics and messages, those to processes on other hosts (as the process manager places them)") \
    _(off_host_bytes,     "their bytes (an atomic counts 8)") \
    _(wait_blocks,        "waits that slept until woken (CM_WAIT)") \
    _(wait_missed,        "sleeps that outlasted a change of their word (never expected)") \
    _(wake_bells,         "doorbells rung: messages to peers their transport could not wake (shared memory across network namespaces)") \
    _(arm_caught,         "events found on looking again after arming the worker to sleep: completions its transport would not have raised (soft-RoCE)") \
    _(net_interrupts,     "requests served here at an injected interrupt (CM_NET_INTERRUPT)") \
    _(waits,              "waits of the application thread on its peers (cm_rma.h: each round trip waited for, once)") \
    _(waits_read_fault,   "of those, in read faults that claimed no home") \
    _(waits_write_fault,  "of those, in write faults that claimed no home") \
    _(waits_first_touch,  "of those, in faults that claimed the home (first touch: home_migrations counts them)") \
    _(waits_release,      "of those, in releases (barriers' included)") \
    _(waits_acquire,      "of those, in acquires once the lock is held (barriers' included)") \
    _(waits_lock,         "of those, for the lock itself (queue, grant)") \
    _(waits_barrier,      "of those, in barriers' rounds") \
    _(peak_rss_bytes,     "the process's peak resident memory (getrusage): its data, the program and the runtime's metadata") \
    _(shared_resident_bytes, "the shared region's memory this process's file holds at the end: its copies of pages (two levels: the host's copy at its leader, with the host's twins; the others' 0)") \
    _(intervals,          "TreadMarks: intervals created here") \
    _(twins,              "twins made (TreadMarks; two levels: of the host's copy, by this process)") \
    _(scan_written,       "TreadMarks scan: writable pages found written at an interval end") \
    _(scan_clean,         "TreadMarks scan: writable pages found clean at an interval end") \
    _(scan_protected,     "TreadMarks scan: pages protected again after clean scans") \
    _(diffs_created,      "TreadMarks: diffs encoded") \
    _(diff_bytes_created, "TreadMarks: bytes of the diffs encoded") \
    _(diffs_applied,      "TreadMarks: diffs applied to pages here") \
    _(diff_bytes_applied, "TreadMarks: bytes of the diffs applied") \
    _(cold_misses,        "TreadMarks: pages copied from their manager (first access)") \
    _(interrupts,         "TreadMarks: requests served while the application computed") \
    _(gc_runs,            "TreadMarks: garbage collections") \
    _(msgs,               "messages sent (all types)") \
    _(msg_bytes,          "message bytes sent (all types)") \
    _(msgs_lock_req,      "lock requests sent (to the manager)") \
    _(msgs_lock_fwd,      "lock requests forwarded (manager to last requester)") \
    _(msgs_lock_grant,    "lock grants sent") \
    _(msgs_bar_arrive,    "barrier arrivals sent") \
    _(msgs_bar_depart,    "barrier departures sent") \
    _(msgs_diff_req,      "diff requests sent") \
    _(msgs_diff_reply,    "diff replies sent") \
    _(msgs_page_req,      "page requests sent") \
    _(msgs_page_reply,    "page replies sent") \
    _(msg_bytes_grant,    "bytes of lock grants (intervals, write notices)") \
    _(msg_bytes_barrier,  "bytes of barrier arrivals and departures") \
    _(msg_bytes_diff,     "bytes of diff replies") \
    _(msg_bytes_page,     "bytes of page replies")

enum {
#define CM_STATS_COUNT_(_name, _doc) CM_STATS_T_##_name,
    CM_STATS_TIMERS(CM_STATS_COUNT_)
#undef CM_STATS_COUNT_
    CM_STATS_NTIMERS
};

typedef struct {
#define CM_STATS_FIELD(_name, _doc) uint64_t _name;
    CM_STATS_TIMERS(CM_STATS_FIELD)
    CM_STATS_COUNTERS(CM_STATS_FIELD)
#undef CM_STATS_FIELD
} cm_stats_t;

/*
 * Exclusive time accounting. A thread is in at most one phase at a time; entering a nested
 * phase stops the clock of the enclosing one, leaving restarts it. Phases are per thread (a
 * fault in the application thread, a request served by the progress thread); the accumulators
 * are per process, so charges are atomic adds.
 *
 *     uint64_t *outer = cm_stats_phase_enter(&st.fault_ns);
 *     ...
 *     cm_stats_phase_leave(outer);
 */
extern __thread uint64_t *cm_stats_phase_acc __attribute__((tls_model("initial-exec")));
extern __thread uint64_t cm_stats_phase_t0 __attribute__((tls_model("initial-exec")));

/* The event trace (CM_TRACE) records each phase entered and left, named by its timer's place
 * in the process's statistics: the protocol's, set by its init (cm_stats_phase_base). */
extern cm_stats_t *cm_stats_phase_stats;

static inline void cm_stats_phase_trace(uint64_t *acc, bool enter, uint64_t now)
{
    uint64_t base = (uint64_t)(uintptr_t)cm_stats_phase_stats, a = (uint64_t)(uintptr_t)acc;
    uint64_t timer = (a - base) / sizeof(uint64_t);
    cm_trace_buf_t *b = cm_trace_mine;

    /* A phase outside the protocol's statistics (or none) has no name: not recorded. */
    if (acc == NULL || cm_stats_phase_stats == NULL || a < base ||
        a >= base + CM_STATS_NTIMERS * sizeof(uint64_t)) {
        return;
    }
    /* A phase with nothing recorded inside it (most: a write-through, a lock wait) ends in
     * its begin's record, made one span: a third fewer records where locks are many. */
    if (!enter && b != NULL && b->used > 0 && b->rec[b->used - 1].kind == CM_TRACE_PHASE_BEGIN &&
        b->rec[b->used - 1].obj == timer) {
        b->rec[b->used - 1].kind = CM_TRACE_PHASE;
        b->rec[b->used - 1].dur  = now - b->rec[b->used - 1].t;
        return;
    }
    cm_trace_emit(enter ? CM_TRACE_PHASE_BEGIN : CM_TRACE_PHASE_END, now, 0, timer, -1, 0, 0);
}

static inline void cm_stats_phase_base(cm_stats_t *st)
{
    cm_stats_phase_stats = st;
}

static inline void cm_stats_phase_charge(uint64_t now)
{
    if (cm_stats_phase_acc != NULL) {
        __atomic_fetch_add(cm_stats_phase_acc, cm_ticks_to_ns(now - cm_stats_phase_t0),
                           __ATOMIC_RELAXED);
    }
    cm_stats_phase_t0 = now;
}

/* Returns the enclosing phase, to be given back to cm_stats_phase_leave. */
static inline uint64_t *cm_stats_phase_enter(uint64_t *acc)
{
    uint64_t *outer = cm_stats_phase_acc, now = cm_ticks();

    cm_stats_phase_charge(now);
    cm_stats_phase_acc = acc;
    if (__builtin_expect(cm_trace_on, 0)) {
        cm_stats_phase_trace(acc, true, now); /* the tick read for the statistics */
    }
    return outer;
}

static inline void cm_stats_phase_leave(uint64_t *outer)
{
    uint64_t now = cm_ticks(), *acc = cm_stats_phase_acc;

    /* Charged before the record: writing the trace's buffer out (a phase of its own) moves
     * the phase's start past now, which charged after would make negative. */
    cm_stats_phase_charge(now);
    if (__builtin_expect(cm_trace_on, 0)) {
        cm_stats_phase_trace(acc, false, now);
    }
    cm_stats_phase_acc = outer;
}

/* The value of expr (a call that returns one), evaluated inside the phase of acc. */
#define CM_STATS_IN_PHASE(acc, expr) \
    __extension__({ \
        uint64_t *cm_phase_outer_ = cm_stats_phase_enter(acc); \
        __typeof__(expr) cm_phase_value_ = (expr); \
        cm_stats_phase_leave(cm_phase_outer_); \
        cm_phase_value_; \
    })

/* Table: one column per process and a total; timers in milliseconds, as NAME_ms rows. */
void cm_stats_print_table(FILE *out, const cm_stats_t *per_proc, int nprocs, const char *header);

/* Where one process ran: gathered with its statistics, into the JSON's processes. */
typedef struct {
    char    host[64];        /* its node's host name */
    int32_t local_procs;     /* processes of the job on that node */
    int32_t pid;
    char    transports[128]; /* the UCX transports to its peers, '+'-joined ("" alone) */
} cm_stats_where_t;

/*
 * The run the statistics are of: the members the statistics JSON and cm_bench --json share
 * (docs/STATS.md). A NULL string is written as null.
 */
typedef struct {
    const char *program;     /* the program's name, without the build's suffix ("sor") */
    const char *binary;      /* the file that ran ("sor.hooks") */
    const char *const *args; /* its arguments after the name */
    int        nargs;
    const char *protocol;    /* "cashmere", "treadmarks" or "none" */
    const char *variant;     /* "CHSM"...: under cashmere only */
    const char *fill, *write, *merge, *build, *fabric; /* the variant's mechanisms (idem) */
    const char *description; /* the protocol's own one-line account (the table's header) */
    int        nprocs;
    int        nodes;          /* distinct host names among the processes; 0: not known */
    int        procs_per_node; /* the same on every node; 0: not known or not the same */
    size_t     page_size;      /* the coherence unit (CM_PAGE_SIZE); 0: not known */
    const char *version, *commit;
    const char *hostname;    /* where rank 0 ran */
    int        cores;        /* online there */
    const char *kernel;      /* uname: "Linux 6.1.0-18-amd64 x86_64" */
    const char *ucx_version, *ucx_tls;
    const char *transports;  /* every process's transports, '+'-joined */
    double     start, end;   /* wall clock (s since the epoch): cm_init, and the report */
} cm_stats_run_t;

/* The run's members, each "  \"key\": value,\n" (the object's opening brace written already). */
void cm_stats_json_run(FILE *out, const cm_stats_run_t *run);

/* The statistics JSON: run, per process where and what, and the total. */
void cm_stats_write_json(FILE *out, const cm_stats_run_t *run, const cm_stats_where_t *where,
                         const cm_stats_t *per_proc, int nprocs);

/* Sums per_proc into *total. */
void cm_stats_total(const cm_stats_t *per_proc, int nprocs, cm_stats_t *total);

#endif
