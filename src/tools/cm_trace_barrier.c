/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_trace --top's barriers: what their time is made of. Each episode (the barrier's sequence
 * number, the same on every rank) splits a rank's time in it into waiting for the last arrival
 * (the imbalance of the interval before) and what follows it (the barrier's own work: its
 * messages or directory words, the release and acquire it implies). Then the lateness of each
 * last arrival (its arrival less the others' mean) by what the last rank did more than the
 * others since the barrier before: computing, faulting, waiting for locks. This is the seed's
 * (Liao's) question of barrier time that is really an earlier phase's contention.
 */
#include "config.h"
#include "src/tools/cm_trace_tool.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t seq, arrive, depart; /* arrive and depart on rank 0's clock, ns */
    uint64_t from, to;            /* the interval before it, on the rank's own clock */
    uint64_t lane[NLANES];        /* that interval by lane, ns */
} episode_t;

typedef struct {
    episode_t *ep;
    size_t    n, cursor;
} rank_eps_t;

/* The application thread's barriers of p, in order, with the intervals between them. */
static void collect(const cmt_proc_t *p, rank_eps_t *re)
{
    size_t cap = 0;
    uint64_t prev = 0;
    bool any = false;

    for (size_t k = 0; k < p->n; k++) {
        const cm_trace_rec_t *r = &p->rec[k];
        if (!any && !cmt_is_meta(r) && r->kind != CM_TRACE_ALLOC && r->kind != CM_TRACE_LOCK_NEW) {
            prev = r->t; /* the first interval begins at the first event */
            any  = true;
        }
        if (r->kind != CM_TRACE_BARRIER || r->tid != 0) {
            continue;
        }
        if (re->n == cap) {
            cap    = cap ? 2 * cap : 64;
            re->ep = cmt_realloc(re->ep, cap, sizeof(*re->ep));
        }
        episode_t *e = &re->ep[re->n++];
        memset(e, 0, sizeof(*e));
        e->seq    = r->obj;
        e->arrive = cmt_global_ns(p, r->t);
        e->depart = cmt_global_ns(p, r->t + r->dur);
        e->from   = (prev < r->t) ? prev : r->t;
        e->to     = r->t;
        prev      = r->t + r->dur;
    }
}

/* A stretch of phase into the intervals it overlaps (walked in time order). */
static void put(void *arg, int timer, uint64_t from, uint64_t to)
{
    rank_eps_t *re = arg;
    int lane = cmt_lane_of(timer);

    while (re->cursor < re->n && re->ep[re->cursor].to <= from) {
        re->cursor++;
    }
    for (size_t i = re->cursor; i < re->n && re->ep[i].from < to; i++) {
        episode_t *e = &re->ep[i];
        uint64_t s = (from > e->from) ? from : e->from, t = (to < e->to) ? to : e->to;
        if (t > s) {
            e->lane[lane] += t - s;
        }
    }
}

typedef struct {
    size_t   e;           /* the episode (its index on every rank) */
    int      last;        /* the rank that arrived last */
    uint64_t waited;      /* the ranks' waiting for it, ns */
    double   excess[NLANES + 1]; /* the last rank's lanes less the others' mean; [NLANES]: start */
} worst_t;

static int cmp_worst(const void *a, const void *b)
{
    const worst_t *x = a, *y = b;
    return (x->waited < y->waited) ? 1 : (x->waited > y->waited) ? -1 : (x->e > y->e) - (x->e < y->e);
}

static void print_excess(FILE *out, const double *ex)
{
    for (int l = 0; l < NLANES; l++) {
        if (l != LANE_BARRIER) {
            fprintf(out, "%s%s %+.3f", l ? ", " : "", cmt_lane_name[l], ex[l] / 1e6);
        }
    }
    fprintf(out, "; and began %+.3f after them", ex[NLANES] / 1e6);
}

void cmt_top_barriers(FILE *out, int top)
{
    rank_eps_t *re = cmt_zalloc((size_t)cmt_nprocs, sizeof(*re));
    size_t n = SIZE_MAX, mismatched = 0;
    uint64_t *wait, *after, *spread, *lastcount;
    double excess[NLANES + 1] = {0}, late = 0;
    worst_t *worst;

    for (int i = 0; i < cmt_nprocs; i++) {
        collect(&cmt_procs[i], &re[i]);
        cmt_phase_walk(&cmt_procs[i], put, &re[i]);
        n = (re[i].n < n) ? re[i].n : n;
    }
    if (cmt_nprocs < 2 || n == 0 || n == SIZE_MAX) {
        goto out;
    }
    wait      = cmt_zalloc((size_t)cmt_nprocs, sizeof(*wait));
    after     = cmt_zalloc((size_t)cmt_nprocs, sizeof(*after));
    spread    = cmt_zalloc((size_t)cmt_nprocs, sizeof(*spread));
    lastcount = cmt_zalloc((size_t)cmt_nprocs, sizeof(*lastcount));
    worst     = cmt_zalloc(n, sizeof(*worst));
    for (size_t e = 0; e < n; e++) {
        uint64_t last_at = 0, first_out = UINT64_MAX;
        int last = 0;
        double others = 0;
        for (int i = 0; i < cmt_nprocs; i++) {
            mismatched += (re[i].ep[e].seq != re[0].ep[e].seq);
            if (re[i].ep[e].arrive >= last_at) {
                last_at = re[i].ep[e].arrive;
                last    = i;
            }
            first_out = (re[i].ep[e].depart < first_out) ? re[i].ep[e].depart : first_out;
        }
        worst[e].e    = e;
        worst[e].last = last;
        lastcount[last]++;
        for (int i = 0; i < cmt_nprocs; i++) {
            const episode_t *ep = &re[i].ep[e];
            uint64_t in = ep->depart - ep->arrive, w = (last_at > ep->arrive) ? last_at - ep->arrive : 0;
            w = (w < in) ? w : in;
            wait[i] += w;
            after[i] += in - w;
            /* Of what follows the last arrival, the part after the first rank left: waking up
             * and being scheduled again, where processes share cores. */
            uint64_t from = (ep->arrive > last_at) ? ep->arrive : last_at;
            uint64_t own  = (first_out > from) ? first_out - from : 0;
            spread[i] += (in - w) - ((own < in - w) ? own : in - w);
            worst[e].waited += w;
            if (i != last) {
                others += (double)ep->arrive / (cmt_nprocs - 1);
                for (int l = 0; l < NLANES; l++) {
                    worst[e].excess[l] -= (double)ep->lane[l] / (cmt_nprocs - 1);
                }
                worst[e].excess[NLANES] -=
                    (double)cmt_global_ns(&cmt_procs[i], ep->from) / (cmt_nprocs - 1);
            }
        }
        for (int l = 0; l < NLANES; l++) {
            worst[e].excess[l] += (double)re[last].ep[e].lane[l];
        }
        worst[e].excess[NLANES] += (double)cmt_global_ns(&cmt_procs[last], re[last].ep[e].from);
        late += (double)last_at - others;
        for (int l = 0; l <= NLANES; l++) {
            excess[l] += worst[e].excess[l];
        }
    }
    fprintf(out, "barriers: %zu; each rank's time in them (ms): waiting for the last arrival, then "
            "until the first rank left (the barrier's own work), then until it left itself; and how "
            "often it arrived last:\n", n);
    if (mismatched) {
        fprintf(out, "  (%zu ranks' sequence numbers differ from rank 0's: matched by order)\n",
                mismatched);
    }
    for (int i = 0; i < cmt_nprocs; i++) {
        fprintf(out, "  rank %d: in barriers %.3f = waiting %.3f + the barrier %.3f + leaving after the "
                "first %.3f; last %" PRIu64 " times\n", cmt_procs[i].h.rank,
                (double)(wait[i] + after[i]) / 1e6, (double)wait[i] / 1e6,
                (double)(after[i] - spread[i]) / 1e6, (double)spread[i] / 1e6, lastcount[i]);
    }
    fprintf(out, "  the last arrivals came %.3f ms after the others' mean in all; since the barrier "
            "before, the last rank spent more than the others' mean (ms) on: ", late / 1e6);
    print_excess(out, excess);
    fputc('\n', out);
    qsort(worst, n, sizeof(*worst), cmp_worst);
    fprintf(out, "  the barriers waited at longest (%d):\n", top < (int)n ? top : (int)n);
    for (size_t i = 0; i < n && (int)i < top; i++) {
        const episode_t *ep = &re[worst[i].last].ep[worst[i].e];
        fprintf(out, "    #%" PRIu64 " at %.3f ms: waited %.3f ms in all for rank %d, which spent "
                "more (ms) on ", re[0].ep[worst[i].e].seq,
                cmt_us(&cmt_procs[worst[i].last], ep->to) / 1e3, (double)worst[i].waited / 1e6,
                cmt_procs[worst[i].last].h.rank);
        print_excess(out, worst[i].excess);
        fputc('\n', out);
    }
    free(worst);
    free(lastcount);
    free(spread);
    free(after);
    free(wait);
out:
    for (int i = 0; i < cmt_nprocs; i++) {
        free(re[i].ep);
    }
    free(re);
}
