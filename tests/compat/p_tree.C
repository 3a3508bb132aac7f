/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two waiting patterns of SPLASH programs, each a wait on a shared word that
 * another process sets, repeated in rounds:
 *
 *   prefix  RADIX's parallel prefix sum: a binary tree of nodes, one PAUSE flag
 *           each. Going up, the even child's process opens the parent's flag and
 *           the odd child's process waits on it, clears it and sums both
 *           children into the parent; going down, each process waits for its
 *           node's flag and takes the sum of everything to its left.
 *   tree    BARNES's centre-of-mass pass: cells inserted into a tree under
 *           per-cell locks (ALOCK), then each process finishes the cells it
 *           created, deepest first, waiting on each child's condition variable
 *           (CONDVARWAIT in a `while (!Done(child))' loop) before it adds the
 *           child in and broadcasts its own `Done'.
 *
 * Every wait is on a word that PARMACS keeps in shared memory and that the
 * runtime, not the program, reads: with software line fills (the NS variants)
 * these hung before the runtime made its own reads current (RADIX and BARNES
 * stopped the same way). The results print per round, with the time the round
 * took (the kind of line an output comparison must ignore); the pthreads build
 * (tests/compat/pthreads.m4) prints the same results.
 *
 *   cmrun -n P p_tree P [rounds]      (P a power of two, as RADIX requires)
 */
MAIN_ENV

#define RADIX    64
#define KEYS     4096   /* per process */
#define MAXP     64
#define DEPTH    7      /* tree levels: 2^DEPTH - 1 cells */
#define NCELLS   ((1 << DEPTH) - 1)
#define MAXLOCK  16

struct prefix_node {
    long density[RADIX];
    PAUSEDEC(done)
};

struct cell {
    long mass;          /* own mass, then the subtree's */
    long kids[2];       /* cell indices, -1: none */
    long owner;         /* the process that created it and finishes it */
    long done;
    CONDVARDEC(done_cv)
};

struct global {
    struct prefix_node node[2 * MAXP];
    long counts[MAXP][RADIX];     /* each process's histogram */
    long below[MAXP][RADIX];      /* prefix: keys with that digit on processes to the left */
    struct cell cell[NCELLS];
    long ncells;
    ALOCKDEC(cell_lock, MAXLOCK)
    LOCKDEC(idlock)
    LOCKDEC(alloc_lock)
    BARDEC(bar)
    long id;
};

struct global *Global;
long P, Rounds;

static long key_of(long proc, long i, long round)
{
    unsigned long x = (unsigned long)(proc * KEYS + i) * 2654435761ul + (unsigned long)round * 40503ul;
    return (long)((x >> 7) % RADIX);
}

/* RADIX's up and down sweeps over the prefix tree (radix.c, slave_sort). */
static void prefix_sweep(long me)
{
    struct prefix_node *n, *l, *r, *my_node, *their_node;
    long offset, level, base, i;

    n = &Global->node[me];
    for (i = 0; i < RADIX; i++) {
        n->density[i] = Global->counts[me][i];
    }
    offset = me;
    level = P >> 1;
    base = P;
    if ((me & 1) == 0) {
        SETPAUSE(Global->node[base + (offset >> 1)].done)
    }
    while ((offset & 1) != 0) {
        offset >>= 1;
        r = n;
        l = n - 1;
        n = &Global->node[base + offset];
        WAITPAUSE(n->done)
        CLEARPAUSE(n->done)
        for (i = 0; i < RADIX; i++) {
            n->density[i] = r->density[i] + l->density[i];
        }
        base += level;
        level >>= 1;
        if ((offset & 1) == 0) {
            SETPAUSE(Global->node[base + (offset >> 1)].done)
        }
    }
    BARRIER(Global->bar, P)

    /* The sum of everything to my left: the left siblings on my way up. */
    offset = me;
    level = P;
    base = 0;
    for (i = 0; i < RADIX; i++) {
        Global->below[me][i] = 0;
    }
    while (offset != 0) {
        if ((offset & 1) != 0) {
            for (i = 0; i < RADIX; i++) {
                Global->below[me][i] += Global->node[base + offset - 1].density[i];
            }
        }
        offset >>= 1;
        base += level;
        level >>= 1;
    }
    BARRIER(Global->bar, P)

    /* Down (RADIX hands each left node its sibling's sum the same way). */
    if (me != P - 1) {
        offset = me;
        level = P;
        base = 0;
        while ((offset & 1) != 0) {
            offset >>= 1;
            base += level;
            level >>= 1;
        }
        my_node = &Global->node[base + offset];
        offset >>= 1;
        base += level;
        level >>= 1;
        while ((offset & 1) != 0) {
            offset >>= 1;
            base += level;
            level >>= 1;
        }
        their_node = &Global->node[base + offset];
        WAITPAUSE(my_node->done)
        CLEARPAUSE(my_node->done)
        for (i = 0; i < RADIX; i++) {
            my_node->density[i] = their_node->density[i];
        }
    } else {
        my_node = &Global->node[2 * P - 2];
    }
    offset = me;
    level = P;
    base = 0;
    while ((offset & 1) != 0) {
        SETPAUSE(Global->node[base + offset - 1].done)
        offset >>= 1;
        base += level;
        level >>= 1;
    }
    BARRIER(Global->bar, P)
}

/* Cell c (heap order: kids 2c+1, 2c+2) created by process c % P, then linked to its parent. */
static void tree_build(long me, long round)
{
    for (long c = me; c < NCELLS; c += P) {
        ALOCK(Global->cell_lock, c % MAXLOCK)
        Global->cell[c].mass = (c * 7 + round * 3) % 11 + 1;
        Global->cell[c].kids[0] = -1;
        Global->cell[c].kids[1] = -1;
        Global->cell[c].owner = me;
        Global->cell[c].done = 0;
        CONDVARINIT(Global->cell[c].done_cv)
        AULOCK(Global->cell_lock, c % MAXLOCK)
        LOCK(Global->alloc_lock)
        Global->ncells++;
        UNLOCK(Global->alloc_lock)
    }
    BARRIER(Global->bar, P)
    for (long c = me; c < NCELLS; c += P) {
        if (c > 0) {
            long parent = (c - 1) / 2;
            ALOCK(Global->cell_lock, parent % MAXLOCK)
            Global->cell[parent].kids[(c - 1) % 2] = c;
            AULOCK(Global->cell_lock, parent % MAXLOCK)
        }
    }
    BARRIER(Global->bar, P)
}

/* BARNES's hackcofm: my cells, deepest first; each waits for its children to be done. */
static void tree_finish(long me)
{
    for (long c = NCELLS - 1; c >= 0; c--) {
        struct cell *q = &Global->cell[c];
        long sum;
        if (c % P != me) {
            continue;
        }
        sum = q->mass;
        for (int k = 0; k < 2; k++) {
            long r = q->kids[k];
            if (r < 0) {
                continue;
            }
            ALOCK(Global->cell_lock, r % MAXLOCK)
            while (!Global->cell[r].done) {
                CONDVARWAIT(Global->cell[r].done_cv, Global->cell_lock[r % MAXLOCK])
            }
            AULOCK(Global->cell_lock, r % MAXLOCK)
            sum += Global->cell[r].mass;
        }
        ALOCK(Global->cell_lock, c % MAXLOCK)
        q->mass = sum;
        q->done = 1;
        CONDVARBCAST(q->done_cv)
        AULOCK(Global->cell_lock, c % MAXLOCK)
    }
    BARRIER(Global->bar, P)
}

static void Work(void)
{
    long me;

    LOCK(Global->idlock)
    me = Global->id++;
    UNLOCK(Global->idlock)
    BARRIER(Global->bar, P)

    for (long round = 1; round <= Rounds; round++) {
        unsigned long t0, t1;
        CLOCK(t0)
        for (long i = 0; i < RADIX; i++) {
            Global->counts[me][i] = 0;
        }
        for (long i = 0; i < KEYS; i++) {
            Global->counts[me][key_of(me, i, round)]++;
        }
        BARRIER(Global->bar, P)
        prefix_sweep(me);
        if (me == 0) {
            Global->ncells = 0;
        }
        BARRIER(Global->bar, P)
        tree_build(me, round);
        tree_finish(me);
        CLOCK(t1)
        if (me == 0) {
            long last = 0, lastd = 0;
            for (long i = 0; i < RADIX; i++) {
                last += Global->below[P - 1][i] * (i + 1);
                lastd += Global->node[2 * P - 2].density[i] * (i + 1);
            }
            printf("p_tree: round %ld: prefix %ld of %ld, tree mass %ld in %ld cells\n", round,
                   last, lastd, Global->cell[0].mass, Global->ncells);
            printf("p_tree: round %ld: time %lu us\n", round, t1 - t0);
        }
        BARRIER(Global->bar, P)
    }
}

int main(int argc, char **argv)
{
    long want_prefix = 0, want_total = 0, want_mass = 0;

    P = (argc > 1) ? atol(argv[1]) : 1;
    Rounds = (argc > 2) ? atol(argv[2]) : 5;
    /* Before MAIN_INITENV, as WATER echoes its input: printed once, by process 0 alone. */
    printf("p_tree: P = %ld, %ld rounds\n", P, Rounds);
    MAIN_INITENV()
    if (P < 1 || P > MAXP || (P & (P - 1)) != 0) {
        fprintf(stderr, "p_tree: P must be a power of two up to %d\n", MAXP);
        exit(2);
    }
    Global = (struct global *) G_MALLOC(sizeof(struct global));
    for (long i = 0; i < 2 * MAXP; i++) {
        PAUSEINIT(Global->node[i].done)
    }
    ALOCKINIT(Global->cell_lock, MAXLOCK)
    LOCKINIT(Global->idlock)
    LOCKINIT(Global->alloc_lock)
    BARINIT(Global->bar, P)
    Global->id = 0;
    CREATE(Work, P)
    WAIT_FOR_END(P)

    /* The last round's results, computed here once more without any waiting. */
    for (long p = 0; p < P - 1; p++) {
        for (long i = 0; i < KEYS; i++) {
            want_prefix += key_of(p, i, Rounds) + 1;
        }
    }
    for (long p = 0; p < P; p++) {
        for (long i = 0; i < KEYS; i++) {
            want_total += key_of(p, i, Rounds) + 1;
        }
    }
    for (long c = 0; c < NCELLS; c++) {
        want_mass += (c * 7 + Rounds * 3) % 11 + 1;
    }
    {
        long last = 0, lastd = 0;
        for (long i = 0; i < RADIX; i++) {
            last += Global->below[P - 1][i] * (i + 1);
            lastd += Global->node[2 * P - 2].density[i] * (i + 1);
        }
        if (last != want_prefix || lastd != want_total || Global->cell[0].mass != want_mass ||
            Global->ncells != NCELLS) {
            printf("p_tree: FAILED: prefix %ld (expected %ld), total %ld (expected %ld), mass %ld "
                   "(expected %ld), %ld cells (expected %d)\n", last, want_prefix, lastd,
                   want_total, Global->cell[0].mass, want_mass, Global->ncells, NCELLS);
            exit(1);
        }
    }
    printf("p_tree: %ld rounds: OK\n", Rounds);
    MAIN_END
}
