/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sor_l: sor with locks instead of barriers (Cashmere paper, section 3.1):
 * red-black successive over-relaxation on the same grid, sizes, kernel and
 * initialization as sor, banded the same way, but each process protects its
 * two boundary rows with locks that its neighbours acquire before they use the
 * rows, and there is no barrier inside the iteration loop.
 *
 * The grid has n interior columns and n+2 rows of floats (one row is one 4 KiB
 * page at n = 1024); the top row is held at 1.0, the bottom row and the side
 * columns at 0. Phase t = 2k + colour of iteration k updates the points of
 * that colour from the other colour. Process p owns rows [lo, hi); its top row
 * lo is read by p-1 and its bottom row hi-1 by p+1. Each boundary row has a
 * lock (2p: top, 2p+1: bottom) and a counter, the number of phases the row has
 * completed; the counters of a process lie on their own page, apart from the
 * grid. After a boundary row finishes phase t its owner sets the counter to
 * t+1 under the row's lock; a neighbour that needs the row acquires the lock,
 * reads the counter, releases, and yields until the count is there.
 *
 * Why no barrier is needed: phase t of row lo reads row lo-1 (colour 1-c of
 * p-1's bottom row), so
 *  - flow: row lo-1 must have finished phase t-1 (that phase wrote the colour
 *    read now): p waits until p-1's bottom counter is >= t;
 *  - anti: phase t writes colour c of row lo, which p-1 read in phase t-1 of
 *    row lo-1; the same counter >= t says p-1 has finished that read;
 *  - and p-1 cannot write row lo-1 again (phase t+1, colour 1-c, which p reads
 *    now) before p's top counter is >= t+1, i.e. before p is done with it.
 * Symmetrically for row hi-1 and p+1. So neighbours are at most one phase
 * apart, and two processes in the same phase write one colour and read the
 * other. Rows strictly inside a band are neither read nor written by another
 * process, so they are updated before waiting (overlap). Every value then
 * follows the sequential dependences exactly: rank 0 recomputes the grid
 * privately with the same row kernel and compares every value bit for bit.
 * Release consistency carries the grid: the boundary row's writes precede the
 * release that publishes its counter, and the reader acquires that lock.
 *
 *   cmrun -n P sor_l [--size test|paper|large] [--n N] [--iters K]
 *     test: 64 x 64, 10 iterations; paper: 1024 x 1024, 20; large: 2048 x 2048, 20
 */
#include "sor_grid.h"

#include <sched.h>

#define PAGE      4096

/* One process's counters: phases completed by its top and bottom boundary rows. */
typedef struct {
    long top, bottom;
} sor_versions_t;

/* The version table: process p's counters at the start of its own page. */
static sor_versions_t *sor_versions(char *table, int p)
{
    return (sor_versions_t *)(table + (size_t)p * PAGE);
}

/* Waits until *count (protected by lock) is at least need: acquire, read, release, yield. */
static void sor_wait(int lock, const long *count, long need)
{
    for (;;) {
        cm_lock_acquire(lock);
        long v = *count;
        cm_lock_release(lock);
        if (v >= need) {
            return;
        }
        sched_yield();
    }
}

/* Publishes that a boundary row has completed done phases. */
static void sor_publish(int lock, long *count, long done)
{
    cm_lock_acquire(lock);
    *count = done;
    cm_lock_release(lock);
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    app_size_t size = app_size(argc, argv, "sor_l", SOR_FLAGS);
    long n     = app_long(argc, argv, "--n", size == APP_SIZE_TEST ? 64 : size == APP_SIZE_PAPER ? 1024 : 2048,
                          "sor_l", SOR_FLAGS);
    long iters = app_long(argc, argv, "--iters", size == APP_SIZE_TEST ? 10 : 20, "sor_l", SOR_FLAGS);
    bool corrupt = app_flag(argc, argv, "--corrupt"); /* proves the check can fail */
    const int me = cm_rank(), np = cm_nprocs();
    if (n < np || 2L * np > 65536) {
        app_usage("sor_l", SOR_FLAGS); /* every process needs a row, and two lock ids */
    }
    const long rows = n + 2;
    float *grid = cm_malloc((size_t)rows * (size_t)n * sizeof(float));
    char *table = cm_malloc((size_t)np * PAGE);
    long lo = 1 + (n * me) / np, hi = 1 + (n * (me + 1)) / np; /* my band: rows [lo, hi) */
    sor_versions_t *mine = sor_versions(table, me);
    sor_versions_t *above = (me > 0) ? sor_versions(table, me - 1) : NULL;
    sor_versions_t *below = (me < np - 1) ? sor_versions(table, me + 1) : NULL;
    const int top_lock = 2 * me, bottom_lock = 2 * me + 1;
    double t0, t1;
    char params[128];
    bool ok = true;

    /* Initialization ends first, so each band's pages move to the process that owns them. */
    cm_init_done();
    sor_init_band(grid, n, lo, hi);
    mine->top = 0;
    mine->bottom = 0;
    cm_barrier();
    cm_stats_reset();

    t0 = cm_wtime();
    for (long k = 0; k < iters; k++) {
        for (int colour = 0; colour < 2; colour++) {
            long t = 2 * k + colour; /* this phase; neighbours must have completed t phases */
            for (long i = lo + 1; i < hi - 1; i++) { /* inside the band: no one else's rows */
                sor_row(grid + i * n, grid + (i - 1) * n, grid + (i + 1) * n, n, i, colour);
            }
            if (above != NULL) {
                sor_wait(2 * (me - 1) + 1, &above->bottom, t);
            }
            if (hi - lo == 1 && below != NULL) { /* one row: it borders both neighbours */
                sor_wait(2 * (me + 1), &below->top, t);
            }
            sor_row(grid + lo * n, grid + (lo - 1) * n, grid + (lo + 1) * n, n, lo, colour);
            if (above != NULL) { /* only p-1 reads the top row */
                sor_publish(top_lock, &mine->top, t + 1);
            }
            if (hi - lo > 1) {
                if (below != NULL) {
                    sor_wait(2 * (me + 1), &below->top, t);
                }
                sor_row(grid + (hi - 1) * n, grid + (hi - 2) * n, grid + hi * n, n, hi - 1, colour);
            }
            if (below != NULL) {
                sor_publish(bottom_lock, &mine->bottom, t + 1);
            }
        }
    }
    cm_barrier(); /* the parallel section ends when the last process is done */
    t1 = cm_wtime();
    cm_stats_stop(); /* the statistics are the timed section's */
    if (corrupt && me == np - 1) {
        grid[(hi - 1) * n + n / 2] += 1.0f;
    }
    cm_barrier();

    if (me == 0) {
        ok = sor_check("sor_l", grid, n, iters);
    }
    snprintf(params, sizeof(params), "%ld x %ld, %ld iterations", n, n, iters);
    int status = app_report("sor_l", params, t1 - t0, ok);
    cm_finalize();
    return status;
}
