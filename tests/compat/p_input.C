/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Input read before MAIN_INITENV, and a shared allocation whose size comes
 * from it (WATER reads its parameters before MAIN_INITENV; OCEAN, BARNES
 * size their arrays from the input). Every process must see the input from
 * its first byte (cmrun --stdin), or the processes other than 0 compute other
 * sizes, other G_MALLOC addresses and another program.
 *
 *   cmrun -n P --stdin input p_input P
 *   input: "TITLE ROWS COLS SCALE" then ROWS*COLS is filled from a seed
 */
MAIN_ENV

#define MAXP 64

struct global {
    LOCKDEC(idlock)
    BARDEC(bar)
    long id;
    double part[MAXP];
};

struct global *Global;
double *matrix;
char title[64];
long rows, cols, P;
double scale;

void Work(void);
void Work(void)
{
    long me;
    double s = 0.0;

    LOCK(Global->idlock)
    me = Global->id++;
    UNLOCK(Global->idlock)
    for (long i = me; i < rows; i += P) {
        for (long j = 0; j < cols; j++) {
            s += matrix[i * cols + j] * scale;
        }
    }
    Global->part[me] = s;
    BARRIER(Global->bar, P)
}

int main(int argc, char **argv)
{
    unsigned long seed;
    double total = 0.0;

    /* Before the runtime is initialized, as WATER-NSQUARED does. */
    if (scanf("%63s %ld %ld %lf %lu", title, &rows, &cols, &scale, &seed) != 5 || rows < 1 ||
        cols < 1) {
        fprintf(stderr, "p_input: expected \"TITLE ROWS COLS SCALE SEED\" on stdin\n");
        exit(1);
    }
    P = (argc > 1) ? atol(argv[1]) : 1;
    if (P < 1 || P > MAXP) {
        fprintf(stderr, "p_input: P must be 1..%d\n", MAXP);
        exit(1);
    }
    MAIN_INITENV(,64000000)
    printf("%s: %ld x %ld (%ld bytes shared), P = %ld\n", title, rows, cols,
           (long)(rows * cols * sizeof(double)), P);
    Global = (struct global *) G_MALLOC(sizeof(struct global));
    matrix = (double *) G_MALLOC(rows * cols * sizeof(double));
    for (long i = 0; i < rows * cols; i++) {
        seed = seed * 6364136223846793005ul + 1442695040888963407ul;
        matrix[i] = (double)(seed >> 44) / 1024.0;
    }
    LOCKINIT(Global->idlock)
    BARINIT(Global->bar, P)
    Global->id = 0;
    CREATE(Work, P)
    WAIT_FOR_END(P - 1)
    for (long k = 0; k < P; k++) {
        total += Global->part[k];
    }
    printf("%s: sum %.6f\n", title, total);
    MAIN_END
}
