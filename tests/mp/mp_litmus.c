/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Release-consistency litmus tests of the shared memory, through the public
 * API only (plain loads and stores to cm_malloc'ed memory, cm_lock_*,
 * cm_barrier), each repeated with random delays to shake out races:
 *
 *   msgpass    data written before a lock release is seen after the matching acquire
 *   counter    a lock-protected shared counter reaches exactly nprocs x iters
 *   barrier    every process's writes before a barrier are seen by all after it
 *   falseshare many writers to disjoint words of the same pages merge at the home
 *   weak       pages written and read by everyone (weak; unsafe with CM_UNSAFE_THRESHOLD=0)
 *   migrate    after initialization a page's home moves to its first toucher
 *   memops     memcpy/memset/memmove into shared memory are written through too
 *   wordlocks  words of one page, each under its own lock, incremented by everyone in rotating
 *              order: a diff must carry one interval's writes, never an older one's values, and
 *              a write notice must be in its ring before anyone sees the page WEAK
 *   refill     one process fills a page, then two processes write its halves: neither half may
 *              come back with the fill's values
 *   restore    words stored again in one stretch of code, other shared stores between and no
 *              call: the compiler checks such a word once (its first check dominates the
 *              others), yet its last value must reach the home (OCEAN, BARNES)
 *   churn      words rewritten many times between two barriers, their top byte flipping
 *              back and forth, while an offload thread (CH*H, NSH*) forwards them: the
 *              home must end with the last value whole (LU lost sign bytes)
 *   bytes      writers to disjoint bytes of the same words: bytes interleaved, and an image
 *              of 91-byte rows in 4-byte-wide blocks dealt round-robin (VOLREND): a diff or
 *              a forward must carry only the bytes its writer changed
 *   reuse      pages read again in every interval (refetched at the acquire, CM_REFETCH),
 *              pages read every other interval (refetched, then left unused) and a page
 *              everyone writes (weak: a refetched copy gets no notice of later writes)
 *   keep       one process takes a lock again and again while nobody else wants it, then each
 *              other process takes it once, in rank order: each sees what the one before left
 *              (two levels: the lock stays at its host until another host asks)
 *   all        every test above
 *
 *   mp_litmus TEST [--iters N] [--seed S] [--except churn]   (all but churn: a fixed work)
 */
#include "mp_common.h"

#include <unistd.h>

static int me, np, iters = 50;
static unsigned seed = 1;

/* Random pause of 0-100 us in about a third of the calls. */
static void jitter(void)
{
    unsigned r = (unsigned)rand_r(&seed);
    if (r % 3 == 0) {
        usleep(r % 100);
    }
}

/* A lock acts as a mailbox: rank 0 posts rounds of data, the others read each round. */
static void test_msgpass(void)
{
    const size_t n = 3 * 4096 / sizeof(long) + 17; /* spans four pages */
    long *data = cm_malloc(n * sizeof(long));
    volatile long *round = cm_malloc(sizeof(long));
    long *seen = cm_malloc((size_t)np * sizeof(long)); /* each reader's last round: falsely shared */
    int lock = 3;

    cm_barrier();
    for (int k = 1; k <= iters; k++) {
        if (me == 0) {
            /* Wait until every reader consumed the previous round, then post the next. */
            for (;;) {
                int done = 1;
                cm_lock_acquire(lock);
                for (int r = 1; r < np; r++) {
                    done &= (seen[r] == k - 1);
                }
                if (done) {
                    for (size_t i = 0; i < n; i++) {
                        data[i] = (long)k * 1000003L + (long)i;
                    }
                    *round = k;
                }
                cm_lock_release(lock);
                if (done) {
                    break;
                }
                jitter();
            }
        } else {
            for (;;) {
                long r;
                cm_lock_acquire(lock);
                r = *round;
                if (r == k) {
                    for (size_t i = 0; i < n; i++) {
                        MP_CHECK(data[i] == (long)k * 1000003L + (long)i,
                                 "round %d: data[%zu] = %ld after the acquire", k, i, data[i]);
                    }
                    seen[me] = k;
                }
                cm_lock_release(lock);
                if (r == k) {
                    break;
                }
                MP_CHECK(r == k - 1, "round %ld seen while waiting for %d", r, k);
                jitter();
            }
        }
    }
    cm_barrier();
    if (me == 0) {
        printf("litmus msgpass: %d rounds to %d readers OK\n", iters, np - 1);
    }
}

