/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em3d: electromagnetic wave propagation through a bipartite graph of
 * electric (E) and magnetic (H) nodes, the Split-C EM3D kernel (Cashmere
 * paper, section 3.1).
 *
 * The graph has nodes/2 E nodes and nodes/2 H nodes; each E node depends on
 * `degree` H nodes and each H node on `degree` E nodes, with a weight per
 * edge. An iteration updates every E value, E -= sum(weight * H neighbour), a
 * barrier, then every H value from the E values likewise, a barrier.
 *
 * Graph: fixed by the node indices alone, not by P or by who builds it. Edge
 * k of node i draws from splitmix64 of (kind, i, k): with probability
 * remote% its neighbour is uniform over all nodes of the other kind, else it
 * lies in a window of +-EM3D_WINDOW indices around i (wrapping). With the
 * band distribution below, remote% * (P-1)/P of the edges (plus the few
 * window edges at a band's edge) cross processes: the paper's "5% probability
 * that neighbouring nodes reside in different processors", kept independent
 * of P so that every P computes the same graph and the same values.
 *
 * Layout: process p owns a contiguous band of the E nodes and the same band of
 * the H nodes; each band's values start on a page of their own (the bands are
 * padded to a whole number of pages), so a process writes only its own pages.
 * The values are shared; the edge lists (neighbour slots and weights) are only
 * ever read by their owner, which builds them in private memory.
 *
 * Each update reads only the other kind's values and sums a node's edges in a
 * fixed order, so the result is bit-for-bit the sequential one: rank 0 rebuilds
 * the graph privately, runs the same kernel and compares every value.
 *
 *   cmrun -n P em3d [--size test|paper|large] [--nodes N] [--degree D] [--iters K] [--remote R]
 *     test: 2048 nodes, 10 iterations; paper: 65536, 10; large: 262144, 10
 *     (degree 5, remote 5% by default)
 */
#include "app.h"

#include <stdint.h>

#define EM3D_FLAGS  "[--nodes N] [--degree D] [--iters K] [--remote PERCENT]"
#define EM3D_WINDOW 8    /* local neighbours lie within +-8 indices */
#define PAGE_DOUBLES 512 /* doubles per 4 KiB page */

enum { KIND_E = 0, KIND_H = 1 };

/* Edge k of node i of the given kind: its neighbour's index (of the other kind) and weight. */
static void em3d_edge(int kind, long i, int k, long half, long degree, long remote, long *nbr,
                      double *w)
{
    uint64_t base = ((uint64_t)kind << 62) ^ ((uint64_t)i * (uint64_t)degree + (uint64_t)k);
    uint64_t r1 = app_hash64(base * 3 + 0), r2 = app_hash64(base * 3 + 1), r3 = app_hash64(base * 3 + 2);
    if ((long)(r1 % 100) < remote) {
        *nbr = (long)(r2 % (uint64_t)half);
    } else {
        long off = (long)(r2 % (2 * EM3D_WINDOW + 1)) - EM3D_WINDOW;
        *nbr = ((i + off) % half + half) % half;
    }
    /* small weights keep the values bounded over many iterations */
    *w = (0.5 + app_unit(r3)) / (4.0 * (double)degree);
}

static double em3d_init_value(int kind, long i)
{
    return app_unit(app_hash64(((uint64_t)(kind + 2) << 60) ^ (uint64_t)i)) - 0.5;
}

/* Updates n nodes from their neighbours in other[] (the same code for the parallel and the reference run). */
static void em3d_update(double *val, long n, long degree, const long *nbr, const double *w,
                        const double *other)
{
    for (long i = 0; i < n; i++) {
        double sum = 0.0;
        const long *ni = nbr + i * degree;
        const double *wi = w + i * degree;
        for (long k = 0; k < degree; k++) {
            sum += wi[k] * other[ni[k]];
        }
        val[i] -= sum;
    }
}

/* First node of process p's band. */
static long band_lo(long half, int np, int p)
{
    return half * p / np;
}

