/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_trace --top's requests followed through their messages (the monitoring seed's breakdowns):
 * Cashmere's and two levels' page fetches as one-sided gets; TreadMarks's page fetches from
 * each reply back to its request, and its lock acquires from the grant taken back to the
 * request, each split into the segments either side can time, for the job and per rank.
 */
#include "config.h"
#include "src/tools/cm_trace_tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- page fetches ----------------------------------------------------------------------- */

/* Requests followed through their segments: how many, each segment's sum (ns). */
typedef struct {
    uint64_t n, sum[6];
} split_t;

/* The job's line (label, then each segment's mean), then a line per requesting rank. */
static void print_split(FILE *out, const char *label, const split_t *per_rank,
                        const char *const *seg, int nseg)
{
    split_t all = {0};
    uint64_t total = 0;

    for (int i = 0; i < cmt_nprocs; i++) {
        all.n += per_rank[i].n;
        for (int s = 0; s < nseg; s++) {
            all.sum[s] += per_rank[i].sum[s];
        }
    }
    if (all.n == 0) {
        return;
    }
    for (int s = 0; s < nseg; s++) {
        total += all.sum[s];
    }
    fprintf(out, "%s, %.2f us on average:", label, (double)total / (double)all.n / 1e3);
    for (int s = 0; s < nseg; s++) {
        fprintf(out, "%s %s %.2f us", s ? "," : "", seg[s], (double)all.sum[s] / (double)all.n / 1e3);
    }
    fputc('\n', out);
    for (int i = 0; i < cmt_nprocs && cmt_nprocs > 1; i++) {
        const split_t *r = &per_rank[i];
        if (r->n == 0) {
            continue;
        }
        fprintf(out, "  rank %d: %" PRIu64 ",", cmt_procs[i].h.rank, r->n);
        for (int s = 0; s < nseg; s++) {
            fprintf(out, " %.2f", (double)r->sum[s] / (double)r->n / 1e3);
        }
        fputs(" us\n", out);
    }
}

/* A served message's arrival at its target: when it was queued, else when its handler began
 * (the queued record, if any, comes just before its serve record in the same thread). */
static uint64_t arrival(const cmt_proc_t *p, size_t k)
{
    const cm_trace_rec_t *r = &p->rec[k];

    for (size_t j = k; j-- > 0 && k - j < 8;) {
        const cm_trace_rec_t *q = &p->rec[j];
        if (q->kind == CM_TRACE_MSG_QUEUE && q->tid == r->tid && q->peer == r->peer &&
            q->seq == r->seq) {
            return cmt_global_ns(p, q->t);
        }
    }
    return cmt_global_ns(p, r->t);
}

/* TreadMarks: each page reply served at its requester, back to its request. */
static void tmk_fetches(split_t *per_rank)
{
    for (int i = 0; i < cmt_nprocs; i++) {
        const cmt_proc_t *a = &cmt_procs[i];
        for (size_t k = 0; k < a->n; k++) {
            const cm_trace_rec_t *got = &a->rec[k], *rep, *req = NULL;
            const cmt_proc_t *b;
            size_t kb = 0;
            if (got->kind != CM_TRACE_MSG_SERVE || strcmp(cmt_msg_name(got->obj), "page reply") != 0 ||
                (rep = cmt_send_of(a, got)) == NULL) {
                continue;
            }
            b = &cmt_procs[got->peer];
            /* The request's service at b: the serve record that holds the reply's send. */
            for (size_t j = (size_t)(rep - b->rec); j < b->n && j < (size_t)(rep - b->rec) + 8; j++) {
                const cm_trace_rec_t *s = &b->rec[j];
                if (s->kind == CM_TRACE_MSG_SERVE && s->tid == rep->tid && s->peer == a->h.rank &&
                    strcmp(cmt_msg_name(s->obj), "page request") == 0 && s->t <= rep->t) {
                    req = s;
                    kb  = j;
                    break;
                }
            }
            if (req == NULL || cmt_send_of(b, req) == NULL) {
                continue;
            }
            {
                uint64_t t_req = cmt_global_ns(a, cmt_send_of(b, req)->t);
                uint64_t at_b = arrival(b, kb), srv = cmt_global_ns(b, req->t);
                uint64_t t_rep = cmt_global_ns(b, rep->t), at_a = arrival(a, k);
                uint64_t seen = cmt_global_ns(a, got->t);
                int64_t seg[5] = {(int64_t)(at_b - t_req), (int64_t)(srv - at_b),
                                  (int64_t)req->dur, (int64_t)(at_a - t_rep), (int64_t)(seen - at_a)};
                per_rank[a->h.rank].n++;
                for (int s = 0; s < 5; s++) {
                    per_rank[a->h.rank].sum[s] += (uint64_t)(seg[s] > 0 ? seg[s] : 0);
                }
            }
        }
    }
}