static void test_counter(void)
{
    long *counter = cm_malloc(sizeof(long));
    long *other = cm_malloc(sizeof(long)); /* a second counter on a second lock */

    cm_barrier();
    for (int i = 0; i < iters; i++) {
        cm_lock_acquire(7);
        long v = *counter;
        jitter();
        *counter = v + 1;
        cm_lock_release(7);
        cm_lock_acquire(7 + np); /* same home, different lock */
        *other += 2;
        cm_lock_release(7 + np);
    }
    cm_barrier();
    MP_CHECK(*counter == (long)np * iters, "counter %ld, expected %ld", *counter, (long)np * iters);
    MP_CHECK(*other == 2L * np * iters, "second counter %ld", *other);
    cm_barrier();
    if (me == 0) {
        printf("litmus counter: %ld increments OK\n", *counter);
    }
}

static void test_keep(void)
{
    long *v = cm_malloc(sizeof(long));

    cm_barrier();
    if (me == 0) {
        for (int i = 0; i < iters; i++) {
            cm_lock_acquire(9);
            *v += 1;
            cm_lock_release(9);
        }
    }
    cm_barrier();
    for (int r = 1; r < np; r++) {
        if (me == r) {
            cm_lock_acquire(9);
            MP_CHECK(*v == iters + r - 1, "rank %d found %ld under the lock, expected %ld", me, *v,
                     (long)iters + r - 1);
            *v += 1;
            cm_lock_release(9);
        }
        cm_barrier();
    }
    MP_CHECK(*v == iters + np - 1, "%ld after the barrier, expected %ld", *v, (long)iters + np - 1);
    cm_barrier();
    if (me == 0) {
        printf("litmus keep: %d acquires by rank 0, then one by each other rank OK\n", iters);
    }
}

static void test_barrier(void)
{
    const size_t per = 2 * 4096 / sizeof(int) + 5; /* uneven blocks: shared boundary pages */
    int *a = cm_malloc(per * (size_t)np * sizeof(int));

    for (int k = 0; k < iters / 5 + 2; k++) {
        for (size_t i = 0; i < per; i++) {
            a[(size_t)me * per + i] = k * 7919 + me * 31 + (int)i;
        }
        jitter();
        cm_barrier();
        for (int r = 0; r < np; r++) {
            for (size_t i = 0; i < per; i++) {
                int want = k * 7919 + r * 31 + (int)i;
                MP_CHECK(a[(size_t)r * per + i] == want, "phase %d: block of rank %d, [%zu] = %d, "
                         "expected %d", k, r, i, a[(size_t)r * per + i], want);
            }
        }
        cm_barrier();
    }
    if (me == 0) {
        printf("litmus barrier: %d phases OK\n", iters / 5 + 2);
    }
}

static void test_falseshare(void)
{
    const size_t words = 3 * 4096 / sizeof(long); /* three pages, interleaved writers */
    long *w = cm_malloc(words * sizeof(long));

    for (int k = 1; k <= iters / 5 + 2; k++) {
        for (size_t i = (size_t)me; i < words; i += (size_t)np) {
            w[i] = k * 100000L + (long)i;
            if (i % 97 == 0) {
                jitter();
            }
        }
        cm_barrier();
        for (size_t i = 0; i < words; i++) {
            MP_CHECK(w[i] == k * 100000L + (long)i, "phase %d: word %zu = %ld (writer %zu)", k, i,
                     w[i], i % (size_t)np);
        }
        cm_barrier();
    }
    if (me == 0) {
        printf("litmus falseshare: %zu words by %d writers OK\n", words, np);
    }
}

/* Disjoint writers of the bytes of one word (no data race at the granularity the program
 * writes): byte i of the first pages belongs to rank i % np; in the image after them a row is
 * 91 bytes and block column c (4 bytes wide, so blocks straddle words) belongs to rank c % np.
 * Every round changes every byte, so a diff holding a whole word would write back a
 * neighbour's stale byte. */
