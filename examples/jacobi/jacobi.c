/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * jacobi: 2-D Jacobi relaxation on a shared grid. Each process updates a band
 * of rows; a barrier ends every iteration. Process 0 then repeats the
 * computation alone in private memory and compares: the same operations in
 * the same order give the same bits, so the difference must be exactly 0.
 *
 *   make && cmrun -n 2 ./jacobi [iterations]
 */
#include <cm.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 256 /* grid of N x N doubles; the border stays fixed */

typedef double grid_t[N][N];

/* Top and left edges at 1.0, the rest 0: every band borders a heated edge, so values cross
 * the bands' boundaries from the first iterations on. */
static void init(grid_t g)
{
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < N; j++) {
            g[i][j] = (i == 0 || j == 0) ? 1.0 : 0.0;
        }
    }
}

/* One sweep over rows [lo, hi): each point becomes the mean of its neighbours. */
static void sweep(grid_t dst, grid_t src, int lo, int hi)
{
    for (int i = lo; i < hi; i++) {
        for (int j = 1; j < N - 1; j++) {
            dst[i][j] = (src[i - 1][j] + src[i + 1][j] + src[i][j - 1] + src[i][j + 1]) * 0.25;
        }
    }
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    int me = cm_rank(), n = cm_nprocs();
    int iters = (argc > 1) ? atoi(argv[1]) : 100; /* argv is the same on every process */

    /* Two shared grids: each sweep reads one and writes the other. */
    grid_t *a = cm_malloc(sizeof(grid_t)), *b = cm_malloc(sizeof(grid_t));
    if (me == 0) {
        init(*a);
        init(*b);
    }
    cm_barrier();

    /* This process's band of the interior rows 1..N-2. */
    int lo = 1 + (N - 2) * me / n, hi = 1 + (N - 2) * (me + 1) / n;
    double t0 = cm_wtime();
    for (int k = 0; k < iters; k++) {
        sweep(*b, *a, lo, hi);
        /* One barrier per iteration is enough: the next sweep writes the grid this one
         * read, and no process starts it before every process has finished this one. */
        cm_barrier();
        grid_t *t = a; /* every process swaps alike */
        a = b;
        b = t;
    }
    double t1 = cm_wtime();

    int status = 0;
    if (me == 0) {
        grid_t *ra = malloc(sizeof(grid_t)), *rb = malloc(sizeof(grid_t)); /* private */
        if (ra == NULL || rb == NULL) {
            cm_abort(1, "jacobi: out of memory");
        }
        init(*ra);
        init(*rb);
        for (int k = 0; k < iters; k++) {
            sweep(*rb, *ra, 1, N - 1);
            grid_t *t = ra;
            ra = rb;
            rb = t;
        }
        long bad = 0; /* counted with !=, which a NaN fails too */
        double maxdiff = 0;
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < N; j++) {
                bad += (*a)[i][j] != (*ra)[i][j];
                maxdiff = fmax(maxdiff, fabs((*a)[i][j] - (*ra)[i][j]));
            }
        }
        status = bad != 0;
        if (bad) {
            fprintf(stderr, "jacobi: %ld of %d points differ from the sequential run\n", bad, N * N);
        }
        printf("jacobi: %s (%d x %d, %d iterations, max diff %g) in %.3f s on %d processes\n",
               status ? "FAILED" : "OK", N, N, iters, maxdiff, t1 - t0, n);
        free(ra);
        free(rb);
    }
    cm_finalize();
    return status;
}
