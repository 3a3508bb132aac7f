/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TreadMarks intervals and vector timestamps (Keleher's thesis, 2.2-2.3).
 *
 * An interval is the stretch of a process's execution between two
 * synchronization operations; it carries a vector timestamp and one write
 * notice per page modified in it. Interval x of process p happened before
 * interval y of q (x -> y) iff x != y and y's timestamp covers x: x.index <=
 * y.vt[p]. A process knows a prefix 1..vt[q] of each process q's intervals
 * (knowing an interval implies knowing everything that happened before it),
 * so the send_set for an acquirer with timestamp vt_a is, per q, the
 * intervals vt_a[q]+1 .. vt[q].
 *
 * The store below keeps the known intervals per process, with each write
 * notice's diff once created here or received. Pure bookkeeping: no
 * messages, no page protection (the protocol does those).
 */
#ifndef CM_TMK_INTERVAL_H
#define CM_TMK_INTERVAL_H

#include "cm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Processes a TreadMarks job may have (the same bound as the Cashmere directory's). */
#define CM_TMK_MAX_PROCS 64

typedef struct {
    uint32_t page;
    uint32_t diff_len;
    void     *diff; /* NULL: not created (if ours) or not received yet */
} cm_tmk_notice_t;

typedef struct {
    uint32_t        proc;
    uint32_t        index;    /* 1-based, per process */
    uint32_t        npages;
    uint32_t        *vt;      /* nprocs entries; vt[proc] == index */
    cm_tmk_notice_t *notices; /* npages entries */
} cm_tmk_interval_t;

typedef struct {
    int               nprocs;
    uint32_t          *vt;    /* per q: the last of q's intervals known here */
    uint32_t          *base;  /* per q: the first interval still stored (earlier ones collected) */
    uint32_t          *cap;
    cm_tmk_interval_t ***ivs; /* per q: ivs[q][index - base[q]] */
    size_t            bytes;  /* notices and diffs held: the garbage-collection trigger */
} cm_tmk_store_t;

/* a <= b in every component. */
bool cm_tmk_vt_leq(const uint32_t *a, const uint32_t *b, int nprocs);

/* x happened before y (hb1). */
bool cm_tmk_iv_precedes(const cm_tmk_interval_t *x, const cm_tmk_interval_t *y);

/* Sum of a timestamp: x -> y implies sum(x) < sum(y), so sorting by it is a happened-before order. */
uint64_t cm_tmk_vt_sum(const uint32_t *vt, int nprocs);

cm_status_t cm_tmk_store_init(cm_tmk_store_t *s, int nprocs);
void cm_tmk_store_fini(cm_tmk_store_t *s);

/* A new interval of proc with the given timestamp and pages (copied). */
cm_tmk_interval_t *cm_tmk_iv_new(int nprocs, uint32_t proc, const uint32_t *vt,
                                 const uint32_t *pages, uint32_t npages);
void cm_tmk_iv_free(cm_tmk_interval_t *iv);

/*
 * Adds iv (ownership passes to the store). Returns CM_OK and *added=true if it
 * was the next interval of its process; *added=false (iv freed) if already
 * known; CM_ERR_INVALID if it would leave a gap.
 */
cm_status_t cm_tmk_store_add(cm_tmk_store_t *s, cm_tmk_interval_t *iv, bool *added);

/* Interval index of proc, or NULL if not known or collected. */
cm_tmk_interval_t *cm_tmk_store_get(const cm_tmk_store_t *s, uint32_t proc, uint32_t index);

/* Records a diff for (proc, index, page): copied; an existing one is kept. */
cm_status_t cm_tmk_store_set_diff(cm_tmk_store_t *s, cm_tmk_interval_t *iv, uint32_t notice,
                                  const void *diff, uint32_t len);

/* Calls fn for every interval known here and not covered by vt_a, in per-process order. */
cm_status_t cm_tmk_store_send_set(const cm_tmk_store_t *s, const uint32_t *vt_a,
                                  cm_status_t (*fn)(const cm_tmk_interval_t *iv, void *arg),
                                  void *arg);

/* Drops every stored interval and diff (garbage collection); timestamps stay. */
void cm_tmk_store_collect(cm_tmk_store_t *s);

/*
 * Wire form of an interval (no diffs): proc, index, npages, vt[nprocs],
 * pages[npages], all uint32. pack returns the bytes written (out must hold
 * cm_tmk_iv_wire_size); unpack returns a new interval and the bytes consumed.
 */
size_t cm_tmk_iv_wire_size(const cm_tmk_interval_t *iv, int nprocs);
size_t cm_tmk_iv_pack(const cm_tmk_interval_t *iv, int nprocs, void *out);
cm_status_t cm_tmk_iv_unpack(const void *in, size_t len, int nprocs, cm_tmk_interval_t **iv,
                             size_t *used);

#endif
