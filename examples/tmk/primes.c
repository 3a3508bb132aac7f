/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * primes: a TreadMarks program (Tmk.h) that counts the primes below LIMIT.
 * Process 0 allocates the shared work record and hands its address to the
 * others with Tmk_distribute; every process then takes chunks of numbers from
 * a shared counter under one lock and adds what it found to the total under
 * another. Process 0 checks the total against a sequential count.
 *
 *   make && cmrun -n 2 ./primes
 */
#include <Tmk.h>

#include <stdio.h>

#define LIMIT 200000 /* count the primes below this */
#define CHUNK 5000   /* numbers handed out at a time */

#define NEXT_LOCK  0 /* guards work->next */
#define TOTAL_LOCK 1 /* guards work->primes */

struct work {
    int next;                 /* first number not handed out yet */
    long primes;              /* primes found so far */
    int chunks[TMK_NPROCS];   /* chunks done per process: each writes only its own */
};

/* A global, not a local: Tmk_distribute copies a global's value to the same global in the
 * other processes. */
static struct work *work;

static int is_prime(int k)
{
    if (k < 2) {
        return 0;
    }
    for (int d = 2; d * d <= k; d++) {
        if (k % d == 0) {
            return 0;
        }
    }
    return 1;
}

static long count_primes(int lo, int hi)
{
    long found = 0;
    for (int k = lo; k < hi; k++) {
        found += is_prime(k);
    }
    return found;
}

int main(int argc, char **argv)
{
    Tmk_startup(argc, argv); /* every process runs main */

    if (Tmk_proc_id == 0) {
        work = Tmk_malloc(sizeof *work); /* not collective: only process 0 allocates */
        if (work == NULL) {
            fprintf(stderr, "primes: Tmk_malloc failed\n");
            Tmk_exit(1);
        }
        work->next = 0;
        work->primes = 0;
        for (int p = 0; p < TMK_NPROCS; p++) {
            work->chunks[p] = 0;
        }
        Tmk_distribute(&work, sizeof work); /* the others get the pointer at the barrier */
    }
    Tmk_barrier(0);

    for (;;) {
        Tmk_lock_acquire(NEXT_LOCK);
        int lo = work->next;
        work->next += CHUNK;
        Tmk_lock_release(NEXT_LOCK);
        if (lo >= LIMIT) {
            break;
        }
        long found = count_primes(lo, lo + CHUNK < LIMIT ? lo + CHUNK : LIMIT);

        Tmk_lock_acquire(TOTAL_LOCK);
        work->primes += found;
        Tmk_lock_release(TOTAL_LOCK);
        work->chunks[Tmk_proc_id]++; /* no lock: no other process writes this word */
    }
    Tmk_barrier(1); /* every process's updates, locked or not, are visible after it */

    int status = 0;
    if (Tmk_proc_id == 0) {
        long expected = count_primes(0, LIMIT);
        int chunks = 0;
        for (unsigned p = 0; p < Tmk_nprocs; p++) {
            chunks += work->chunks[p];
        }
        status = work->primes != expected || chunks != (LIMIT + CHUNK - 1) / CHUNK;
        printf("primes: %s (%ld primes below %d, expected %ld; chunks per process:",
               status ? "FAILED" : "OK", work->primes, LIMIT, expected);
        for (unsigned p = 0; p < Tmk_nprocs; p++) {
            printf(" %d", work->chunks[p]);
        }
        printf(")\n");
    }
    Tmk_exit(status); /* waits for every process */
}
