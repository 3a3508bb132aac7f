/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A SPLASH-2 style PARMACS program: input on stdin ("N P"), shared data
 * initialized by main before `CREATE' (including a read-modify-write that
 * would double if every process's initialization reached shared memory),
 * `CREATE' called P-1 times with main running the worker itself, ids from a
 * locked counter, barriers, a locked reduction, `WAIT_FOR_END', `CLOCK', `GET_PID'.
 *
 *   cmrun -n P --stdin input p_sum      (input: "N P")
 */
MAIN_ENV

struct global {
    LOCKDEC(idlock)
    LOCKDEC(sumlock)
    BARDEC(start)
    long id;
    long sum;
    long initcount;
    long pids[64];
    long *data;
};

struct global *Global;
long N, P;

static void Work(void);

static void Work(void)
{
    long MyNum, pid, lo, hi, part = 0;

    LOCK(Global->idlock)
    MyNum = Global->id++;
    UNLOCK(Global->idlock)
    GET_PID(pid)
    Global->pids[MyNum] = pid;
    BARRIER(Global->start, P)
    lo = N * MyNum / P;
    hi = N * (MyNum + 1) / P;
    for (long i = lo; i < hi; i++) {
        part += Global->data[i];
    }
    LOCK(Global->sumlock)
    Global->sum += part;
    UNLOCK(Global->sumlock)
    BARRIER(Global->start, P)
}

int main(void)
{
    unsigned long t0, t1;
    int ok = 1;

    MAIN_INITENV(,64000000)
    if (scanf("%ld %ld", &N, &P) != 2 || N < 1 || P < 1 || P > 64) {
        fprintf(stderr, "p_sum: expected \"N P\" on stdin\n");
        exit(1);
    }
    printf("p_sum: N = %ld, P = %ld\n", N, P);
    Global = (struct global *) G_MALLOC(sizeof(struct global));
    Global->data = (long *) G_MALLOC(N * sizeof(long));
    for (long i = 0; i < N; i++) {
        Global->data[i] = i % 1000;
    }
    LOCKINIT(Global->idlock)
    LOCKINIT(Global->sumlock)
    BARINIT(Global->start)
    Global->id = 0;
    Global->sum = 0;
    Global->initcount += 1; /* once: only one initialization reaches shared memory */
    CLOCK(t0)
    for (long i = 1; i < P; i++) {
        CREATE(Work)
    }
    Work();
    WAIT_FOR_END(P - 1)
    CLOCK(t1)

    long expect = 0;
    for (long i = 0; i < N; i++) {
        expect += i % 1000;
    }
    for (long a = 0; a < P; a++) {
        for (long b = a + 1; b < P; b++) {
            if (Global->pids[a] == Global->pids[b]) {
                printf("p_sum: workers %ld and %ld have the same pid %ld\n", a, b, Global->pids[a]);
                ok = 0;
            }
        }
    }
    if (Global->sum != expect || Global->initcount != 1 || Global->id != P) {
        ok = 0;
    }
    printf("p_sum: sum %ld (expected %ld), initcount %ld, ids %ld, %lu us: %s\n", Global->sum,
           expect, Global->initcount, Global->id, t1 - t0, ok ? "OK" : "FAILED");
    if (!ok) {
        exit(1);
    }
    MAIN_END
}
