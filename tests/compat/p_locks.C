/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A SPLASH-3 style PARMACS program: `CREATE'(fn, P) with P from argv, 65536
 * locks in an array of a shared struct (water declares that many), every
 * lock-array macro, `G_MALLOC' after `CREATE' (an individual allocation whose
 * address is handed to the others through shared memory), `NU_MALLOC', `G_FREE',
 * the region-of-interest markers, a second file with `EXTERN_ENV'.
 *
 *   cmrun -n P p_locks P
 */
MAIN_ENV

#define NLOCKS 65536
#define BLOCK  512

long p_locks_checksum(const long *a, long n);

struct global {
    ALOCKDEC(locks, NLOCKS)
    LOCKDEC(idlock)
    BARDEC(bar)
    long id;
    long *counts;     /* NLOCKS counters, each guarded by its lock */
    long *blocks[64]; /* each worker's own block (`G_MALLOC' after `CREATE') */
};

struct global *Global;
long P;

static void Work(void)
{
    long me, *mine, bad = 0;

    LOCK(Global->idlock)
    me = Global->id++;
    UNLOCK(Global->idlock)
    /* Every worker bumps counters spread over all the locks, with each pair of macros. */
    for (long k = 0; k < 4096; k++) {
        long i = (k * 7919 + me * 13) % NLOCKS;
        if (k % 2) {
            ALOCK(Global->locks, i)
            Global->counts[i]++;
            AULOCK(Global->locks, i)
        } else {
            LOCK(AGETL(Global->locks, i)) /* AGETL names the lock, as in the pthreads macros */
            Global->counts[i]++;
            UNLOCK(AGETL(Global->locks, i))
        }
    }
    mine = (long *) G_MALLOC(BLOCK * sizeof(long)) /* no semicolon: the macro has it (LU relies on it) */
    for (long i = 0; i < BLOCK; i++) {
        mine[i] = me * 100000 + i;
    }
    LOCK(Global->idlock)
    Global->blocks[me] = mine;
    UNLOCK(Global->idlock)
    BARRIER(Global->bar, P)
    /* Read the next worker's block through the pointer it published. */
    long other = (me + 1) % P, *ob = Global->blocks[other];
    for (long i = 0; i < BLOCK; i++) {
        bad += ob[i] != other * 100000 + i;
    }
    if (bad != 0 || p_locks_checksum(ob, BLOCK) != p_locks_checksum(ob, BLOCK)) {
        printf("p_locks: worker %ld read %ld wrong values in worker %ld's block\n", me, bad, other);
        Global->counts[0] = -1000000; /* makes the check fail */
    }
    BARRIER(Global->bar, P)
    G_FREE(mine)
}

int main(int argc, char **argv)
{
    long total = 0, expect;

    MAIN_INITENV()
    P = (argc > 1) ? atol(argv[1]) : 1;
    Global = (struct global *) G_MALLOC(sizeof(struct global));
    Global->counts = (long *) NU_MALLOC(NLOCKS * sizeof(long));
    ALOCKINIT(Global->locks, NLOCKS)
    LOCKINIT(Global->idlock)
    BARINIT(Global->bar, P)
    Global->id = 0;
    SPLASH3_ROI_BEGIN()
    CREATE(Work, P)
    WAIT_FOR_END(P)
    SPLASH3_ROI_END()
    for (long i = 0; i < NLOCKS; i++) {
        total += Global->counts[i];
    }
    expect = 4096 * P;
    printf("p_locks: %ld increments under %d locks (expected %ld): %s\n", total, NLOCKS, expect,
           total == expect ? "OK" : "FAILED");
    if (total != expect) {
        exit(1);
    }
    MAIN_END
}
