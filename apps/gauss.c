/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gauss: Gaussian elimination without pivoting (Cashmere paper, section 3.1),
 * synchronized by locks used as flags: "pivot row ready".
 *
 * The n x n system is a deterministic, strictly diagonally dominant matrix (so
 * no pivoting is needed) with a right-hand side b = A x for a known solution
 * x; row i holds a[i][0..n-1] and b[i] in a[i][n] (the augmented matrix), and
 * is padded to a whole number of 4 KiB pages, so each row's pages hold nothing
 * else. Rows are distributed cyclically: row i belongs to process i % P, which
 * initializes it (its pages move there) and is the only one ever to write it.
 * Step k eliminates column k from every row i > k with pivot row k; the
 * multiplier is kept in a[i][k] (the L of an LU factorization in place).
 *
 * Lock k belongs to row k. Before the start barrier each process acquires the
 * locks of all its rows; it releases lock k when row k is final, i.e. when
 * step k-1 has been applied to it (row 0 at once): from then on row k is the
 * pivot row of step k and never changes. A process that needs pivot row k
 * acquires and releases lock k, waiting in the lock's queue until the owner
 * lets go, and sees the row through release consistency. Each process updates
 * its rows with steps k = 0, 1, ... in the sequential order, and the owner of
 * row k+1 releases it as soon as step k is applied, before updating its other
 * rows (the pipeline). No step reads a row that is still changing, and every
 * row sees exactly the sequential operations, so the result is bit-for-bit the
 * sequential elimination: rank 0 eliminates a private copy with the same row
 * kernel and compares every value, then back-substitutes the shared result
 * and checks the solution against the known one (relative 1e-9).
 *
 *   cmrun -n P gauss [--size test|paper|large] [--n N]
 *     test: 64 x 64; paper: 640 x 640; large: 1280 x 1280 (N <= 65536: one lock per row)
 */
#include "app.h"

#include <math.h>
#include <stdint.h>

#define GAUSS_FLAGS "[--n N]"
#define PAGE        4096
#define MAX_ROWS    65536 /* lock ids 0..65535 */
#define TOLERANCE   1e-9

/* Off-diagonal entries in [-1, 1) from a hash of (i, j); the diagonal outweighs the row's sum. */
static double gauss_entry(long i, long j, long n)
{
    if (i == j) {
        return (double)n + 1.0 + 0.5 * (double)(i % 3);
    }
    uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)j + 0x632BE59BD9B4E019ULL);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 29;
    return (double)(h >> 11) * 0x1.0p-52 - 1.0;
}

/* The known solution. */
static double gauss_solution(long j)
{
    return 1.0 + (double)(j % 7) / 8.0;
}

/* Row i of the augmented matrix: a[i][0..n-1] and b[i] = sum_j a[i][j] x[j] in a[i][n]. */
static void gauss_init_row(double *row, long n, long i)
{
    double b = 0.0;
    for (long j = 0; j < n; j++) {
        row[j] = gauss_entry(i, j, n);
        b += row[j] * gauss_solution(j);
    }
    row[n] = b;
}

/* Step k on one row (the same code for the parallel and the reference run). */
static void gauss_eliminate(double *row, const double *pivot, long n, long k)
{
    double f = row[k] / pivot[k];
    row[k] = f;
    for (long j = k + 1; j <= n; j++) {
        row[j] -= f * pivot[j];
    }
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    app_size_t size = app_size(argc, argv, "gauss", GAUSS_FLAGS);
    long n = app_long(argc, argv, "--n", size == APP_SIZE_TEST ? 64 : size == APP_SIZE_PAPER ? 640 : 1280,
                      "gauss", GAUSS_FLAGS);
    bool corrupt = app_flag(argc, argv, "--corrupt"); /* proves the check can fail */
    if (n > MAX_ROWS) {
        app_usage("gauss", GAUSS_FLAGS);
    }
    const int me = cm_rank(), np = cm_nprocs();
    const long stride = ((n + 1) * (long)sizeof(double) + PAGE - 1) / PAGE * PAGE / (long)sizeof(double);
    double *a = cm_malloc((size_t)n * (size_t)stride * sizeof(double));
    double t0, t1;
    char params[128];
    bool ok = true;

    /* Initialization ends first, so each row's pages move to the process that owns it. */
    cm_init_done();
    for (long i = me; i < n; i += np) {
        gauss_init_row(a + i * stride, n, i);
        cm_lock_acquire((int)i); /* row i is not final yet */
    }
    cm_barrier();
    cm_stats_reset();

    t0 = cm_wtime();
    if (me == 0) {
        cm_lock_release(0); /* row 0 is final from the start */
    }
    for (long k = 0; k + 1 < n; k++) {
        long first = k + 1 + ((me - (k + 1)) % np + np) % np; /* my first row below k */
        if (first >= n) {
            break; /* all my rows are final */
        }
        const double *pivot = a + k * stride;
        if (k % np != me) {
            cm_lock_acquire((int)k); /* wait until pivot row k is ready */
            cm_lock_release((int)k);
        }
        for (long i = first; i < n; i += np) {
            gauss_eliminate(a + i * stride, pivot, n, k);
            if (i == k + 1) {
                cm_lock_release((int)i); /* row k+1 is final: the next pivot is ready */
            }
        }
    }
    cm_barrier(); /* the parallel section ends when the last process is done */
    t1 = cm_wtime();
    cm_stats_stop(); /* the statistics are the timed section's */
    if (corrupt && me == (n - 1) % np) {
        a[(n - 1) * stride + n] += 1.0;
    }
    cm_barrier();

    if (me == 0) {
        double *ref = malloc((size_t)n * (size_t)(n + 1) * sizeof(double));
        double *x = malloc((size_t)n * sizeof(double));
        long bad = 0;
        double err = 0.0, norm = 0.0;
        if (ref == NULL || x == NULL) {
            cm_abort(1, "gauss: out of memory for the reference matrix");
        }
        for (long i = 0; i < n; i++) {
            gauss_init_row(ref + i * (n + 1), n, i);
        }
        for (long k = 0; k + 1 < n; k++) {
            for (long i = k + 1; i < n; i++) {
                gauss_eliminate(ref + i * (n + 1), ref + k * (n + 1), n, k);
            }
        }
        for (long i = 0; i < n; i++) {
            for (long j = 0; j <= n; j++) {
                double v = a[i * stride + j], r = ref[i * (n + 1) + j];
                if (memcmp(&v, &r, sizeof(double)) != 0 && bad++ < 3) {
                    fprintf(stderr, "gauss: row %ld column %ld: %.17g, sequential %.17g\n", i, j, v, r);
                }
            }
        }
        /* Back substitution on the shared result, against the known solution. */
        for (long i = n - 1; i >= 0; i--) {
            const double *row = a + i * stride;
            double s = row[n];
            for (long j = i + 1; j < n; j++) {
                s -= row[j] * x[j];
            }
            x[i] = s / row[i];
        }
        for (long i = 0; i < n; i++) {
            err  = fmax(err, fabs(x[i] - gauss_solution(i)));
            norm = fmax(norm, fabs(gauss_solution(i)));
        }
        if (!(err <= TOLERANCE * norm) && bad++ < 3) {
            fprintf(stderr, "gauss: solution off by %.3g (max norm %.3g, tolerance %.0e relative)\n", err,
                    norm, TOLERANCE);
        }
        ok = (bad == 0);
        free(ref);
        free(x);
    }
    snprintf(params, sizeof(params), "%ld x %ld", n, n);
    int status = app_report("gauss", params, t1 - t0, ok);
    cm_finalize();
    return status;
}