static void top_fetches(FILE *out)
{
    uint64_t n = 0, sum = 0, fetches = 0;
    split_t *per_rank = cmt_zalloc((size_t)cmt_nprocs, sizeof(*per_rank));
    char label[128];

    for (int i = 0; i < cmt_nprocs; i++) {
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            const cm_trace_rec_t *r = &cmt_procs[i].rec[k];
            if (r->kind == CM_TRACE_FETCH) {
                n++;
                sum += r->dur;
            }
        }
    }
    if (n != 0) {
        fprintf(out, "page fetches (one-sided gets from the home): %" PRIu64 ", %.2f us on average "
                "(an early copy's wait only; refetches and prefetches count 0)\n", n,
                (double)sum / (double)n / 1e3);
    }
    tmk_fetches(per_rank);
    for (int i = 0; i < cmt_nprocs; i++) {
        fetches += per_rank[i].n;
    }
    {
        static const char *const seg[5] = {"request on the wire", "queued at the target",
                                           "served", "reply on the wire", "queued at the requester"};
        snprintf(label, sizeof(label), "TreadMarks page fetches: %" PRIu64 " from request to the "
                 "reply's handler", fetches);
        print_split(out, label, per_rank, seg, 5);
    }
    free(per_rank);
}

/* ---- TreadMarks's lock acquires, in segments ---------------------------------------------- */

/* Every served message of one type about one object at one rank, by time: the lookups that
 * follow an acquire back through its messages. Open addressing on (rank, type, about). */
typedef struct {
    uint64_t              key; /* rank << 48 | type << 40 | about (0: empty) */
    const cm_trace_rec_t **rec;
    size_t               n, cap;
} serves_t;

static serves_t *served;
static size_t nserved_slots;

static uint64_t serve_key(int rank, const cm_trace_rec_t *r)
{
    return ((uint64_t)(rank + 1) << 48) | ((r->obj & 0xff) << 40) | ((r->obj >> 8) & 0xffffffffffull);
}

static serves_t *serves_at(uint64_t key, bool add)
{
    size_t h = (size_t)(key * 0x9e3779b97f4a7c15ull) & (nserved_slots - 1);

    for (;; h = (h + 1) & (nserved_slots - 1)) {
        if (served[h].key == key) {
            return &served[h];
        }
        if (served[h].key == 0) {
            if (!add) {
                return NULL;
            }
            served[h].key = key;
            return &served[h];
        }
    }
}

static int cmp_rec_t(const void *a, const void *b)
{
    const cm_trace_rec_t *x = *(const cm_trace_rec_t *const *)a, *y = *(const cm_trace_rec_t *const *)b;
    return (x->t > y->t) - (x->t < y->t);
}

static void index_serves(void)
{
    size_t total = 0;

    for (int i = 0; i < cmt_nprocs; i++) {
        total += cmt_procs[i].n;
    }
    for (nserved_slots = 64; nserved_slots < 2 * total; nserved_slots *= 2) {
    }
    served = cmt_zalloc(nserved_slots, sizeof(*served));
    for (int i = 0; i < cmt_nprocs; i++) {
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            const cm_trace_rec_t *r = &cmt_procs[i].rec[k];
            serves_t *s;
            if (r->kind != CM_TRACE_MSG_SERVE) {
                continue;
            }
            s = serves_at(serve_key(i, r), true);
            if (s->n == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 4;
                s->rec = cmt_realloc(s->rec, s->cap, sizeof(*s->rec));
            }
            s->rec[s->n++] = r;
        }
    }
    for (size_t h = 0; h < nserved_slots; h++) {
        if (served[h].n > 1) {
            qsort(served[h].rec, served[h].n, sizeof(*served[h].rec), cmp_rec_t);
        }
    }
}

static void free_serves(void)
{
    for (size_t h = 0; h < nserved_slots; h++) {
        free(served[h].rec);
    }
    free(served);
    served = NULL;
}

/* The latest message of type `type` about `about` served at rank `rank` (from `from`, or
 * anyone for -1) that began at or before t (rank's own clock), or NULL. */