static void test_bytes(void)
{
    const size_t nb = 2 * 4096 + 40, width = 91, rows = 48, n = nb + width * rows;
    unsigned char *b = cm_malloc(n);

    cm_barrier();
    for (int k = 1; k <= iters / 5 + 2; k++) {
        for (size_t i = 0; i < n; i++) {
            size_t owner = i < nb ? i % (size_t)np : ((i - nb) % width / 4) % (size_t)np;
            if (owner == (size_t)me) {
                b[i] = (unsigned char)(k * 31 + i * 7);
            }
            if (i % 509 == 0) {
                jitter();
            }
        }
        cm_barrier();
        for (size_t i = 0; i < n; i++) {
            size_t owner = i < nb ? i % (size_t)np : ((i - nb) % width / 4) % (size_t)np;
            MP_CHECK(b[i] == (unsigned char)(k * 31 + i * 7), "round %d: byte %zu = %u, not %u (writer %zu)",
                     k, i, b[i], (unsigned char)(k * 31 + i * 7), owner);
        }
        cm_barrier();
    }
    if (me == 0) {
        printf("litmus bytes: %zu bytes by %d writers OK\n", n, np);
    }
}

/* Everyone writes its own words of shared pages under a lock and reads everybody's. */
static void test_weak(void)
{
    const int pages = 4;
    long *p = cm_malloc((size_t)pages * 4096);
    const size_t stride = 4096 / sizeof(long);

    cm_barrier();
    for (int k = 1; k <= iters; k++) {
        cm_lock_acquire(11);
        for (int g = 0; g < pages; g++) {
            p[(size_t)g * stride + (size_t)me] = k;                      /* my word */
            p[(size_t)g * stride + 256] += 1;                            /* everybody's */
        }
        cm_lock_release(11);
        jitter();
        cm_lock_acquire(11);
        for (int g = 0; g < pages; g++) {
            MP_CHECK(p[(size_t)g * stride + (size_t)me] == k, "lost my own write on page %d", g);
            for (int r = 0; r < np; r++) {
                MP_CHECK(p[(size_t)g * stride + (size_t)r] <= iters, "garbage on page %d", g);
            }
        }
        cm_lock_release(11);
    }
    cm_barrier();
    for (int g = 0; g < pages; g++) {
        for (int r = 0; r < np; r++) {
            MP_CHECK(p[(size_t)g * stride + (size_t)r] == iters, "page %d: rank %d's word %ld", g, r,
                     p[(size_t)g * stride + (size_t)r]);
        }
        MP_CHECK(p[(size_t)g * stride + 256] == (long)np * iters, "page %d: shared count %ld", g,
                 p[(size_t)g * stride + 256]);
    }
    cm_barrier();
    if (me == 0) {
        printf("litmus weak: %d pages, %d rounds OK\n", pages, iters);
    }
}

/* Rank 0 initializes; after the first barrier each page belongs to its first toucher. */
static void test_migrate(void)
{
    const size_t per = 3; /* pages per rank */
    char *a = cm_malloc(per * (size_t)np * 4096);
    int home;

    if (me == 0) {
        for (size_t i = 0; i < per * (size_t)np * 4096; i++) {
            a[i] = (char)(i % 251);
        }
    }
    cm_barrier(); /* ends initialization */
    for (size_t g = 0; g < per; g++) {
        char *page = a + ((size_t)me * per + g) * 4096;
        MP_CHECK(page[17] == (char)((((size_t)me * per + g) * 4096 + 17) % 251),
                 "data lost moving the page");
        page[18] = (char)me; /* and written */
    }
    cm_barrier();
    for (size_t g = 0; g < per * (size_t)np; g++) {
        MP_OK(cm_rt.proto->page_home(a + g * 4096, &home));
        /* Homes move only under Cashmere; TreadMarks pages keep their static managers. */
        if (cm_rt.config.first_touch && strcmp(cm_rt.proto->name, "cashmere") == 0) {
            MP_CHECK(home == (int)(g / per), "page %zu lives at rank %d, first touched by rank %zu",
                     g, home, g / per);
        }
        MP_CHECK(a[g * 4096 + 18] == (char)(g / per), "write after the move lost on page %zu", g);
        MP_CHECK(a[g * 4096 + 19] == (char)((g * 4096 + 19) % 251), "page %zu garbled", g);
    }
    cm_barrier();
    if (me == 0) {
        printf("litmus migrate: %zu pages moved to their first toucher OK\n", per * (size_t)np);
    }
}

