/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Needs libm (sqrt of a value known only at run time): built in test_cmcc.sh
 * with `cmcc -o prog norm.c -l m`, the argument order a newcomer might use.
 */
#include <cm.h>
#include <math.h>
#include <stdio.h>

#define N 4096

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    int me = cm_rank(), np = cm_nprocs();
    double *a = cm_malloc(N * sizeof(double));

    for (int i = me; i < N; i += np) {
        a[i] = (double)i;
    }
    cm_barrier();
    double ss = 0;
    for (int i = 0; i < N; i++) {
        ss += a[i] * a[i];
    }
    double want = sqrt((double)(N - 1) * N * (2.0 * N - 1) / 6), got = sqrt(ss);
    int ok = fabs(got - want) <= 1e-9 * want;
    printf("rank %d: norm %.6f %s\n", me, got, ok ? "VERIFY OK" : "VERIFY FAILED");
    cm_finalize();
    return ok ? 0 : 1;
}
