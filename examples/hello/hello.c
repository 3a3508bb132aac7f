/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hello: the smallest Cashmere-RMA program. Every process writes its own slot
 * of a shared array; after a barrier process 0 reads them all.
 *
 *   make && cmrun -n 2 ./hello
 */
#include <cm.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    cm_init(&argc, &argv); /* every process runs main (SPMD) */
    int me = cm_rank(), n = cm_nprocs();

    /* Collective: every process calls it alike and gets the same address. */
    int *slot = cm_malloc(n * sizeof *slot);
    slot[me] = 10 * (me + 1); /* not 0: a write that went missing would show */

    /* What every process wrote before the barrier, every process sees after it. */
    cm_barrier();

    if (me == 0) {
        const char *variant = cm_variant_name(); /* NULL under TreadMarks */
        printf("hello: %d processes (%s%s%s), slots:", n, cm_protocol_name(),
               variant ? " " : "", variant ? variant : "");
        for (int i = 0; i < n; i++) {
            printf(" %d", slot[i]);
        }
        printf("\n");
    }
    cm_finalize();
    return 0;
}
