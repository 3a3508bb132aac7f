/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared memory read by libc and the kernel rather than by the program's own
 * (instrumented) loads: printf's %s, puts, fputs, fwrite and write(2) of
 * shared text, strtol, strtod, atoi, strchr, strstr, sscanf and bsearch on
 * shared strings and tables, qsort of a shared array. Process 0 first reads
 * every slot (so that under software line fills its copy holds their lines),
 * then the other workers rewrite them, and after WAIT_FOR_END process 0 hands
 * the slots to libc. A read that is not made current first sees the old
 * lines: the output then differs from the threaded build's (RAYTRACE's image,
 * written with fwrite, came out wrong this way). And libc writing several
 * fields of one line in one call (sscanf into a fresh shared struct, as
 * RAYTRACE reads its scene with fscanf): a line made current only after the
 * call would bring the home's old bytes back over all but the first field.
 *
 *   cmrun -n P p_reads P
 */
MAIN_ENV

#define MAXP   64
#define NSORT  64

struct slot {
    char text[120];
    char number[40];
    char words[64];
    long table[NSORT];     /* sorted by its writer: bsearch'ed */
    long unsorted[NSORT];  /* qsort'ed by process 0 */
};

struct fresh {
    double v[6];            /* 48 bytes in one 64-byte line: one sscanf writes them all */
    double pad[2];
};

struct global {
    LOCKDEC(idlock)
    BARDEC(bar)
    long id;
    long seen;
};

struct global *Global;
struct slot *slots;
struct fresh *fresh;
long P;

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static void fill_old(struct slot *s, long k)
{
    snprintf(s->text, sizeof(s->text), "old text of slot %ld", k);
    snprintf(s->number, sizeof(s->number), "%ld", 1000 + k);
    snprintf(s->words, sizeof(s->words), "old words %ld", k);
    for (int i = 0; i < NSORT; i++) {
        s->table[i] = i;
        s->unsorted[i] = i;
    }
}

void Work(void);
void Work(void)
{
    long me, sum = 0;
    struct slot *s;

    LOCK(Global->idlock)
    me = Global->id++;
    UNLOCK(Global->idlock)
    /* Everyone reads every slot: the lines are in each copy now. */
    for (long k = 0; k < P; k++) {
        for (size_t i = 0; i < sizeof(struct slot); i++) {
            sum += ((const volatile char *)&slots[k])[i];
        }
    }
    LOCK(Global->idlock)
    Global->seen += sum != 0;
    UNLOCK(Global->idlock)
    BARRIER(Global->bar, P)
    /* The worker after k rewrites slot k (every slot, whatever P is). */
    for (long k = 0; k < P; k++) {
        if ((k + 1) % P != me) {
            continue;
        }
        s = &slots[k];
        for (int i = 0; i < (int)sizeof(s->text) - 1; i++) {
            s->text[i] = (char)('a' + (i + (int)k) % 26);
        }
        s->text[sizeof(s->text) - 1] = '\0';
        s->text[40] = ':';
        s->text[41] = ' ';
        for (int i = 0; i < 12; i++) {
            s->number[i] = "2718281828.5"[i];
        }
        s->number[12] = '\0';
        s->number[0] = (char)('0' + (char)(k % 10));
        for (int i = 0; i < 20; i++) {
            s->words[i] = "new words here, sir!"[i];
        }
        s->words[20] = '\0';
        for (int i = 0; i < NSORT; i++) {
            s->table[i] = 3 * i + k;
            s->unsorted[i] = (i * 37 + k * 11) % 101;
        }
        if (sscanf("1.5 -2.25 3e3 4.125 -5.5 6.0625", "%lf %lf %lf %lf %lf %lf", &fresh[k].v[0],
                   &fresh[k].v[1], &fresh[k].v[2], &fresh[k].v[3], &fresh[k].v[4],
                   &fresh[k].v[5]) != 6) {
            exit(1);
        }
        fresh[k].v[0] += (double)k;
    }
    BARRIER(Global->bar, P)
}

int main(int argc, char **argv)
{
    char buf[200];
    long a, b;
    double d;

    P = (argc > 1) ? atol(argv[1]) : 1;
    if (P < 1 || P > MAXP) {
        fprintf(stderr, "usage: p_reads P\n");
        exit(1);
    }
    MAIN_INITENV()
    Global = (struct global *) G_MALLOC(sizeof(struct global));
    slots = (struct slot *) G_MALLOC(P * sizeof(struct slot));
    fresh = (struct fresh *) G_MALLOC(P * sizeof(struct fresh));
    LOCKINIT(Global->idlock)
    BARINIT(Global->bar, P)
    Global->id = 0;
    Global->seen = 0;
    for (long k = 0; k < P; k++) {
        fill_old(&slots[k], k);
        for (int i = 0; i < 8; i++) {
            fresh[k].v[i % 6] = -1.0;
        }
    }
    CREATE(Work, P)
    WAIT_FOR_END(P)
    fflush(stdout);
    for (long k = 0; k < P; k++) {
        struct slot *s = &slots[k];
        long key = 3 * 17 + k, *hit;
        int n;
        printf("slot %ld printf: [%s] [%.10s] [%-22s|]\n", k, s->text, s->text + 42, s->words);
        fputs("fputs: ", stdout);
        fputs(s->words, stdout);
        puts(s->number);
        fwrite(s->text, 1, 30, stdout);
        fputc('\n', stdout);
        fflush(stdout);
        n = snprintf(buf, sizeof(buf), "write: %.*s\n", 20, s->text + 20);
        if (write(STDOUT_FILENO, buf, (size_t)n) != n) {
            exit(1);
        }
        a = strtol(s->number, NULL, 10);
        d = strtod(s->number, NULL);
        b = atoi(s->number);
        printf("numbers: strtol %ld strtod %.1f atoi %ld", a, d, b);
        printf(" strchr %s strstr %s", strchr(s->text, ':') ? strchr(s->text, ':') + 2 : "-",
               strstr(s->words, "sir") ? "found" : "lost");
        if (sscanf(s->words, "new words %40s", buf) == 1) {
            printf(" sscanf %s", buf);
        }
        hit = bsearch(&key, s->table, NSORT, sizeof(long), cmp_long);
        qsort(s->unsorted, NSORT, sizeof(long), cmp_long);
        printf(" bsearch %ld qsort %ld %ld %ld\n", hit ? (long)(hit - s->table) : -1L,
               s->unsorted[0], s->unsorted[NSORT / 2], s->unsorted[NSORT - 1]);
        printf("sscanf'd: %g %g %g %g %g %g\n", fresh[k].v[0], fresh[k].v[1], fresh[k].v[2],
               fresh[k].v[3], fresh[k].v[4], fresh[k].v[5]);
    }
    printf("p_reads: %ld workers read every slot first\n", Global->seen);
    MAIN_END
}
