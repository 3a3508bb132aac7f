/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * locks: a shared counter that every process increments under a lock, in two
 * phases separated by barriers. A lost update would show in the totals.
 *
 *   make && cmrun -n 2 ./locks
 */
#include <cm.h>

#include <stdio.h>

#define ROUNDS       500 /* increments per process per phase */
#define COUNTER_LOCK 0   /* the lock that guards *counter: lock ids are 0..CM_LOCKS-1 */

/* Adds delta to *counter ROUNDS times, each under the lock. */
static void add(long *counter, long delta)
{
    for (int i = 0; i < ROUNDS; i++) {
        cm_lock_acquire(COUNTER_LOCK); /* sees what the last holder wrote */
        *counter += delta;
        cm_lock_release(COUNTER_LOCK); /* the next holder will see this write */
    }
}

/* Every process checks the total (a barrier made every update visible). */
static int check(const char *phase, long got, long expected)
{
    if (got != expected) {
        fprintf(stderr, "locks: process %d, %s: counter %ld, expected %ld\n", cm_rank(), phase,
                got, expected);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    long n = cm_nprocs();
    int bad = 0;

    long *counter = cm_malloc(sizeof *counter);
    if (cm_rank() == 0) {
        *counter = 0; /* initialization, by one process */
    }
    cm_barrier();

    /* Phase 1: every process adds 1, ROUNDS times. */
    add(counter, 1);
    cm_barrier();
    bad |= check("after phase 1", *counter, n * ROUNDS);
    cm_barrier(); /* everyone has read the total before anyone changes it again */

    /* Phase 2: process r adds r + 1, ROUNDS times. */
    add(counter, cm_rank() + 1);
    cm_barrier();
    bad |= check("after phase 2", *counter, n * ROUNDS + ROUNDS * n * (n + 1) / 2);

    if (cm_rank() == 0 && !bad) {
        printf("locks: OK (%ld processes, %ld updates under one lock, total %ld)\n", n,
               2 * n * ROUNDS, *counter);
    }
    cm_finalize();
    return bad; /* non-zero on any process: cmrun exits non-zero */
}
