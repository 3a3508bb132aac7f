/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A table of pointers built by main before CREATE and used by every worker:
 * functions, globals, string constants, memory from malloc (private: in one
 * threaded address space any thread may use it) and from G_MALLOC. Built as
 * a position-independent executable (Debian's default), each process's own
 * function and global addresses differ unless the runtime fixes the layout,
 * and malloc's pointers differ unless the program's heap replays alike.
 *
 *   cmrun -n P p_ptrs P
 *
 * P_PTRS_SKEW=1: processes other than rank 0 (PMIX_RANK) malloc one block more
 * before the table, as a rank-dependent allocation would: the runtime must say
 * so at CREATE.
 */
MAIN_ENV

#define MAXP 64
#define NENT 48

typedef long (*op_t)(long, long);

struct entry {
    op_t        op;      /* a function of the program */
    long        *global; /* a global of the program */
    const char  *name;   /* a string constant */
    long        *priv;   /* malloc'ed before CREATE */
    long        *shared; /* G_MALLOC'ed before CREATE */
};

struct global {
    LOCKDEC(idlock)
    BARDEC(bar)
    long id;
    struct entry table[NENT];
    long result[MAXP];
};

struct global *Global;
long P;
long weights[NENT];
void *volatile skew;

/* Unsigned arithmetic: with P_PTRS_SKEW the shifted pointers read whatever lies there, and
 * that must give a wrong number, not undefined behaviour (the UBSan build stops on it). */
static long op_add(long a, long b) { return (long)(((unsigned long)a + (unsigned long)b) % 1000003); }
static long op_mul(long a, long b) { return (long)(((unsigned long)a * (unsigned long)b) % 1000003); }
static long op_xor(long a, long b) { return (a ^ b) % 1000003; }
static const op_t ops[] = {op_add, op_mul, op_xor};
static const char *const names[] = {"add", "mul", "xor"};

void Work(void);
void Work(void)
{
    long me, acc = 0;

    LOCK(Global->idlock)
    me = Global->id++;
    UNLOCK(Global->idlock)
    for (long k = 0; k < NENT; k++) {
        struct entry *e = &Global->table[(k + me) % NENT];
        acc = e->op(acc + (long)strlen(e->name),
                    (long)((unsigned long)*e->global + (unsigned long)e->priv[k % 4] +
                           (unsigned long)*e->shared)) % 1000003;
    }
    Global->result[me] = acc;
    BARRIER(Global->bar, P)
}

int main(int argc, char **argv)
{
    P = (argc > 1) ? atol(argv[1]) : 1;
    if (P < 1 || P > MAXP) {
        fprintf(stderr, "p_ptrs: P must be 1..%d\n", MAXP);
        exit(1);
    }
    MAIN_INITENV(,64000000)
    Global = (struct global *) G_MALLOC(sizeof(struct global));
    if (getenv("P_PTRS_SKEW") != NULL && getenv("PMIX_RANK") != NULL && atoi(getenv("PMIX_RANK")) != 0) {
        skew = malloc(64); /* kept: the rest of the heap shifts */
    }
    for (long k = 0; k < NENT; k++) {
        struct entry *e = &Global->table[k];
        long *priv = (long *) malloc(4 * sizeof(long) + (size_t)k * 24); /* sizes vary */
        long *sh = (long *) G_MALLOC(sizeof(long));
        weights[k] = 3 * k + 1;
        for (int i = 0; i < 4; i++) {
            priv[i] = k * 10 + i;
        }
        *sh = 1000 - k;
        e->op = ops[k % 3];
        e->global = &weights[k];
        e->name = names[k % 3];
        e->priv = priv;
        e->shared = sh;
        if (k % 5 == 0) {
            free(malloc(100 + (size_t)k)); /* the heap's history differs from a bump pointer */
        }
    }
    LOCKINIT(Global->idlock)
    BARINIT(Global->bar, P)
    Global->id = 0;
    CREATE(Work, P)
    WAIT_FOR_END(P - 1)
    for (long m = 0; m < P; m++) {
        printf("p_ptrs: worker %ld: %ld\n", m, Global->result[m]);
    }
    MAIN_END
}
