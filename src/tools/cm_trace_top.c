/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_trace --top: a job's trace summed up for a terminal. Where each rank's application
 * thread spent its time (the statistics' phases, exclusive, and the rest: computing); the
 * requests followed through their messages (cm_trace_split.c); the locks that wait most, with
 * the page faults inside their holds; the pages faulted and fetched most, named by the
 * allocation they lie in.
 */
#include "config.h"
#include "src/tools/cm_trace_tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- where the time went ---------------------------------------------------------------- */

/* One rank's time by phase: charged[timer], the last slot outside every phase. */
typedef struct {
    uint64_t charged[CM_STATS_NTIMERS + 1], first, last;
} phase_sum_t;

static void charge(void *arg, int timer, uint64_t from, uint64_t to)
{
    phase_sum_t *ps = arg;

    if (ps->first == 0) {
        ps->first = from;
    }
    ps->charged[timer < 0 ? CM_STATS_NTIMERS : timer] += to - from;
    ps->last = to;
}

static void top_phases(FILE *out)
{
    fprintf(out, "where each rank's application thread spent its time (statistics' phases, exclusive):\n");
    for (int i = 0; i < cmt_nprocs; i++) {
        const cmt_proc_t *p = &cmt_procs[i];
        phase_sum_t ps = {{0}, 0, 0};
        uint64_t span;

        cmt_phase_walk(p, charge, &ps);
        span = ps.last - ps.first;
        fprintf(out, "  rank %d: %.3f ms traced; outside the protocol %.1f %%", p->h.rank,
                (double)span / 1e6,
                span ? 100.0 * (double)ps.charged[CM_STATS_NTIMERS] / (double)span : 0.0);
        for (int t = 0; t < CM_STATS_NTIMERS; t++) {
            if (span && ps.charged[t] * 1000 >= span) { /* 0.1 % or more */
                fprintf(out, ", %s %.1f %%", cmt_timer_names[t],
                        100.0 * (double)ps.charged[t] / (double)span);
            }
        }
        fputc('\n', out);
    }
}

/* ---- locks -------------------------------------------------------------------------------- */

void cmt_hold_faults(const cmt_proc_t *p, size_t k, cmt_rec_fn fn, void *arg)
{
    const cm_trace_rec_t *h = &p->rec[k];

    /* Recorded before the hold's own record (it is written at the release), after the grant:
     * back from it until a record that ended before the grant. */
    for (size_t j = k; j-- > 0;) {
        const cm_trace_rec_t *q = &p->rec[j];
        if (q->t + cmt_dur(q) < h->t && q->kind != CM_TRACE_PHASE_BEGIN &&
            q->kind != CM_TRACE_PHASE_END) {
            break;
        }
        if (q->tid == h->tid && q->t >= h->t &&
            (q->kind == CM_TRACE_FAULT_READ || q->kind == CM_TRACE_FAULT_WRITE)) {
            fn(arg, p, q);
        }
    }
}

static int cmp_wait(const void *a, const void *b)
{
    const cmt_lock_t *x = a, *y = b;
    return (x->wait < y->wait) ? 1 : (x->wait > y->wait) ? -1 : (x->lock > y->lock) - (x->lock < y->lock);
}

static cmt_lock_t *lock_row(cmt_lock_t **rows, size_t *n, size_t *cap, uint64_t lock)
{
    for (size_t i = 0; i < *n; i++) {
        if ((*rows)[i].lock == lock) {
            return &(*rows)[i];
        }
    }
    if (*n == *cap) {
        *cap  = *cap ? 2 * *cap : 64;
        *rows = cmt_realloc(*rows, *cap, sizeof(**rows));
    }
    memset(&(*rows)[*n], 0, sizeof(**rows));
    (*rows)[*n].lock = lock;
    return &(*rows)[(*n)++];
}

static void count_fault(void *arg, const cmt_proc_t *p, const cm_trace_rec_t *q)
{
    cmt_lock_t *row = arg;

    (void)p;
    row->faults++;
    row->fault_ns += q->dur;
}

size_t cmt_locks(cmt_lock_t **rows_p)
{
    cmt_lock_t *rows = NULL;
    size_t n = 0, cap = 0;

    for (int i = 0; i < cmt_nprocs; i++) {
        const cmt_proc_t *p = &cmt_procs[i];
        for (size_t k = 0; k < p->n; k++) {
            const cm_trace_rec_t *r = &p->rec[k];
            cmt_lock_t *row;
            if (r->kind != CM_TRACE_LOCK_WAIT && r->kind != CM_TRACE_LOCK_HOLD) {
                continue;
            }
            row = lock_row(&rows, &n, &cap, r->obj);
            if (r->kind == CM_TRACE_LOCK_WAIT) {
                row->acquires++;
                row->wait += r->dur;
                continue;
            }
            row->hold += r->dur;
            row->max_hold = (r->dur > row->max_hold) ? r->dur : row->max_hold;
            cmt_hold_faults(p, k, count_fault, row);
        }
    }
    if (n > 1) {
        qsort(rows, n, sizeof(*rows), cmp_wait);
    }
    *rows_p = rows;
    return n;
}

static void top_locks(FILE *out, int top)
{
    cmt_lock_t *rows;
    size_t n = cmt_locks(&rows);

    if (n == 0) {
        free(rows);
        return;
    }
    fprintf(out, "locks by time waited (of %zu locks):\n  %8s %10s %12s %10s %12s %10s %9s %12s\n", n,
            "lock", "acquires", "wait ms", "wait us/acq", "hold ms", "max hold us", "faults in", "their ms");
    for (size_t i = 0; i < n && (int)i < top; i++) {
        const cmt_lock_t *l = &rows[i];
        fprintf(out, "  %8" PRIu64 " %10" PRIu64 " %12.3f %10.2f %12.3f %10.2f %9" PRIu64 " %12.3f\n",
                l->lock, l->acquires, (double)l->wait / 1e6,
                (double)l->wait / (double)(l->acquires ? l->acquires : 1) / 1e3, (double)l->hold / 1e6,
                (double)l->max_hold / 1e3, l->faults, (double)l->fault_ns / 1e6);
    }
    free(rows);
}

/* ---- pages -------------------------------------------------------------------------------- */

typedef struct {
    uint64_t page, faults, fetches, bytes, writers; /* writers: a bit per rank (first 64) */
} page_row_t;

static int cmp_page(const void *a, const void *b)
{
    const page_row_t *x = a, *y = b;
    uint64_t u = x->faults + x->fetches, v = y->faults + y->fetches;
    return (u < v) ? 1 : (u > v) ? -1 : (x->page > y->page) - (x->page < y->page);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Where page p lies: the allocation (by any rank) that holds its first byte. */
static void page_owner(uint64_t p, char *buf, size_t len)
{
    for (int i = 0; i < cmt_nprocs; i++) {
        const cmt_proc_t *pr = &cmt_procs[i];
        for (size_t k = 0; k < pr->n; k++) {
            const cm_trace_rec_t *r = &pr->rec[k];
            uint64_t at = p * pr->h.page_size;
            if (r->kind == CM_TRACE_ALLOC && at + pr->h.page_size > r->obj && at < r->obj + r->bytes) {
                char who[600];
                cmt_symbol(pr, r->dur, who, sizeof(who));
                snprintf(buf, len, "block of %" PRIu32 " bytes at +0x%" PRIx64 ", offset %+" PRId64
                         ", from %s (rank %d)", r->bytes, r->obj, (int64_t)at - (int64_t)r->obj,
                         who, pr->h.rank);
                return;
            }
        }
    }
    snprintf(buf, len, "no allocation traced");
}

static void top_pages(FILE *out, int top)
{
    uint64_t *keys = NULL;
    size_t nk = 0, cap = 0, nrows = 0;
    page_row_t *rows;

    for (int i = 0; i < cmt_nprocs; i++) {
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            const cm_trace_rec_t *r = &cmt_procs[i].rec[k];
            if (r->kind == CM_TRACE_FAULT_READ || r->kind == CM_TRACE_FAULT_WRITE || r->kind == CM_TRACE_FETCH) {
                if (nk == cap) {
                    cap  = cap ? 2 * cap : 1024;
                    keys = cmt_realloc(keys, cap, sizeof(*keys));
                }
                keys[nk++] = r->obj;
            }
        }
    }
    if (nk == 0) {
        free(keys);
        return;
    }
    qsort(keys, nk, sizeof(*keys), cmp_u64);
    rows = cmt_zalloc(nk, sizeof(*rows));
    for (size_t i = 0; i < nk; i++) {
        if (i == 0 || keys[i] != keys[i - 1]) {
            rows[nrows++].page = keys[i];
        }
    }
    for (int i = 0; i < cmt_nprocs; i++) {
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            const cm_trace_rec_t *r = &cmt_procs[i].rec[k];
            page_row_t key = {.page = r->obj}, *row;
            if (r->kind != CM_TRACE_FAULT_READ && r->kind != CM_TRACE_FAULT_WRITE && r->kind != CM_TRACE_FETCH) {
                continue;
            }
            row = bsearch(&key, rows, nrows, sizeof(*rows), cmp_u64); /* page is the first member */
            if (r->kind == CM_TRACE_FETCH) {
                row->fetches++;
                row->bytes += r->bytes;
            } else {
                row->faults++;
                if (r->kind == CM_TRACE_FAULT_WRITE && i < 64) {
                    row->writers |= 1ull << i;
                }
            }
        }
    }
    qsort(rows, nrows, sizeof(*rows), cmp_page);
    fprintf(out, "pages by faults and fetches (of %zu pages):\n  %8s %8s %8s %10s %8s  %s\n", nrows,
            "page", "faults", "fetches", "KB got", "writers", "where");
    for (size_t i = 0; i < nrows && (int)i < top; i++) {
        char where[1024];
        page_owner(rows[i].page, where, sizeof(where));
        fprintf(out, "  %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %10.1f %8d  %s\n", rows[i].page,
                rows[i].faults, rows[i].fetches, (double)rows[i].bytes / 1e3,
                __builtin_popcountll(rows[i].writers), where);
    }
    free(rows);
    free(keys);
}

void cmt_top(FILE *out, int top)
{
    top_phases(out);
    cmt_top_splits(out);
    top_locks(out, top);
    top_pages(out, top);
}
