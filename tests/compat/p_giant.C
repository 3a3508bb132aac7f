/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * OCEAN's non-contiguous layout: every grid allocated at its compiled maximum
 * (IMAX x JMAX doubles, 24 of them: 12.9 GB), of which the run touches an
 * n x n corner. Under pthreads that is untouched address space; the shared
 * region must be the same, with no size setting (before, the default 1 GiB
 * region refused the allocation, and a region large enough cost 96 bytes of
 * metadata per page of it in every process, used or not).
 *
 * Jacobi sweeps on the corner of grids 0 and 1 in bands of rows, a residual
 * summed per process and added up in order by process 0, and a probe of every
 * grid's corner; the output equals the pthreads build's.
 *
 *   cmrun -n P p_giant P [n] [sweeps]
 */
MAIN_ENV

#define IMAX   8194
#define JMAX   8194
#define NGRIDS 24
#define MAXP   64

struct global {
    LOCKDEC(idlock)
    BARDEC(bar)
    long id;
    double part[MAXP];
    double probe[MAXP];
};

struct global *Global;
double *grid[NGRIDS];
long P, N, Sweeps;

#define AT(g, i, j) (grid[g][(size_t)(i) * JMAX + (size_t)(j)])

static void Work(void)
{
    long me, lo, hi;

    LOCK(Global->idlock)
    me = Global->id++;
    UNLOCK(Global->idlock)
    lo = 1 + me * (N - 2) / P;
    hi = 1 + (me + 1) * (N - 2) / P;
    /* Each band initialized by its worker: first touch puts the pages here. */
    for (long i = lo; i < hi; i++) {
        for (long j = 0; j < N; j++) {
            AT(0, i, j) = (double)((i * 31 + j * 17) % 97) / 97.0;
            AT(1, i, j) = 0.0;
        }
    }
    BARRIER(Global->bar, P)
    for (long s = 0; s < Sweeps; s++) {
        int src = (int)(s % 2), dst = 1 - src;
        double r = 0.0;
        for (long i = lo; i < hi; i++) {
            for (long j = 1; j < N - 1; j++) {
                double v = 0.25 * (AT(src, i - 1, j) + AT(src, i + 1, j) + AT(src, i, j - 1) +
                                   AT(src, i, j + 1));
                r += (v - AT(src, i, j)) * (v - AT(src, i, j));
                AT(dst, i, j) = v;
            }
        }
        Global->part[me] = r;
        BARRIER(Global->bar, P)
        if (me == 0) {
            double sum = 0.0;
            for (long p = 0; p < P; p++) {
                sum += Global->part[p];
            }
            printf("p_giant: sweep %ld residual %.12e\n", s + 1, sum);
        }
        BARRIER(Global->bar, P)
    }
    /* Every grid's corner, one row of it per worker. */
    {
        double t = 0.0;
        for (int g = 2; g < NGRIDS; g++) {
            AT(g, me, (long)g) = (double)(g * 100 + me);
        }
        BARRIER(Global->bar, P)
        for (int g = 2; g < NGRIDS; g++) {
            for (long p = 0; p < P; p++) {
                t += AT(g, p, (long)g);
            }
        }
        Global->probe[me] = t;
    }
    BARRIER(Global->bar, P)
}

int main(int argc, char **argv)
{
    double probe = 0.0;

    P = (argc > 1) ? atol(argv[1]) : 1;
    N = (argc > 2) ? atol(argv[2]) : 130;
    Sweeps = (argc > 3) ? atol(argv[3]) : 6;
    if (P < 1 || P > MAXP || N < 4 || N > IMAX || N - 2 < P) {
        fprintf(stderr, "usage: p_giant P [n (4..%d)] [sweeps]\n", IMAX);
        exit(2);
    }
    MAIN_INITENV()
    Global = (struct global *) G_MALLOC(sizeof(struct global));
    for (int g = 0; g < NGRIDS; g++) {
        grid[g] = (double *) G_MALLOC((size_t)IMAX * JMAX * sizeof(double));
        if (grid[g] == NULL) {
            fprintf(stderr, "p_giant: cannot allocate grid %d\n", g);
            exit(1);
        }
    }
    printf("p_giant: %d grids of %d x %d doubles (%.1f GB), %ld x %ld used, P = %ld\n", NGRIDS,
           IMAX, JMAX, (double)NGRIDS * IMAX * JMAX * sizeof(double) / 1e9, N, N, P);
    /* The boundary (rows 0 and N-1) stays as main leaves it: zero, set here once. */
    for (long j = 0; j < N; j++) {
        AT(0, 0, j) = AT(1, 0, j) = 1.0;
        AT(0, N - 1, j) = AT(1, N - 1, j) = 0.5;
    }
    LOCKINIT(Global->idlock)
    BARINIT(Global->bar, P)
    Global->id = 0;
    CREATE(Work, P)
    WAIT_FOR_END(P)
    for (long p = 0; p < P; p++) {
        probe += Global->probe[p];
    }
    printf("p_giant: probe %.1f (expected %.1f)\n", probe / (double)P,
           (double)P * (100.0 * (2 + NGRIDS - 1) * (NGRIDS - 2) / 2.0) +
               (double)(NGRIDS - 2) * (double)(P * (P - 1) / 2));
    MAIN_END
}
