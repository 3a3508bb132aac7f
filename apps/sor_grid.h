/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What sor and sor_l share: the grid, its row kernel, its initialization and
 * the check against a sequential run. One copy, so that both programs compute
 * the same thing bit for bit (only their synchronization differs).
 *
 * The grid has n interior columns and n+2 rows of floats: one row is one
 * 4 KiB page at n = 1024. The top row is held at 1.0, the bottom row and the
 * side columns at 0.
 */
#ifndef CM_APP_SOR_GRID_H
#define CM_APP_SOR_GRID_H

#include "app.h"

#define SOR_FLAGS "[--n N] [--iters K]"
#define OMEGA     1.25f

/* Updates the points of one colour in row i (the same code for the parallel and the reference run). */
static inline void sor_row(float *row, const float *up, const float *down, long n, long i, int colour)
{
    for (long j = (i + colour) & 1; j < n; j += 2) {
        float left  = (j > 0) ? row[j - 1] : 0.0f;
        float right = (j + 1 < n) ? row[j + 1] : 0.0f;
        float avg   = 0.25f * (up[j] + down[j] + left + right);
        row[j]      = row[j] + OMEGA * (avg - row[j]);
    }
}

static inline void sor_init_row(float *row, long n, long i)
{
    for (long j = 0; j < n; j++) {
        row[j] = (i == 0) ? 1.0f : 0.0f; /* the top edge is hot, the rest cold */
    }
}

/* Each process initializes its band [lo, hi); process 0 also the two edge rows. */
static inline void sor_init_band(float *grid, long n, long lo, long hi)
{
    for (long i = lo; i < hi; i++) {
        sor_init_row(grid + i * n, n, i);
    }
    if (cm_rank() == 0) {
        sor_init_row(grid, n, 0);
        sor_init_row(grid + (n + 1) * n, n, n + 1);
    }
}

/* Rank 0: the grid against a private sequential run of iters iterations, every value. */
static inline bool sor_check(const char *name, const float *grid, long n, long iters)
{
    const long rows = n + 2;
    float *ref = malloc((size_t)rows * (size_t)n * sizeof(float));
    long bad = 0;

    if (ref == NULL) {
        cm_abort(1, "%s: out of memory for the reference grid", name);
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
            fprintf(stderr, "%s: row %ld column %ld: %.9g, sequential %.9g\n", name, x / n, x % n,
                    (double)grid[x], (double)ref[x]);
        }
    }
    free(ref);
    return bad == 0;
}

#endif
