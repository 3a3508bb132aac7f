/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_trace's parts: reading a job's traces onto one clock (cm_trace_read.c), the JSON and CSV
 * (cm_trace.c), the terminal report (cm_trace_top.c).
 */
#ifndef CM_TRACE_TOOL_H
#define CM_TRACE_TOOL_H

#include "util/cm_stats.h"
#include "util/cm_trace.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    char              *path;
    cm_trace_header_t h;
    cm_trace_rec_t    *rec;
    size_t            n;
    /* The clock: offset to rank 0 at two moments of this process's clock. */
    int               nclock;
    uint64_t          at[2];
    int64_t           off[2];
    uint64_t          err[2];
    /* Its loaded objects (PREFIX.RANK.objects), by load address: to name callers. */
    struct cmt_object {
        uint64_t base;
        char     *path;
    } *obj;
    int               nobj;
    /* The statistics' interval (cm_stats_reset's last begin to the last end after it), on
     * its own clock; the whole trace where the program marked none. */
    uint64_t          region_from, region_to;
} cmt_proc_t;

static inline bool cmt_in_region(const cmt_proc_t *p, const cm_trace_rec_t *r)
{
    return r->t >= p->region_from && r->t <= p->region_to;
}

/* The messages each rank sent each other, by their number (seq - 1): for the flows. */
typedef struct {
    const cm_trace_rec_t **rec;
    size_t               n;
} cmt_sends_t;

/* The records that are no event: the clock's measurements. */
static inline bool cmt_is_meta(const cm_trace_rec_t *r)
{
    return r->kind == CM_TRACE_CLOCK || r->kind == CM_TRACE_TICKS;
}

/* The page size p's header says (4096 where a damaged header says 0). */
static inline uint64_t cmt_page_size(const cmt_proc_t *p)
{
    return p->h.page_size ? p->h.page_size : 4096;
}

/* A statistics phase's record: its begin, its end, or both in one (a phase with none inside). */
static inline bool cmt_is_phase(const cm_trace_rec_t *r)
{
    return r->kind == CM_TRACE_PHASE_BEGIN || r->kind == CM_TRACE_PHASE_END ||
           r->kind == CM_TRACE_PHASE;
}

/* A record's duration: 0 for the kinds whose dur holds something else (a clock's error bound,
 * an allocation's caller). */
static inline uint64_t cmt_dur(const cm_trace_rec_t *r)
{
    return (r->kind == CM_TRACE_CLOCK || r->kind == CM_TRACE_ALLOC || r->kind == CM_TRACE_TICKS ||
            r->kind == CM_TRACE_LOCK_NEW) ? 0 : r->dur;
}

extern cmt_proc_t *cmt_procs; /* by rank */
extern int cmt_nprocs;
extern uint64_t cmt_origin;   /* the job's first event, on rank 0's clock */
extern const char *const cmt_kind_names[];
extern const char *const cmt_timer_names[];

void cmt_die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
/* One rank's trace file, len bytes at data, into *p (its header checked, its clock records
 * found); a file cut in a record keeps its whole records. Else why, in err. */
cm_status_t cmt_parse(cmt_proc_t *p, const void *data, size_t len, char *err, size_t errlen);
/* Reads PREFIX.RANK.cmtrace of every rank (dies saying why where it cannot). */
void cmt_read(const char *prefix);
/* t (p's clock) on rank 0's, in ns, and in us since the job's first event. */
uint64_t cmt_global_ns(const cmt_proc_t *p, uint64_t t);
double cmt_us(const cmt_proc_t *p, uint64_t t);
/* TreadMarks's message type (the low byte of a message record's obj) by name. */
const char *cmt_msg_name(uint64_t obj);
/* After cmt_read: the send a message served at p came from, or NULL. */
void cmt_index_sends(void);
void cmt_free_sends(void);
const cm_trace_rec_t *cmt_send_of(const cmt_proc_t *p, const cm_trace_rec_t *r);
/* The function and source line of the call that return address addr of p comes back to
 * ("main at water.c:368"), by addr2line (binutils) on its object; "0x..." where that cannot be
 * had (no addr2line, no debugging information, the object gone). */
