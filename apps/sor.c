/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sor: steady-state temperature of a metal sheet by red-black successive
 * over-relaxation, banded parallelization (Cashmere paper, section 3.1).
 *
 * The grid has n interior columns and n+2 rows of floats: one row is one 4 KiB
 * page at n = 1024, so each process's band of rows is its own pages (the
 * locality the paper's versions were given); the top row is held at 1.0, the
 * bottom row and the side columns at 0. Each iteration updates the red points
 * (i + j even) from their black neighbours, a barrier, then the black points,
 * a barrier. Each colour's update reads only the other colour, so the parallel
 * result is bit-for-bit the sequential one: rank 0 recomputes it privately
 * with the same row kernel and compares every value.
 *
 *   cmrun -n P sor [--size test|paper|large] [--n N] [--iters K]
 *     test: 64 x 64, 10 iterations; paper: 1024 x 1024, 20; large: 2048 x 2048, 20
 */
#include "sor_grid.h"

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    app_size_t size = app_size(argc, argv, "sor", SOR_FLAGS);
    long n     = app_long(argc, argv, "--n", size == APP_SIZE_TEST ? 64 : size == APP_SIZE_PAPER ? 1024 : 2048,
                          "sor", SOR_FLAGS);
    long iters = app_long(argc, argv, "--iters", size == APP_SIZE_TEST ? 10 : 20, "sor", SOR_FLAGS);
    bool corrupt = app_flag(argc, argv, "--corrupt"); /* proves the check can fail */
    const int me = cm_rank(), np = cm_nprocs();
    const long rows = n + 2;
    float *grid = cm_malloc((size_t)rows * (size_t)n * sizeof(float));
    long lo = 1 + (n * me) / np, hi = 1 + (n * (me + 1)) / np; /* my band: rows [lo, hi) */
    double t0, t1;
    char params[128];
    bool ok = true;

    /* Initialization ends first, so each band's pages move to the process that owns them. */
    cm_init_done();
    sor_init_band(grid, n, lo, hi);
    cm_barrier();
    cm_stats_reset();

    t0 = cm_wtime();
    for (long k = 0; k < iters; k++) {
        for (int colour = 0; colour < 2; colour++) {
            for (long i = lo; i < hi; i++) {
                sor_row(grid + i * n, grid + (i - 1) * n, grid + (i + 1) * n, n, i, colour);
            }
            cm_barrier();
        }
    }
    t1 = cm_wtime();
    cm_stats_stop(); /* the statistics are the timed section's */
    if (corrupt && me == np - 1) {
        grid[(hi - 1) * n + n / 2] += 1.0f;
    }
    cm_barrier();

    if (me == 0) {
        ok = sor_check("sor", grid, n, iters);
    }
    snprintf(params, sizeof(params), "%ld x %ld, %ld iterations", n, n, iters);
    int status = app_report("sor", params, t1 - t0, ok);
    cm_finalize();
    return status;
}
