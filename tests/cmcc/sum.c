/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A program that knows nothing of the runtime's internals: only cm.h. Each
 * process fills its part of a shared array; after a barrier every process
 * sums all of it. Built by cmcc in test_cmcc.sh.
 */
#include <cm.h>
#include <stdio.h>
#include <string.h>

#define N 100000

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    int me = cm_rank(), np = cm_nprocs();
    long *a = cm_malloc(N * sizeof(long));
    long sum = 0, want = (long)N * (N - 1) / 2;
    char *msg = cm_malloc(64);

    for (long i = me; i < N; i += np) {
        a[i] = i;
    }
    if (me == 0) {
        strcpy(msg, "written through a libc call"); /* interposed or instrumented */
    }
    cm_barrier();
    for (long i = 0; i < N; i++) {
        sum += a[i];
    }
    printf("rank %d: sum %ld %s, message '%s'\n", me, sum, sum == want ? "VERIFY OK" : "VERIFY FAILED",
           msg);
    cm_finalize();
    return sum == want ? 0 : 1;
}