static void test_memops(void)
{
    const size_t n = 3 * 4096;
    char *a = cm_malloc(n * (size_t)np);
    char local[3 * 4096];

    for (size_t i = 0; i < n; i++) {
        local[i] = (char)(me * 13 + (int)i);
    }
    memcpy(a + (size_t)me * n, local, n);               /* whole block */
    memset(a + (size_t)me * n + 100, me + 1, 50);       /* a run in it */
    memmove(a + (size_t)me * n + 4000, a + (size_t)me * n + 4001, 300); /* across a page edge */
    cm_barrier();
    for (int r = 0; r < np; r++) {
        char expect[3 * 4096];
        for (size_t i = 0; i < n; i++) {
            expect[i] = (char)(r * 13 + (int)i);
        }
        memset(expect + 100, r + 1, 50);
        memmove(expect + 4000, expect + 4001, 300);
        MP_CHECK(memcmp(a + (size_t)r * n, expect, n) == 0, "rank %d's block differs", r);
    }
    cm_barrier();
    if (me == 0) {
        printf("litmus memops: memcpy/memset/memmove of %d blocks OK\n", np);
    }
}

/* Each word of one page has its own lock; every process adds 1 to each, starting at its rank. */
static void test_wordlocks(void)
{
    const int k = 6;
    double *w = cm_malloc(4096);

    if (me == 0) {
        for (int s = 0; s < k; s++) {
            w[s] = 0.0; /* the page has a writer before the lock rounds start */
        }
    }
    cm_barrier();
    for (int r = 1; r <= iters / 5 + 1; r++) {
        for (int t = 0; t < k; t++) {
            int s = (me + t) % k;
            cm_lock_acquire(20 + s);
            w[s] += 1.0;
            cm_lock_release(20 + s);
            jitter();
        }
        cm_barrier();
        for (int s = 0; s < k; s++) {
            MP_CHECK(w[s] == (double)np * r, "wordlocks round %d: word %d is %g, expected %g", r, s,
                     w[s], (double)np * r);
        }
        cm_barrier();
    }
    cm_free(w);
    if (me == 0) {
        printf("litmus wordlocks: %d rounds of %d locked words OK\n", iters / 5 + 1, k);
    }
}

/* A page filled by one process, then split between two writers, again and again. */
static void test_refill(void)
{
    const size_t n = 4096 / sizeof(long);
    long *page = cm_malloc(n * sizeof(long));

    for (int r = 1; r <= iters / 5 + 1; r++) {
        cm_barrier();
        if (me == 0) {
            for (size_t i = 0; i < n; i++) {
                page[i] = -r;
            }
        }
        cm_barrier();
        if (me < 2) {
            for (size_t i = (size_t)me * n / 2; i < (size_t)(me + 1) * n / 2; i++) {
                page[i] = r * 10000L + (long)i;
            }
        }
        cm_barrier();
        for (size_t i = 0; i < n; i++) {
            long want = (np == 1 && i >= n / 2) ? -r : r * 10000L + (long)i;
            MP_CHECK(page[i] == want, "refill round %d: word %zu is %ld, expected %ld", r, i,
                     page[i], want);
        }
    }
    cm_barrier();
    cm_free(page);
    if (me == 0) {
        printf("litmus refill: %d rounds OK\n", iters / 5 + 1);
    }
}

/*
 * Each process writes a block homed at its neighbour, the way OCEAN sets a field to a default
 * and then overrides it, and the way a sum accumulates in place while other shared words are
 * written. GCC's sanitizer pass drops a store check that an earlier check of the same address
 * dominates with no call between, so only each word's first store is reported; the release
 * must still carry its last value.
 */
static void __attribute__((noinline)) restore_block(long *sum, long *flag, long *out, size_t n,
                                                    int k)
{
    for (size_t i = 0; i < n; i++) {
        flag[i] = -1;             /* the default, reported ... */
        out[8 * i] = k;           /* ... forwarded at this (another) store's report ... */
        if ((i + (size_t)k) % 3 != 0) {
            flag[i] = (long)i;    /* ... overridden: this store's check is dropped */
        }
        sum[i] = 0;
        for (size_t j = 1; j < 8; j++) {
            out[8 * i + j] = k * (long)j; /* may alias sum[i]: sum[i] is stored each time */
            sum[i] += (long)(j * i);      /* checked once, above the loop */
        }
    }
}