void cmt_symbol(const cmt_proc_t *p, uint64_t addr, char *buf, size_t len);
/* realloc (p NULL: malloc) and calloc of n things of size bytes that die, saying so, where
 * there is no memory or n * size overflows. Only cmt_zalloc's bytes are zeroed. */
void *cmt_realloc(void *p, size_t n, size_t size);
void *cmt_zalloc(size_t n, size_t size);

/* The stretches of p's application thread between consecutive phase events: fn(arg, timer,
 * from, to) with the innermost phase open over it (-1: none), times on p's clock in ns. */
typedef void (*cmt_stretch_fn)(void *arg, int timer, uint64_t from, uint64_t to);
void cmt_phase_walk(const cmt_proc_t *p, cmt_stretch_fn fn, void *arg);

/* The lanes a rank's time is drawn and summed in (--timeline, the barriers of --top): each
 * statistics timer's, -1 (no phase) computing. */
enum { LANE_COMPUTE, LANE_FAULT, LANE_LOCK, LANE_BARRIER, LANE_SYNC, LANE_SERVE, NLANES };
extern const char *const cmt_lane_name[NLANES];

static inline int cmt_lane_of(int timer)
{
    switch (timer) {
    case -1:
        return LANE_COMPUTE;
    case CM_STATS_T_fault_ns: case CM_STATS_T_page_copy_ns: case CM_STATS_T_data_wait_ns:
    case CM_STATS_T_line_fill_ns:
        return LANE_FAULT;
    case CM_STATS_T_lock_wait_ns:
        return LANE_LOCK;
    case CM_STATS_T_barrier_ns:
        return LANE_BARRIER;
    case CM_STATS_T_handler_ns:
        return LANE_SERVE;
    default:
        return LANE_SYNC;
    }
}

/* Each lock's acquires, time waited and held, and the page faults inside its holds, longest
 * waited first (cm_trace_top.c); the array is the caller's to free. */
typedef struct {
    uint64_t lock, acquires, wait, hold, max_hold, faults, fault_ns;
} cmt_lock_t;
size_t cmt_locks(cmt_lock_t **rows);
/* "from FUNCTION at FILE:LINE [INDEX]": the program's call that initialized lock; "" if none. */
void cmt_lock_name(uint64_t lock, char *buf, size_t len);
/* The page faults of the thread of hold record k of p taken inside that hold. */
typedef void (*cmt_rec_fn)(void *arg, const cmt_proc_t *p, const cm_trace_rec_t *r);
void cmt_hold_faults(const cmt_proc_t *p, size_t k, cmt_rec_fn fn, void *arg);

/* --top's barriers: what their time is made of (cm_trace_barrier.c). */
void cmt_top_barriers(FILE *out, int top);
/* --top's requests followed through their messages (cm_trace_split.c). */
void cmt_top_splits(FILE *out);
/* The terminal report (--top): the n largest of each table. */
void cmt_top(FILE *out, int n);
/* The pictures' window, ms since the job's first event on rank 0's clock (--window FROM:TO);
 * cmt_win_to 0: the whole run. */
extern double cmt_win_from, cmt_win_to;
/* --zoom MS: each lock's picture over the MS ms whose waits (by their start) wait longest. */
extern double cmt_zoom_ms;
/* BASE.png and BASE.svg: lanes of each rank's time (gnuplot; BASE.dat and BASE.gp kept). */
void cmt_timeline(const char *base);
/* BASE-lockN.png and .svg for each of the nlocks locks waited for longest: waits, holds and
 * the faults inside them, a row per rank. */
void cmt_lock_timeline(const char *base, int nlocks);

#endif
