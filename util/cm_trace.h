/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The protocol event trace (CM_TRACE, issue 47): per process, fixed-size records of what the
 * protocol did and when, on the process's CLOCK_MONOTONIC, into a buffer per thread that is
 * written to PREFIX.RANK.cmtrace when full (so memory stays bounded), at cm_finalize, and when
 * the job fails. Two clock records, at start and end, carry the offset to rank 0's clock
 * (Cristian's algorithm, rma/cm_rma_clock.c) and its error bound; `cm_trace` puts every
 * process on rank 0's clock and writes Chrome/Perfetto trace-event JSON and CSV. Times are
 * recorded in the statistics' ticks (cm_trace_now), which a phase has read already.
 *
 * Off (the default) an event costs one load and a branch not taken.
 */
#ifndef CM_TRACE_H
#define CM_TRACE_H

#include "util/cm_error.h"
#include "util/cm_time.h"

#include <stdbool.h>
#include <stdint.h>

/* Record kinds: name, what obj, peer and bytes say. A record with a duration is a span. */
#define CM_TRACE_KINDS(_) \
    _(CLOCK,        "clock",        "t: when (CLOCK_MONOTONIC ns, not ticks), obj: offset to rank 0 (ns, signed), dur: error bound (ns), peer: 0 start / 1 end") \
    _(TICKS,        "ticks",        "t: the trace's clock (ticks), obj: CLOCK_MONOTONIC ns at the same moment; at open and close") \
    _(ALLOC,        "alloc",        "obj: offset in the shared region, bytes: size, dur: the caller's address") \
    _(FAULT_READ,   "read fault",   "obj: page; the whole fault") \
    _(FAULT_WRITE,  "write fault",  "obj: page; the whole fault") \
    _(FETCH,        "page fetch",   "obj: page, peer: its home, bytes: bytes got") \
    _(DIR_UPDATE,   "directory",    "obj: page, peer: the directory word's process, seq: 1 join, 2 write (the first since joining), 3 leave") \
    _(NOTICE_POST,  "notice",       "obj: page, peer: the process told") \
    _(DRAIN,        "drain",        "bytes: notices drained, peer: from whom (-1: a ring of all)") \
    _(LOCK_WAIT,    "lock wait",    "obj: lock; from the request to the grant") \
    _(LOCK_HOLD,    "lock hold",    "obj: lock; from the grant to the release") \
    _(BARRIER,      "barrier",      "obj: the barrier's sequence number; arrival to departure") \
    _(DIFF_OUT,     "diff out",     "obj: page, peer: where it went, bytes: its size") \
    _(DIFF_IN,      "diff in",      "obj: page, peer: where it came from, bytes: what it wrote") \
    _(MSG_SEND,     "send",         "obj: type | first word << 8, peer: the target, bytes, seq: its number to peer") \
    _(MSG_QUEUE,    "queued",       "obj, peer (the sender), bytes, seq as sent: from arrival to its handler's start") \
    _(MSG_SERVE,    "serve",        "obj, peer (the sender), bytes, seq as sent: the handler") \
    _(PHASE_BEGIN,  "phase begin",  "obj: the statistics timer entered (CM_STATS_TIMERS' order)") \
    _(PHASE_END,    "phase end",    "obj: the timer left; the enclosing phase resumes") \
    _(LOCK_NEW,     "lock init",    "obj: the lock, dur: the initializing call's address (PARMACS LOCKINIT, ALOCKINIT)") \
    _(PHASE,        "phase",        "obj: the timer; a phase with none inside it, its begin and end in one record") \
    _(REGION,       "region",       "obj: 0 the statistics' interval begins (cm_stats_reset: a SPLASH-3 region of interest, an app's parallel section), 1 it ends (cm_stats_stop)")

typedef enum {
#define CM_TRACE_ENUM_(n, name, doc) CM_TRACE_##n,
    CM_TRACE_KINDS(CM_TRACE_ENUM_)
#undef CM_TRACE_ENUM_
    CM_TRACE_NKINDS
} cm_trace_kind_t;

/* One record, as written to the file (host byte order; the header says which). */
typedef struct {
    uint64_t t;     /* start, in ticks of the trace's clock (cm_trace_now) */
    uint64_t dur;   /* in ticks; 0 for an instant */
    uint64_t obj;
    uint32_t bytes;
    uint32_t seq;
    int32_t  peer;  /* a rank, or -1 */
    uint16_t kind;
    uint16_t tid;   /* the thread: 0 the first to trace (the application's), then in order */
} cm_trace_rec_t;

#define CM_TRACE_MAGIC   "CMTRACE1"
#define CM_TRACE_VERSION 2 /* 1: times in CLOCK_MONOTONIC ns */

/* The file's header; records follow until the end of the file. */
typedef struct {
    char     magic[8];
    uint32_t version;
    uint32_t rec_size;    /* sizeof(cm_trace_rec_t) */
    int32_t  rank;
    int32_t  nprocs;
    uint64_t pid;
    uint64_t page_size;
    uint64_t shared_base; /* the region's address: ALLOC offsets and fault pages against it */
    char     host[64];
    char     protocol[32];
    double   ns_per_tick; /* the counter's rate as calibrated (0: ticks are ns) */
} cm_trace_header_t;

extern int cm_trace_on;

/* Opens PREFIX.RANK.cmtrace for writing (an existing file is replaced); events up to
 * buffer_events per thread are kept in memory. Logs why it cannot. */
cm_status_t cm_trace_open(const char *prefix, int rank, int nprocs, size_t buffer_events,
                          size_t page_size, const void *shared_base, const char *protocol);
/* Writes every thread's buffer and closes the file; failed: the job is ending on an error
 * (the buffers are written all the same, without locks that a crashed thread may hold). */
void cm_trace_close(bool failed);

/* A thread's buffer. The record path is inline, through an initial-exec thread pointer: at a
 * few events per page fault, a call through the PLT and __tls_get_addr per event were most of
 * its cost. */
typedef struct {
    cm_trace_rec_t *rec;
    size_t          used;
    size_t          cap;
    uint16_t        tid;
} cm_trace_buf_t;
extern __thread cm_trace_buf_t *cm_trace_mine __attribute__((tls_model("initial-exec")));

void cm_trace_emit_slow(cm_trace_kind_t kind, uint64_t t, uint64_t dur, uint64_t obj, int peer,
                        uint32_t bytes, uint32_t seq);

static inline void cm_trace_emit(cm_trace_kind_t kind, uint64_t t, uint64_t dur, uint64_t obj,
                                 int peer, uint32_t bytes, uint32_t seq)
{
    cm_trace_buf_t *b = cm_trace_mine;
    cm_trace_rec_t *r;

    if (__builtin_expect(b == NULL || b->used == b->cap, 0)) {
        cm_trace_emit_slow(kind, t, dur, obj, peer, bytes, seq);
        return;
    }
    r        = &b->rec[b->used++];
    r->t     = t;
    r->dur   = dur;
    r->obj   = obj;
    r->bytes = bytes;
    r->seq   = seq;
    r->peer  = peer;
    r->kind  = (uint16_t)kind;
    r->tid   = b->tid;
}
/* A TICKS record: the trace's clock and CLOCK_MONOTONIC read together. */
void cm_trace_ticks(void);

/* The trace's clock: the statistics' ticks (the time-stamp counter, 10 ns to read against
 * clock_gettime's 25-30 here; CLOCK_MONOTONIC's nanoseconds where there is none). TICKS records
 * at open and close pair it with CLOCK_MONOTONIC; cm_trace converts. */
static inline uint64_t cm_trace_now(void)
{
    return cm_ticks();
}

/* The start of a span: 0 when off (a span that began while off is not recorded). */
static inline uint64_t cm_trace_begin(void)
{
    return __builtin_expect(cm_trace_on, 0) ? cm_trace_now() : 0;
}

static inline void cm_trace_end(cm_trace_kind_t kind, uint64_t t0, uint64_t obj, int peer,
                                uint32_t bytes)
{
    if (__builtin_expect(cm_trace_on, 0) && t0 != 0) {
        cm_trace_emit(kind, t0, cm_trace_now() - t0, obj, peer, bytes, 0);
    }
}

static inline void cm_trace_instant(cm_trace_kind_t kind, uint64_t obj, int peer, uint32_t bytes)
{
    if (__builtin_expect(cm_trace_on, 0)) {
        cm_trace_emit(kind, cm_trace_now(), 0, obj, peer, bytes, 0);
    }
}

#endif