static void test_restore(void)
{
    const size_t n = 600; /* per block: sums and flags span pages */
    long *sum = cm_malloc(n * (size_t)np * sizeof(long));
    long *flag = cm_malloc(n * (size_t)np * sizeof(long));
    long *out = cm_malloc(8 * n * (size_t)np * sizeof(long));
    int nb = (np > 1) ? (me + 1) % np : me;

    cm_barrier();
    /* First touch: each process's own blocks are homed there. */
    memset(sum + (size_t)me * n, 0, n * sizeof(long));
    memset(flag + (size_t)me * n, 0, n * sizeof(long));
    memset(out + 8 * (size_t)me * n, 0, 8 * n * sizeof(long));
    cm_barrier();
    for (int k = 1; k <= iters / 10 + 1; k++) {
        restore_block(sum + (size_t)nb * n, flag + (size_t)nb * n, out + 8 * (size_t)nb * n, n, k);
        cm_barrier();
        for (size_t b = 0; b < (size_t)np; b++) {
            for (size_t i = 0; i < n; i++) {
                long fw = ((i + (size_t)k) % 3 != 0) ? (long)i : -1;
                MP_CHECK(flag[b * n + i] == fw, "restore round %d: block %zu flag[%zu] = %ld, "
                         "expected %ld", k, b, i, flag[b * n + i], fw);
                MP_CHECK(sum[b * n + i] == (long)(28 * i), "restore round %d: block %zu sum[%zu] "
                         "= %ld, expected %ld", k, b, i, sum[b * n + i], (long)(28 * i));
                MP_CHECK(out[8 * (b * n + i) + 7] == 7L * k, "restore round %d: out", k);
            }
        }
        cm_barrier();
    }
    if (me == 0) {
        printf("litmus restore: %d rounds of %zu re-stored words OK\n", iters / 10 + 1, 2 * n);
    }
}

/* Each process rewrites a few words of a page homed at its neighbour over and over, for a few
 * milliseconds (the offload thread passes meanwhile; with software doubling every store is a
 * transfer, so the count follows the clock); the last round's values, and its number, are what
 * everyone must read after the barrier. Bit 63 (and so the top byte) flips every round. */
static uint64_t churn_value(long r, int k, size_t i)
{
    return ((uint64_t)(r & 1) << 63) | ((uint64_t)k << 32) | (uint64_t)(r * 4096 + (long)i);
}

static void test_churn(void)
{
    const size_t n = 512; /* words per block: a page of its own, its first few rewritten */
    const size_t hot = 8;
    char *raw = cm_malloc((size_t)(np + 1) * 4096);
    uint64_t *w = (uint64_t *)(((uintptr_t)raw + 4095) & ~(uintptr_t)4095);
    long *last = cm_malloc((size_t)np * sizeof(long));
    int nb = (np > 1) ? (me + 1) % np : me;
    long total = 0;

    cm_barrier();
    memset(w + (size_t)me * n, 0, n * sizeof(uint64_t)); /* first touch: homed here */
    cm_barrier();
    for (int k = 1; k <= iters / 10 + 1; k++) {
        volatile uint64_t *mine = w + (size_t)nb * n;
        double t0 = cm_wtime();
        long r;
        for (r = 1;; r++) {
            for (size_t i = 0; i < hot; i++) {
                mine[i] = churn_value(r, k, i);
            }
            if ((r & 63) == 0 && cm_wtime() - t0 > 0.003) {
                break;
            }
        }
        last[nb] = r;
        total += r;
        cm_barrier();
        for (size_t b = 0; b < (size_t)np; b++) {
            for (size_t i = 0; i < hot; i++) {
                uint64_t want = churn_value(last[b], k, i);
                MP_CHECK(w[b * n + i] == want, "churn round %d: block %zu word %zu is %016llx, "
                         "expected %016llx", k, b, i, (unsigned long long)w[b * n + i],
                         (unsigned long long)want);
            }
        }
        cm_barrier();
    }
    if (me == 0) {
        printf("litmus churn: %d rounds, %ld rewrites of %zu words here, OK\n", iters / 10 + 1,
               total, hot);
    }
}

