/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A TreadMarks program as its users wrote them (cf. the Jacobi example of the
 * TreadMarks papers): process 0 allocates the grids with Tmk_malloc and
 * hands the pointers and the iteration count to the others with
 * Tmk_distribute; bands of rows; barriers. Process 0 checks the result
 * bit-for-bit against a private sequential run.
 *
 *   cmrun -n P tmk_jacobi [iterations | stack]
 */
#include <Tmk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M 130
#define N 256

static float (*grid)[N];
static float (*scratch)[N];
static int iterations; /* only process 0 parses argv: the others learn it from Tmk_distribute */

static void init(float (*g)[N])
{
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            g[i][j] = (i == 0) ? 100.0f : (j == 0 ? 50.0f : 0.0f);
        }
    }
}

static void step(float (*g)[N], float (*s)[N], int lo, int hi)
{
    for (int i = lo; i < hi; i++) {
        for (int j = 1; j < N - 1; j++) {
            s[i][j] = (g[i - 1][j] + g[i + 1][j] + g[i][j - 1] + g[i][j + 1]) / 4.0f;
        }
    }
}

static void copy_back(float (*g)[N], float (*s)[N], int lo, int hi)
{
    for (int i = lo; i < hi; i++) {
        for (int j = 1; j < N - 1; j++) {
            g[i][j] = s[i][j];
        }
    }
}

int main(int argc, char **argv)
{
    Tmk_startup(argc, argv);
    if (Tmk_proc_id == 0) {
        if (argc > 1 && strcmp(argv[1], "stack") == 0) {
            int local = 1; /* misuse: a stack variable lives at different addresses */
            Tmk_distribute(&local, sizeof(local));
        }
        iterations = (argc > 1) ? atoi(argv[1]) : 10;
        grid    = Tmk_malloc(sizeof(float) * M * N);
        scratch = Tmk_malloc(sizeof(float) * M * N);
        if (grid == NULL || scratch == NULL) {
            fprintf(stderr, "tmk_jacobi: Tmk_malloc failed\n");
            Tmk_exit(1);
        }
        init(grid);
        Tmk_distribute(&grid, sizeof(grid));
        Tmk_distribute(&scratch, sizeof(scratch));
        Tmk_distribute(&iterations, sizeof(iterations));
    }
    Tmk_barrier(0);

    int rows = M - 2, lo = 1 + rows * (int)Tmk_proc_id / (int)Tmk_nprocs;
    int hi = 1 + rows * ((int)Tmk_proc_id + 1) / (int)Tmk_nprocs;
    for (int k = 0; k < iterations; k++) {
        step(grid, scratch, lo, hi);
        Tmk_barrier(1);
        copy_back(grid, scratch, lo, hi);
        Tmk_barrier(2);
    }

    int status = 0;
    if (Tmk_proc_id == 0) {
        static float ref[M][N], rs[M][N];
        long bad = 0;
        init(ref);
        for (int k = 0; k < iterations; k++) {
            step(ref, rs, 1, M - 1);
            copy_back(ref, rs, 1, M - 1);
        }
        for (int i = 0; i < M; i++) {
            for (int j = 0; j < N; j++) {
                bad += memcmp(&ref[i][j], &grid[i][j], sizeof(float)) != 0;
            }
        }
        printf("tmk_jacobi: %d processes, %d iterations: %s\n", (int)Tmk_nprocs, iterations,
               bad == 0 ? "OK" : "FAILED");
        status = bad != 0;
    }
    Tmk_exit(status);
}
