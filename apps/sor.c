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
#include "app.h"

#define SOR_FLAGS "[--n N] [--iters K]"
#define OMEGA     1.25f

/* Updates the points of one colour in row i (the same code for the parallel and the reference run). */
static void sor_row(float *row, const float *up, const float *down, long n, long i, int colour)
{
    for (long j = (i + colour) & 1; j < n; j += 2) {
        float left  = (j > 0) ? row[j - 1] : 0.0f;
        float right = (j + 1 < n) ? row[j + 1] : 0.0f;
        float avg   = 0.25f * (up[j] + down[j] + left + right);
        row[j]      = row[j] + OMEGA * (avg - row[j]);
    }
}

static void sor_init_row(float *row, long n, long i)
{
    for (long j = 0; j < n; j++) {
        row[j] = (i == 0) ? 1.0f : 0.0f; /* the top edge is hot, the rest cold */
    }
}

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
    for (long i = lo; i < hi; i++) {
        sor_init_row(grid + i * n, n, i);
    }
    if (me == 0) {
        sor_init_row(grid, n, 0);
        sor_init_row(grid + (rows - 1) * n, n, rows - 1);
    }
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
    if (corrupt && me == np - 1) {
        grid[(hi - 1) * n + n / 2] += 1.0f;
    }
    cm_barrier();

    if (me == 0) {
        float *ref = malloc((size_t)rows * (size_t)n * sizeof(float));
        long bad = 0;
        if (ref == NULL) {
            cm_abort(1, "sor: out of memory for the reference grid");
        }
        for (long i = 0; i < rows; i++) {
            sor_init_row(ref + i * n, n, i);
        }
        for (long k = 0; k < iters; k++) {
            for (int colour = 0; colour < 2; colour++) {
                for (long i = 1; i <= n; i++) {
                    sor_row(ref + i * n, ref + (i - 1) * n, ref + (i + 1) * n, n, i, colour);
                }
            }
        }
        for (long x = 0; x < rows * n; x++) {
            if (memcmp(&grid[x], &ref[x], sizeof(float)) != 0 && bad++ < 3) {
                fprintf(stderr, "sor: row %ld column %ld: %.9g, sequential %.9g\n", x / n, x % n,
                        (double)grid[x], (double)ref[x]);
            }
        }
        ok = (bad == 0);
        free(ref);
    }
    snprintf(params, sizeof(params), "%ld x %ld, %ld iterations", n, n, iters);
    int status = app_report("sor", params, t1 - t0, ok);
    cm_finalize();
    return status;
}