/*
 * Each process owns two page-sized blocks (first-touched here: homed here) and a word of one
 * page all write. Every round it rewrites them; after a barrier everyone reads every block
 * "a" and the shared page, and every block "b" in even rounds only.
 */
static uint64_t reuse_value(int r, int owner, size_t i)
{
    return (uint64_t)r << 40 | (uint64_t)owner << 24 | i;
}

static void test_reuse(void)
{
    const size_t n = 4096 / sizeof(uint64_t);
    const int rounds = iters / 5 + 2;
    char *raw = cm_malloc((size_t)(2 * np + 2) * 4096);
    uint64_t *w = (uint64_t *)(((uintptr_t)raw + 4095) & ~(uintptr_t)4095);
    uint64_t *shared = w + (size_t)(2 * np) * n;

    cm_barrier();
    memset(w + (size_t)(2 * me) * n, 0, 2 * n * sizeof(uint64_t)); /* first touch: homed here */
    if (me == 0) {
        memset(shared, 0, n * sizeof(uint64_t));
    }
    cm_barrier();
    for (int r = 1; r <= rounds; r++) {
        for (size_t i = 0; i < 2 * n; i++) {
            w[(size_t)(2 * me) * n + i] = reuse_value(r, me, i);
        }
        shared[me] = reuse_value(r, me, 0);
        jitter();
        cm_barrier();
        for (int b = 0; b < np; b++) {
            for (size_t i = 0; i < ((r % 2 == 0) ? 2 * n : n); i++) {
                uint64_t got = w[(size_t)(2 * b) * n + i];
                MP_CHECK(got == reuse_value(r, b, i), "reuse round %d: block %d word %zu is "
                         "%016llx, expected %016llx", r, b, i, (unsigned long long)got,
                         (unsigned long long)reuse_value(r, b, i));
            }
            MP_CHECK(shared[b] == reuse_value(r, b, 0), "reuse round %d: shared word %d is "
                     "%016llx, expected %016llx", r, b, (unsigned long long)shared[b],
                     (unsigned long long)reuse_value(r, b, 0));
        }
        cm_barrier();
    }
    if (me == 0) {
        printf("litmus reuse: %d rounds of %d pages OK\n", rounds, 2 * np + 1);
    }
}

int main(int argc, char **argv)
{
    const char *test = (argc > 1) ? argv[1] : "all";
    const char *except = "";
    bool all = strcmp(test, "all") == 0;

    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--iters") == 0) {
            iters = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "--seed") == 0) {
            seed = (unsigned)atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "--except") == 0) {
            except = argv[i + 1]; /* all but this case */
        }
    }
    cm_init(&argc, &argv);
    me = cm_rank();
    np = cm_nprocs();
    seed = seed * 7919u + (unsigned)me;

    /* migrate must come first: it ends the initialization phase itself. */
    if (all || strcmp(test, "migrate") == 0) {
        test_migrate();
    }
    if (all || strcmp(test, "msgpass") == 0) {
        test_msgpass();
    }
    if (all || strcmp(test, "counter") == 0) {
        test_counter();
    }
    if (all || strcmp(test, "keep") == 0) {
        test_keep();
    }
    if (all || strcmp(test, "barrier") == 0) {
        test_barrier();
    }
    if (all || strcmp(test, "falseshare") == 0) {
        test_falseshare();
    }
    if (all || strcmp(test, "weak") == 0) {
        test_weak();
    }
    if (all || strcmp(test, "memops") == 0) {
        test_memops();
    }
    if (all || strcmp(test, "wordlocks") == 0) {
        test_wordlocks();
    }
    if (all || strcmp(test, "refill") == 0) {
        test_refill();
    }
    if (all || strcmp(test, "restore") == 0) {
        test_restore();
    }
    if ((all && strcmp(except, "churn") != 0) || strcmp(test, "churn") == 0) {
        test_churn();
    }
    if (all || strcmp(test, "bytes") == 0) {
        test_bytes();
    }
    if (all || strcmp(test, "reuse") == 0) {
        test_reuse();
    }
    if (me == 0) {
        printf("litmus %s: OK\n", test);
    }
    cm_finalize();
    return 0;
}
