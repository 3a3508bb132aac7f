/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared memory written by libc and by the kernel rather than by the
 * program's own (instrumented) stores: strcpy, strcat, strncpy, sprintf,
 * snprintf, sscanf into shared variables, qsort of a shared array, fgets,
 * fread and pread (the kernel) into shared buffers. Each worker first fills
 * its own slot (so its pages move home to it on first touch), then, after a
 * barrier, writes the next worker's slot through libc: pages homed elsewhere,
 * which the writer has not mapped (protected). main prints every slot after
 * WAIT_FOR_END. A write that is not forwarded to the page's home leaves the
 * fill there, and a kernel write into a protected page fails (EFAULT): either
 * way the output differs from the threaded build's.
 *
 *   cmrun -n P p_libc P FILE      (FILE: any readable file of >= 1 KiB)
 */
MAIN_ENV
#include <fcntl.h>

#define MAXP 64

struct slot {
    char   text[96];
    char   copy[32];
    char   cat[64];
    char   ncpy[16];
    long   parsed[3];
    double fval;
    char   word[16];
    long   sorted[32];
    char   line[80];
    char   fromfile[200];
    char   pad[4096];    /* kernel[] on a page of its own: nothing else faults it in */
    char   kernel[200];
};

struct global {
    LOCKDEC(idlock)
    BARDEC(bar)
    long id;
};

struct global *Global;
struct slot *slots;
long P;
const char *path;

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static unsigned long sum(const char *p, size_t n)
{
    unsigned long s = 0;
    for (size_t i = 0; i < n; i++) {
        s = s * 31 + (unsigned char)p[i];
    }
    return s;
}

void Work(void);
void Work(void)
{
    long me;
    struct slot *s;
    FILE *f;
    int fd;

    LOCK(Global->idlock)
    me = Global->id++;
    UNLOCK(Global->idlock)
    for (size_t i = 0; i < sizeof(struct slot); i++) {
        ((char *)&slots[me])[i] = '.'; /* what a lost write would leave */
    }
    BARRIER(Global->bar, P)
    s = &slots[(me + 1) % P];
    sprintf(s->text, "worker %ld wrote slot %ld: %d%%", me, (me + 1) % P, 40 + (int)me);
    snprintf(s->text + 60, 30, "and %s %ld", "snprintf", me * 7);
    strcpy(s->copy, "strcpy wrote this");
    strcpy(s->cat, "cat:");
    strcat(s->cat, me % 2 ? "odd" : "even");
    strncpy(s->ncpy, "strncpy", sizeof(s->ncpy));
    sscanf("17 -5 123456789 2.5 hello", "%ld %ld %ld %lf %15s", &s->parsed[0], &s->parsed[1],
           &s->parsed[2], &s->fval, s->word);
    s->parsed[0] += me;
    for (int i = 0; i < 32; i++) {
        s->sorted[i] = (i * 37 + me * 11) % 101;
    }
    qsort(s->sorted, 32, sizeof(long), cmp_long);
    f = fopen(path, "r");
    if (f == NULL || fseek(f, me * 13, SEEK_SET) != 0 || fgets(s->line, sizeof(s->line), f) == NULL ||
        fread(s->fromfile, 1, sizeof(s->fromfile), f) != sizeof(s->fromfile)) {
        fprintf(stderr, "p_libc: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    fd = open(path, O_RDONLY);
    if (fd < 0 || pread(fd, s->kernel, sizeof(s->kernel), 300 + me) != (ssize_t)sizeof(s->kernel)) {
        fprintf(stderr, "p_libc: cannot pread %s\n", path);
        exit(1);
    }
    close(fd);
    BARRIER(Global->bar, P)
}

int main(int argc, char **argv)
{
    P = (argc > 1) ? atol(argv[1]) : 1;
    path = (argc > 2) ? argv[2] : NULL;
    if (P < 1 || P > MAXP || path == NULL) {
        fprintf(stderr, "usage: p_libc P FILE\n");
        exit(1);
    }
    MAIN_INITENV(,64000000)
    Global = (struct global *) G_MALLOC(sizeof(struct global));
    slots = (struct slot *) G_MALLOC(P * sizeof(struct slot));
    LOCKINIT(Global->idlock)
    BARINIT(Global->bar, P)
    Global->id = 0;
    CREATE(Work, P)
    WAIT_FOR_END(P - 1)
    for (long k = 0; k < P; k++) {
        struct slot *s = &slots[k];
        printf("slot %ld: [%s] [%s] [%s] [%s] [%.*s]\n", k, s->text, s->text + 60, s->copy, s->cat,
               (int)sizeof(s->ncpy), s->ncpy);
        printf("slot %ld: sscanf %ld %ld %ld %.2f %s; qsort", k, s->parsed[0], s->parsed[1],
               s->parsed[2], s->fval, s->word);
        for (int i = 0; i < 32; i += 4) {
            printf(" %ld", s->sorted[i]);
        }
        printf("\nslot %ld: fgets %lu fread %lu pread %lu\n", k, sum(s->line, sizeof(s->line)),
               sum(s->fromfile, sizeof(s->fromfile)), sum(s->kernel, sizeof(s->kernel)));
    }
    MAIN_END
}
