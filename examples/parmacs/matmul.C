/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * matmul: C = A x B written with the PARMACS macros, as SPLASH programs are.
 * main initializes the shared matrices, CREATE starts the P workers (one per
 * process), each takes a worker number from a locked counter and computes a
 * band of C's rows; WAIT_FOR_END lets only process 0 go on, to check C.
 *
 *   make && cmrun -n 2 ./matmul -p2      (-p must be the number of processes)
 */
MAIN_ENV

#define N 128

struct global {
    LOCKDEC(idlock)  /* guards id */
    LOCKDEC(sumlock) /* guards sum */
    BARDEC(bar)
    long id;         /* the next worker number */
    long sum;        /* the sum of C's entries */
    long *a, *b, *c; /* N x N, row-major; integers, so the check can be exact */
};

struct global *Global;
long P = 1; /* processes, from -p as in SPLASH; the same in every process */

static void Work(void)
{
    long me, part = 0;

    LOCK(Global->idlock)
    me = Global->id++;
    UNLOCK(Global->idlock)

    const long *a = Global->a, *b = Global->b;
    long *c = Global->c;
    for (long i = N * me / P; i < N * (me + 1) / P; i++) {
        for (long j = 0; j < N; j++) {
            long s = 0;
            for (long k = 0; k < N; k++) {
                s += a[i * N + k] * b[k * N + j];
            }
            c[i * N + j] = s;
            part += s;
        }
    }
    LOCK(Global->sumlock)
    Global->sum += part; /* one locked update per worker, not one per entry */
    UNLOCK(Global->sumlock)
    BARRIER(Global->bar, P)
}

int main(int argc, char **argv)
{
    int opt;

    while ((opt = getopt(argc, argv, "p:")) != -1) {
        if (opt != 'p' || (P = atol(optarg)) < 1) {
            fprintf(stderr, "usage: matmul -pP (P: the number of processes)\n");
            exit(1);
        }
    }
    MAIN_INITENV()
    /* Until CREATE only process 0's writes reach shared memory (the others compute the same
     * on a private stand-in), so main initializes as if it ran alone. */
    Global = (struct global *) G_MALLOC(sizeof(struct global));
    Global->a = (long *) G_MALLOC(N * N * sizeof(long));
    Global->b = (long *) G_MALLOC(N * N * sizeof(long));
    Global->c = (long *) G_MALLOC(N * N * sizeof(long));
    for (long i = 0; i < N; i++) {
        for (long j = 0; j < N; j++) {
            Global->a[i * N + j] = i + j;
            Global->b[i * N + j] = i - j;
        }
    }
    LOCKINIT(Global->idlock)
    LOCKINIT(Global->sumlock)
    BARINIT(Global->bar)
    Global->id = 0;
    Global->sum = 0;

    CREATE(Work, P) /* SPLASH-3 form: every process runs Work once */
    WAIT_FOR_END(P) /* only process 0 continues */

    /* Recompute every entry sequentially and compare. */
    long bad = 0, sum = 0;
    for (long i = 0; i < N; i++) {
        for (long j = 0; j < N; j++) {
            long s = 0;
            for (long k = 0; k < N; k++) {
                s += Global->a[i * N + k] * Global->b[k * N + j];
            }
            bad += Global->c[i * N + j] != s;
            sum += s;
        }
    }
    if (bad != 0 || Global->sum != sum || Global->id != P) {
        printf("matmul: FAILED (%ld of %d entries wrong, sum %ld, expected %ld, %ld workers)\n",
               bad, N * N, Global->sum, sum, Global->id);
        exit(1);
    }
    printf("matmul: OK (%d x %d, sum %ld, %ld workers)\n", N, N, sum, P);
    MAIN_END
}