/* The slot (index into the padded shared array) of node j of one kind. */
static long em3d_slot(long j, long half, int np, long stride)
{
    int p = (int)(j * np / half);
    while (p + 1 < np && band_lo(half, np, p + 1) <= j) {
        p++;
    }
    while (p > 0 && band_lo(half, np, p) > j) {
        p--;
    }
    return (long)p * stride + (j - band_lo(half, np, p));
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    app_size_t size = app_size(argc, argv, "em3d", EM3D_FLAGS);
    long nodes  = app_long(argc, argv, "--nodes",
                           size == APP_SIZE_TEST ? 2048 : size == APP_SIZE_PAPER ? 65536 : 262144,
                           "em3d", EM3D_FLAGS);
    long degree = app_long(argc, argv, "--degree", 5, "em3d", EM3D_FLAGS);
    long iters  = app_long(argc, argv, "--iters", 10, "em3d", EM3D_FLAGS);
    long remote = app_long(argc, argv, "--remote", 5, "em3d", EM3D_FLAGS);
    bool corrupt = app_flag(argc, argv, "--corrupt"); /* proves the check can fail */
    const int me = cm_rank(), np = cm_nprocs();
    if (nodes < 2 || remote > 100) {
        app_usage("em3d", EM3D_FLAGS);
    }
    const long half = nodes / 2; /* E nodes = H nodes = half */
    const long lo = band_lo(half, np, me), hi = band_lo(half, np, me + 1), mine = hi - lo;
    long maxband = 0;
    for (int p = 0; p < np; p++) {
        long b = band_lo(half, np, p + 1) - band_lo(half, np, p);
        maxband = (b > maxband) ? b : maxband;
    }
    /* each band padded to whole pages: band p's values start at slot p * stride */
    const long stride = (maxband + PAGE_DOUBLES - 1) / PAGE_DOUBLES * PAGE_DOUBLES;
    double *eval = cm_malloc((size_t)np * (size_t)stride * sizeof(double));
    double *hval = cm_malloc((size_t)np * (size_t)stride * sizeof(double));
    double *myE = eval + (long)me * stride, *myH = hval + (long)me * stride;
    /* my nodes' edges: private, as slots into the shared arrays */
    long *enbr = malloc((size_t)(mine * degree + 1) * sizeof(long));
    long *hnbr = malloc((size_t)(mine * degree + 1) * sizeof(long));
    double *ew = malloc((size_t)(mine * degree + 1) * sizeof(double));
    double *hw = malloc((size_t)(mine * degree + 1) * sizeof(double));
    double t0, t1;
    char params[160];
    bool ok = true;

    if (enbr == NULL || hnbr == NULL || ew == NULL || hw == NULL) {
        cm_abort(1, "em3d: out of memory for the edge lists");
    }
    for (long i = lo; i < hi; i++) {
        for (long k = 0; k < degree; k++) {
            long x = (i - lo) * degree + k, j;
            em3d_edge(KIND_E, i, (int)k, half, degree, remote, &j, &ew[x]);
            enbr[x] = em3d_slot(j, half, np, stride);
            em3d_edge(KIND_H, i, (int)k, half, degree, remote, &j, &hw[x]);
            hnbr[x] = em3d_slot(j, half, np, stride);
        }
    }

    /* Initialization ends first, so each band's pages move to the process that owns them. */
    cm_init_done();
    for (long i = lo; i < hi; i++) {
        myE[i - lo] = em3d_init_value(KIND_E, i);
        myH[i - lo] = em3d_init_value(KIND_H, i);
    }
    cm_barrier();
    cm_stats_reset();

    t0 = cm_wtime();
    for (long it = 0; it < iters; it++) {
        em3d_update(myE, mine, degree, enbr, ew, hval);
        cm_barrier();
        em3d_update(myH, mine, degree, hnbr, hw, eval);
        cm_barrier();
    }
    t1 = cm_wtime();
    cm_stats_stop(); /* the statistics are the timed section's */
    if (corrupt && me == np - 1 && mine > 0) {
        myE[mine / 2] += 1.0;
    }
    cm_barrier();

    if (me == 0) {
        double *re = malloc((size_t)half * sizeof(double)), *rh = malloc((size_t)half * sizeof(double));
        long *rne = malloc((size_t)(half * degree) * sizeof(long));
        long *rnh = malloc((size_t)(half * degree) * sizeof(long));
        double *rwe = malloc((size_t)(half * degree) * sizeof(double));
        double *rwh = malloc((size_t)(half * degree) * sizeof(double));
        long bad = 0;
        if (re == NULL || rh == NULL || rne == NULL || rnh == NULL || rwe == NULL || rwh == NULL) {
            cm_abort(1, "em3d: out of memory for the reference graph");
        }
        for (long i = 0; i < half; i++) {
            re[i] = em3d_init_value(KIND_E, i);
            rh[i] = em3d_init_value(KIND_H, i);
            for (long k = 0; k < degree; k++) {
                em3d_edge(KIND_E, i, (int)k, half, degree, remote, &rne[i * degree + k], &rwe[i * degree + k]);
                em3d_edge(KIND_H, i, (int)k, half, degree, remote, &rnh[i * degree + k], &rwh[i * degree + k]);
            }
        }
        for (long it = 0; it < iters; it++) {
            em3d_update(re, half, degree, rne, rwe, rh);
            em3d_update(rh, half, degree, rnh, rwh, re);
        }
        for (int kind = KIND_E; kind <= KIND_H; kind++) {
            const double *got = (kind == KIND_E) ? eval : hval, *want = (kind == KIND_E) ? re : rh;
            for (long i = 0; i < half; i++) {
                long s = em3d_slot(i, half, np, stride);
                if (memcmp(&got[s], &want[i], sizeof(double)) != 0 && bad++ < 3) {
                    fprintf(stderr, "em3d: %c node %ld: %.17g, sequential %.17g\n",
                            kind == KIND_E ? 'E' : 'H', i, got[s], want[i]);
                }
            }
        }
        ok = (bad == 0);
        free(re);
        free(rh);
        free(rne);
        free(rnh);
        free(rwe);
        free(rwh);
    }
    free(enbr);
    free(hnbr);
    free(ew);
    free(hw);
    snprintf(params, sizeof(params), "%ld nodes, degree %ld, %ld%% remote, %ld iterations", 2 * half,
             degree, remote, iters);
    int status = app_report("em3d", params, t1 - t0, ok);
    cm_finalize();
    return status;
}