static const cm_trace_rec_t *served_before(int rank, unsigned type, uint64_t about, int from,
                                           uint64_t t)
{
    cm_trace_rec_t probe = {.obj = (about << 8) | type};
    const serves_t *s = serves_at(serve_key(rank, &probe), false);
    size_t lo = 0, hi;

    if (s == NULL) {
        return NULL;
    }
    hi = s->n;
    while (lo < hi) { /* the first that began after t */
        size_t mid = (lo + hi) / 2;
        if (s->rec[mid]->t <= t) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    while (lo-- > 0) {
        if (from < 0 || s->rec[lo]->peer == from) {
            return s->rec[lo];
        }
    }
    return NULL;
}

/* Where in its record array r lies (r is one of p's). */
static size_t index_of(const cmt_proc_t *p, const cm_trace_rec_t *r)
{
    return (size_t)(r - p->rec);
}

enum { LS_REQ_WIRE, LS_MANAGER, LS_FWD_WIRE, LS_HOLDER, LS_GRANT_WIRE, LS_REQUESTER, LS_N };

/* TreadMarks: each acquire that took messages, from its grant back to its request: the
 * manager (lock % ranks) forwards the request to the last requester, whose release grants. */
static void top_tmk_locks(FILE *out)
{
    static const char *const seg[LS_N] = {"request on the wire", "at the manager",
                                          "forward on the wire", "at the last holder",
                                          "grant on the wire", "at the requester"};
    uint64_t n = 0, local = 0, unresolved = 0;
    split_t *per_rank = cmt_zalloc((size_t)cmt_nprocs, sizeof(*per_rank));
    char label[192];

    index_serves();
    for (int a = 0; a < cmt_nprocs; a++) {
        const cmt_proc_t *pa = &cmt_procs[a];
        for (size_t k = 0; k < pa->n; k++) {
            const cm_trace_rec_t *w = &pa->rec[k], *grant, *gsend, *fwd, *fsend, *req, *rsend;
            const cmt_proc_t *ph, *pm;
            int m;
            uint64_t t_r, at_m, t_f, at_h, t_g, at_a, t_end;
            if (w->kind != CM_TRACE_LOCK_WAIT) {
                continue;
            }
            grant = served_before(a, 3, w->obj, -1, w->t + w->dur);
            if (grant == NULL || grant->t < w->t || (gsend = cmt_send_of(pa, grant)) == NULL) {
                local++; /* the token was here: no message */
                continue;
            }
            ph = &cmt_procs[grant->peer];
            m  = (int)(w->obj % (uint64_t)cmt_nprocs);
            pm = &cmt_procs[m];
            /* The forward the last holder served before it granted, unless it manages the lock
             * itself and took the request straight. */
            fwd   = served_before(ph->h.rank, 2, w->obj, m, gsend->t);
            fsend = (fwd != NULL) ? cmt_send_of(ph, fwd) : NULL;
            t_g = cmt_global_ns(ph, gsend->t);
            if (m == a) {
                /* Its own manager: the request went nowhere, the forward left at once. */
                if (fsend == NULL) {
                    unresolved++;
                    continue;
                }
                t_r = at_m = cmt_global_ns(pa, w->t);
            } else {
                req   = served_before(m, 1, w->obj, a, (fsend != NULL) ? fsend->t : gsend->t);
                rsend = (req != NULL) ? cmt_send_of(pm, req) : NULL;
                if (rsend == NULL || rsend->t < w->t) {
                    unresolved++; /* a message not traced, or out of order */
                    continue;
                }
                t_r  = cmt_global_ns(pa, rsend->t);
                at_m = arrival(pm, index_of(pm, req));
            }
            if (fsend != NULL) {
                t_f  = cmt_global_ns(pm, fsend->t);
                at_h = arrival(ph, index_of(ph, fwd));
            } else {
                /* The manager was the last requester and the lock free: it granted from the
                 * request's handler; no forward, no wait at a holder. */
                t_f = at_h = t_g;
            }
            at_a  = arrival(pa, index_of(pa, grant));
            t_end = cmt_global_ns(pa, w->t + w->dur);
            {
                uint64_t pts[LS_N + 1] = {t_r, at_m, t_f, at_h, t_g, at_a, t_end};
                n++;
                per_rank[a].n++;
                for (int s = 0; s < LS_N; s++) {
                    per_rank[a].sum[s] += (pts[s + 1] > pts[s]) ? pts[s + 1] - pts[s] : 0;
                }
            }
        }
    }
    free_serves();
    snprintf(label, sizeof(label), "TreadMarks lock acquires by message: %" PRIu64 " (%" PRIu64
             " more with the token here, %" PRIu64 " not followed back) from request to the grant "
             "taken", n, local, unresolved);
    print_split(out, label, per_rank, seg, LS_N);
    free(per_rank);
}

void cmt_top_splits(FILE *out)
{
    top_fetches(out);
    top_tmk_locks(out);
}
