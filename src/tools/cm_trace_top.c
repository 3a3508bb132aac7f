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

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}


void cmt_hold_faults(const cmt_proc_t *p, size_t k, cmt_rec_fn fn, void *arg)
{
    const cm_trace_rec_t *h = &p->rec[k];

    /* Recorded before the hold's own record (it is written at the release), after the grant:
     * back from it until a record that ended before the grant. */
    for (size_t j = k; j-- > 0;) {
        const cm_trace_rec_t *q = &p->rec[j];
        if (q->t + cmt_dur(q) < h->t && !cmt_is_phase(q)) {
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

static void count_fault(void *arg, const cmt_proc_t *p, const cm_trace_rec_t *q)
{
    cmt_lock_t *row = arg;

    (void)p;
    row->faults++;
    row->fault_ns += q->dur;
}

static bool is_lock_rec(const cm_trace_rec_t *r)
{
    return r->kind == CM_TRACE_LOCK_WAIT || r->kind == CM_TRACE_LOCK_HOLD;
}

size_t cmt_locks(cmt_lock_t **rows_p)
{
    cmt_lock_t *rows;
    size_t n = 0, cap = 0, nk = 0;
    uint64_t *keys = NULL;

    /* The locks taken, each once, by number: a row each, found by bsearch (a scan of the rows
     * per record was most of --top's time on BARNES's 3,000 locks). */
    for (int i = 0; i < cmt_nprocs; i++) {
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            if (is_lock_rec(&cmt_procs[i].rec[k])) {
                if (nk == cap) {
                    cap  = cap ? 2 * cap : 1024;
                    keys = cmt_realloc(keys, cap, sizeof(*keys));
                }
                keys[nk++] = cmt_procs[i].rec[k].obj;
            }
        }
    }
    if (nk > 1) {
        qsort(keys, nk, sizeof(*keys), cmp_u64);
    }
    rows = cmt_zalloc(nk, sizeof(*rows));
    for (size_t i = 0; i < nk; i++) {
        if (i == 0 || keys[i] != keys[i - 1]) {
            rows[n++].lock = keys[i];
        }
    }
    free(keys);
    for (int i = 0; i < cmt_nprocs; i++) {
        const cmt_proc_t *p = &cmt_procs[i];
        for (size_t k = 0; k < p->n; k++) {
            const cm_trace_rec_t *r = &p->rec[k];
            cmt_lock_t key = {.lock = r->obj}, *row;
            if (!is_lock_rec(r)) {
                continue;
            }
            row = bsearch(&key, rows, n, sizeof(*rows), cmp_u64); /* lock is the first member */
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

/* Where lock was made: the program's call that initialized it (PARMACS LOCKINIT; of a loop's
 * locks, ALOCKINIT's, the index among those of the same call), as the first rank that traced it
 * says; "" where none did (a lock of the cm.h interface is the number the program chose). */
void cmt_lock_name(uint64_t lock, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < cmt_nprocs; i++) {
        const cmt_proc_t *p = &cmt_procs[i];
        const cm_trace_rec_t *made = NULL;
        uint64_t index = 0, same = 0;
        for (size_t k = 0; k < p->n; k++) {
            const cm_trace_rec_t *r = &p->rec[k];
            if (r->kind == CM_TRACE_LOCK_NEW && r->obj == lock && made == NULL) {
                made = r;
            }
        }
        if (made == NULL) {
            continue;
        }
        for (size_t k = 0; k < p->n; k++) {
            const cm_trace_rec_t *r = &p->rec[k];
            if (r->kind == CM_TRACE_LOCK_NEW && r->dur == made->dur) {
                same++;
                index += (r->obj < lock);
            }
        }
        char who[600];
        cmt_symbol(p, made->dur, who, sizeof(who));
        if (same > 1) {
            snprintf(buf, len, "from %s [%" PRIu64 "]", who, index);
        } else {
            snprintf(buf, len, "from %s", who);
        }
        return;
    }
}

static void hold_pages(FILE *out, const cmt_lock_t *rows, size_t n);

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
        char where[700];
        cmt_lock_name(l->lock, where, sizeof(where));
        fprintf(out, "  %8" PRIu64 " %10" PRIu64 " %12.3f %10.2f %12.3f %10.2f %9" PRIu64 " %12.3f  %s\n",
                l->lock, l->acquires, (double)l->wait / 1e6,
                (double)l->wait / (double)(l->acquires ? l->acquires : 1) / 1e3, (double)l->hold / 1e6,
                (double)l->max_hold / 1e3, l->faults, (double)l->fault_ns / 1e6, where);
    }
    hold_pages(out, rows, (n < 3) ? n : 3);
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

/* The job's allocations, each once (every process traces those made before CREATE), by
 * offset; the rank whose trace named it first. */
typedef struct {
    uint64_t off, bytes, caller, faults, fetches, pages, shared_pages;
    const cmt_proc_t *p;
} alloc_row_t;

static alloc_row_t *allocs;
static size_t nallocs;

static int cmp_alloc(const void *a, const void *b)
{
    const alloc_row_t *x = a, *y = b;
    return (x->off > y->off) - (x->off < y->off) ?: (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

static void collect_allocs(void)
{
    size_t cap = 0, n = 0;

    free(allocs); /* a report before (the fuzzer's) */
    allocs  = NULL;
    nallocs = 0;
    for (int i = 0; i < cmt_nprocs; i++) {
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            const cm_trace_rec_t *r = &cmt_procs[i].rec[k];
            if (r->kind != CM_TRACE_ALLOC || r->bytes == 0) {
                continue;
            }
            if (nallocs == cap) {
                cap    = cap ? 2 * cap : 256;
                allocs = cmt_realloc(allocs, cap, sizeof(*allocs));
            }
            allocs[nallocs++] = (alloc_row_t){.off = r->obj, .bytes = r->bytes, .caller = r->dur,
                                              .p = &cmt_procs[i]};
        }
    }
    if (nallocs > 1) {
        qsort(allocs, nallocs, sizeof(*allocs), cmp_alloc); /* stable enough: ranks alike */
    }
    for (size_t i = 0; i < nallocs; i++) {
        if (n == 0 || allocs[i].off != allocs[n - 1].off || allocs[i].bytes != allocs[n - 1].bytes) {
            allocs[n++] = allocs[i];
        }
    }
    nallocs = n;
}

/* The first allocation that page p (of size ps) overlaps, by binary search: those before it
 * end below the page unless they are larger than the gap (scanned back a little). */
static size_t first_alloc_in(uint64_t p, uint64_t ps)
{
    uint64_t at = p * ps;
    size_t lo = 0, hi = nallocs;

    while (lo < hi) { /* the first allocation starting at or after the page's end */
        size_t mid = lo + (hi - lo) / 2;
        if (allocs[mid].off < at + ps) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    while (lo > 0 && allocs[lo - 1].off + allocs[lo - 1].bytes > at) {
        lo--;
    }
    while (lo < nallocs && allocs[lo].off + allocs[lo].bytes <= at) {
        lo++;
    }
    return lo;
}

static bool alloc_in(size_t i, uint64_t p, uint64_t ps)
{
    return i < nallocs && allocs[i].off < (p + 1) * ps && allocs[i].off + allocs[i].bytes > p * ps;
}

static void alloc_name(const alloc_row_t *a, char *buf, size_t len)
{
    char who[600];

    cmt_symbol(a->p, a->caller, who, sizeof(who));
    snprintf(buf, len, "block of %" PRIu64 " bytes at +0x%" PRIx64 " from %s", a->bytes, a->off,
             who);
}

/* Where page p lies: the allocations it holds, the first with the page's offset in it. */
static void page_owner(uint64_t p, uint64_t ps, char *buf, size_t len)
{
    size_t i = first_alloc_in(p, ps), more = 0;
    char name[700];

    if (!alloc_in(i, p, ps)) {
        snprintf(buf, len, "no allocation traced");
        return;
    }
    alloc_name(&allocs[i], name, sizeof(name));
    snprintf(buf, len, "%s, offset %+" PRId64, name, (int64_t)(p * ps) - (int64_t)allocs[i].off);
    while (alloc_in(i + 1 + more, p, ps)) {
        more++;
    }
    if (more > 0) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, ", and %zu more block%s", more, more > 1 ? "s" : "");
    }
}

/* The pages faulted on inside the holds of each of the first n locks, the 3 most faulted. */
typedef struct {
    uint64_t *page;
    size_t   n, cap;
} pages_t;

static void add_page(void *arg, const cmt_proc_t *p, const cm_trace_rec_t *r)
{
    pages_t *pg = arg;

    (void)p;
    if (pg->n == pg->cap) {
        pg->cap  = pg->cap ? 2 * pg->cap : 256;
        pg->page = cmt_realloc(pg->page, pg->cap, sizeof(*pg->page));
    }
    pg->page[pg->n++] = r->obj;
}

static void hold_pages(FILE *out, const cmt_lock_t *rows, size_t n)
{
    uint64_t ps = cmt_page_size(&cmt_procs[0]);

    for (size_t l = 0; l < n; l++) {
        pages_t pg = {NULL, 0, 0};
        uint64_t best[3] = {0}, count[3] = {0};
        for (int i = 0; i < cmt_nprocs; i++) {
            const cmt_proc_t *p = &cmt_procs[i];
            for (size_t k = 0; k < p->n; k++) {
                if (p->rec[k].kind == CM_TRACE_LOCK_HOLD && p->rec[k].obj == rows[l].lock) {
                    cmt_hold_faults(p, k, add_page, &pg);
                }
            }
        }
        if (pg.n == 0) {
            free(pg.page);
            continue;
        }
        qsort(pg.page, pg.n, sizeof(*pg.page), cmp_u64);
        for (size_t i = 0, j; i < pg.n; i = j) { /* runs of one page: the three longest */
            for (j = i; j < pg.n && pg.page[j] == pg.page[i]; j++) {
            }
            for (int b = 0; b < 3; b++) {
                if (j - i > count[b]) {
                    for (int c = 2; c > b; c--) {
                        count[c] = count[c - 1];
                        best[c]  = best[c - 1];
                    }
                    count[b] = j - i;
                    best[b]  = pg.page[i];
                    break;
                }
            }
        }
        fprintf(out, "  faults inside lock %" PRIu64 "'s holds, %zu, most on:\n", rows[l].lock, pg.n);
        for (int b = 0; b < 3 && count[b] > 0; b++) {
            char where[1024];
            page_owner(best[b], ps, where, sizeof(where));
            fprintf(out, "    page %" PRIu64 ": %" PRIu64 " (%s)\n", best[b], count[b], where);
        }
        free(pg.page);
    }
}

static int cmp_shared(const void *a, const void *b)
{
    const alloc_row_t *x = a, *y = b;
    uint64_t u = x->faults + x->fetches, v = y->faults + y->fetches;
    return (u < v) ? 1 : (u > v) ? -1 : (x->off > y->off) - (x->off < y->off);
}

/* The pages that more than one rank wrote, summed, and by the allocations they hold: where
 * the writers share a page but not the data (each writes its own part, as LU's non-contiguous
 * blocks), the sharing is false, and the allocation is what to pad or lay out again. */
static void top_shared(FILE *out, const page_row_t *rows, size_t nrows, uint64_t ps, int top)
{
    uint64_t f = 0, g = 0, sf = 0, sg = 0, spages = 0;
    size_t nshown = 0;

    for (size_t i = 0; i < nrows; i++) {
        bool shared = __builtin_popcountll(rows[i].writers) > 1;
        f += rows[i].faults;
        g += rows[i].fetches;
        if (!shared) {
            continue;
        }
        spages++;
        sf += rows[i].faults;
        sg += rows[i].fetches;
        for (size_t a = first_alloc_in(rows[i].page, ps); alloc_in(a, rows[i].page, ps); a++) {
            allocs[a].faults += rows[i].faults;
            allocs[a].fetches += rows[i].fetches;
            allocs[a].shared_pages++;
        }
    }
    fprintf(out, "pages written by more than one rank: %" PRIu64 " of %zu (%.1f %% of the faults, "
            "%.1f %% of the fetches)\n", spages, nrows, f ? 100.0 * (double)sf / (double)f : 0.0,
            g ? 100.0 * (double)sg / (double)g : 0.0);
    if (spages == 0) {
        return;
    }
    for (size_t a = 0; a < nallocs; a++) {
        allocs[a].pages = (allocs[a].off + allocs[a].bytes + ps - 1) / ps - allocs[a].off / ps;
    }
    qsort(allocs, nallocs, sizeof(*allocs), cmp_shared);
    fprintf(out, "  allocations by the faults and fetches on those pages:\n  %8s %8s %8s %8s  %s\n",
            "faults", "fetches", "pages", "of", "allocation");
    for (size_t a = 0; a < nallocs && (int)nshown < top && allocs[a].shared_pages > 0; a++, nshown++) {
        char name[700];
        alloc_name(&allocs[a], name, sizeof(name));
        fprintf(out, "  %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 "  %s (rank %d)\n",
                allocs[a].faults, allocs[a].fetches, allocs[a].shared_pages, allocs[a].pages, name,
                allocs[a].p->h.rank);
    }
}

static void top_pages(FILE *out, int top)
{
    uint64_t *keys = NULL;
    size_t nk = 0, cap = 0, nrows = 0;
    page_row_t *rows;
    uint64_t page_size = cmt_page_size(&cmt_procs[0]);

    for (int i = 0; i < cmt_nprocs; i++) {
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            const cm_trace_rec_t *r = &cmt_procs[i].rec[k];
            if ((r->kind == CM_TRACE_FAULT_READ || r->kind == CM_TRACE_FAULT_WRITE ||
                 r->kind == CM_TRACE_FETCH) && cmt_in_region(&cmt_procs[i], r)) {
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
            bool counted = r->kind == CM_TRACE_FAULT_READ || r->kind == CM_TRACE_FAULT_WRITE ||
                           r->kind == CM_TRACE_FETCH;
            bool wrote = r->kind == CM_TRACE_FAULT_WRITE || r->kind == CM_TRACE_DIFF_OUT ||
                         (r->kind == CM_TRACE_DIR_UPDATE && r->seq == 2);
            if ((!counted && !wrote) || !cmt_in_region(&cmt_procs[i], r)) {
                continue; /* the program's initialization aside (every process runs it) */
            }
            row = bsearch(&key, rows, nrows, sizeof(*rows), cmp_u64); /* page is the first member */
            if (row == NULL) {
                continue; /* written, never faulted on nor fetched */
            }
            /* A writer: a write fault (TreadMarks, hardware doubling), or, where stores are
             * caught by checks and not faults, the directory's write (Cashmere) or a diff (two
             * levels). Not a write notice: a reader posts one to a page's exclusive holder. */
            if (wrote && i < 64) {
                row->writers |= 1ull << i;
            }
            if (!counted) {
                continue;
            }
            if (r->kind == CM_TRACE_FETCH) {
                row->fetches++;
                row->bytes += r->bytes;
            } else {
                row->faults++;
            }
        }
    }
    qsort(rows, nrows, sizeof(*rows), cmp_page);
    bool region = false;
    for (int i = 0; i < cmt_nprocs; i++) {
        region |= cmt_procs[i].region_from > 0 || cmt_procs[i].region_to < UINT64_MAX;
    }
    fprintf(out, "pages by faults and fetches (of %zu pages%s):\n  %8s %8s %8s %10s %8s  %s\n", nrows,
            region ? ", in the statistics' interval: cm_stats_reset to cm_stats_stop" : "",
            "page", "faults", "fetches", "KB got", "writers", "where");
    for (size_t i = 0; i < nrows && (int)i < top; i++) {
        char where[1024];
        page_owner(rows[i].page, page_size, where, sizeof(where));
        fprintf(out, "  %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %10.1f %8d  %s\n", rows[i].page,
                rows[i].faults, rows[i].fetches, (double)rows[i].bytes / 1e3,
                __builtin_popcountll(rows[i].writers), where);
    }
    top_shared(out, rows, nrows, page_size, top);
    free(rows);
    free(keys);
}

void cmt_top(FILE *out, int top)
{
    collect_allocs();
    top_phases(out);
    cmt_top_splits(out);
    cmt_top_barriers(out, top);
    top_locks(out, top);
    top_pages(out, top);
}
