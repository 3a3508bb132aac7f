/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Jobs that wait forever or die, on purpose, through the public API only: for the stuck-wait
 * lines (CM_STUCK_REPORT) and cmrun --timeout (tests/mp/test_stuck.sh), and for how cmrun
 * names a rank that dies (tests/mp/test_failures.sh).
 *
 *   deadlock   ranks 0 and 1 each take a lock, meet in a barrier, then ask for the other's
 *              lock (two locks taken in opposite order); the others wait in a barrier
 *   compute S  rank 0 computes outside the library for S seconds, the others wait for it in
 *              a barrier; then the job ends normally
 *   die HOW    rank 1 dies after a barrier, the others wait in the next: HOW is double-free
 *              (glibc aborts), assert, segv (a store through a null pointer) or kill9
 */
#undef NDEBUG /* the assert below must fire */
#include "cm.h"

#include <assert.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int me, np;

    cm_init(&argc, &argv);
    me = cm_rank();
    np = cm_nprocs();
    if (argc >= 2 && strcmp(argv[1], "deadlock") == 0 && np >= 2) {
        int first = (me == 0) ? 1 : 2, second = (me == 0) ? 2 : 1;

        if (me <= 1) {
            cm_lock_acquire(first);
        }
        cm_barrier();
        if (me <= 1) {
            printf("mp_stuck: rank %d holds lock %d and asks for lock %d\n", me, first, second);
            fflush(stdout);
            cm_lock_acquire(second); /* never granted */
        }
        cm_barrier();
        printf("mp_stuck: the deadlock ended?\n");
    } else if (argc >= 3 && strcmp(argv[1], "compute") == 0) {
        double until = now_s() + atof(argv[2]);
        volatile unsigned long spin = 0;

        cm_barrier();
        if (me == 0) {
            while (now_s() < until) {
                spin++;
            }
        }
        cm_barrier();
        if (me == 0) {
            printf("mp_stuck: computed %.1f s\n", atof(argv[2]));
        }
    } else if (argc >= 3 && strcmp(argv[1], "die") == 0 && np >= 2) {
        cm_barrier();
        if (me == 1) {
            const char *how = argv[2];

            if (strcmp(how, "double-free") == 0) {
                char *volatile p = malloc(64);
                free(p);
                free(p);
            } else if (strcmp(how, "assert") == 0) {
                assert(how[0] == 'x' && "rank 1 fails on purpose");
            } else if (strcmp(how, "segv") == 0) {
                volatile int *nowhere = (volatile int *)(uintptr_t)(argc * 0);
                *nowhere = 1;
            } else {
                raise(SIGKILL);
            }
        }
        cm_barrier();
    } else {
        fprintf(stderr, "usage: mp_stuck deadlock | compute SECONDS | die HOW (2 or more "
                        "processes)\n");
        cm_finalize();
        return 2;
    }
    cm_finalize();
    return 0;
}
