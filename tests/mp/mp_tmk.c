/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TreadMarks message counts per operation, against Table 2.1 of Keleher's
 * thesis: lock acquire 2 or 3 messages (0 when the token is already here),
 * unlock 0, barrier 2(n-1), access miss 2m (m = processes holding diffs).
 * Every count is the sum over all processes of their "messages sent"
 * statistic around the operation, gathered with one-sided puts and PMIx
 * barriers (which send no protocol messages). Needs 3 or more processes and
 * CM_PROTOCOL=treadmarks.
 */
#include "mp_common.h"

static int me, np;

static uint64_t my_msgs(void)
{
    cm_stats_t s;
    cm_rt.proto->stats(&s);
    return s.msgs;
}

static uint64_t my_diffs(void)
{
    cm_stats_t s;
    cm_rt.proto->stats(&s);
    return s.diffs_created;
}

/* Sum over all processes of delta (every process calls it; quiet phase). */
static uint64_t total(uint64_t delta)
{
    uint64_t *slots = (uint64_t *)cm_rt.scratch, sum = 0;

    MP_OK(cm_rma_put(cm_rt.rma, 0, slots + me, &delta, sizeof(delta)));
    MP_OK(cm_rma_flush(cm_rt.rma, 0));
    MP_OK(cm_rma_barrier(cm_rt.rma));
    if (me == 0) {
        for (int r = 0; r < np; r++) {
            sum += slots[r];
        }
    }
    MP_OK(cm_rma_barrier(cm_rt.rma));
    return sum;
}

/* Runs op on rank `who` only and returns the job's message count for it. */
#define COUNT(who, op) \
    ({ \
        uint64_t b_ = my_msgs(); \
        /* Nobody may serve the operation before taking its own first count. */ \
        MP_OK(cm_rma_barrier(cm_rt.rma)); \
        if (me == (who)) { \
            op; \
        } \
        /* The answers others sent are counted once the operation is over everywhere. */ \
        MP_OK(cm_rma_barrier(cm_rt.rma)); \
        total(my_msgs() - b_); \
    })

static void expect(const char *what, uint64_t got, uint64_t want)
{
    if (me == 0) {
        MP_CHECK(got == want, "%s: %" PRIu64 " messages, Table 2.1 says %" PRIu64, what, got, want);
        printf("mp_tmk: %-48s %2" PRIu64 " messages\n", what, got);
    }
}

int main(int argc, char **argv)
{
    volatile int *page_a, *page_b;
    int sink = 0;

    cm_init(&argc, &argv);
    me = cm_rank();
    np = cm_nprocs();
    MP_CHECK(np >= 3, "needs 3 or more processes");
    MP_CHECK(strcmp(cm_rt.proto->name, "treadmarks") == 0, "run with CM_PROTOCOL=treadmarks");
    /* Two pages managed by rank 0. */
    char *heap = cm_malloc((size_t)np * 2 * 4096);
    int home;
    page_a = page_b = NULL;
    for (int i = 0; i < 2 * np; i++) {
        MP_OK(cm_rt.proto->page_home(heap + (size_t)i * 4096, &home));
        if (home == 0 && page_a == NULL) {
            page_a = (volatile int *)(heap + (size_t)i * 4096);
        } else if (home == 0 && page_b == NULL) {
            page_b = (volatile int *)(heap + (size_t)i * 4096);
        }
    }
    MP_CHECK(page_a != NULL && page_b != NULL, "no pages managed by rank 0");
    cm_barrier();

    /* Lock 0 is managed by rank 0, which starts with its token. */
    expect("lock, token here (manager re-acquires)", COUNT(0, cm_lock_acquire(0)), 0);
    expect("unlock, nobody waiting", COUNT(0, cm_lock_release(0)), 0);
    expect("lock, manager holds the token (2-hop)", COUNT(1, cm_lock_acquire(0)), 2);
    expect("unlock, nobody waiting", COUNT(1, cm_lock_release(0)), 0);
    expect("lock, token at the last requester (3-hop)", COUNT(2, cm_lock_acquire(0)), 3);
    expect("unlock, nobody waiting", COUNT(2, cm_lock_release(0)), 0);
    expect("lock, token here (re-acquire, no message)",
           COUNT(2, (cm_lock_acquire(0), cm_lock_release(0))), 0);
    MP_OK(cm_rma_barrier(cm_rt.rma));

    {
        uint64_t b = my_msgs();
        MP_OK(cm_rma_barrier(cm_rt.rma));
        cm_barrier();
        MP_OK(cm_rma_barrier(cm_rt.rma));
        uint64_t got = total(my_msgs() - b);
        expect("barrier, 2(n-1)", got, 2 * (uint64_t)(np - 1));
    }

    /* Cold miss: rank 2 copies page_a from its manager: request + page. */
    expect("cold miss (page from the manager)", COUNT(2, sink += page_a[0]), 2);
    cm_barrier();
    /* Rank 1 writes page_a; after the barrier rank 2's miss asks rank 1 only: 2m, m = 1. */
    if (me == 1) {
        page_a[10] = 111;
    }
    cm_barrier();
    expect("access miss, one writer (2m, m=1)", COUNT(2, sink += page_a[10]), 2);
    if (me == 2) {
        MP_CHECK(page_a[10] == 111, "page_a[10] = %d, expected 111", page_a[10]);
    }
    cm_barrier();
    /* Ranks 0 and 1 write disjoint words concurrently: two concurrent last modifiers, m = 2. */
    if (me == 0) {
        page_a[20] = 200;
    } else if (me == 1) {
        page_a[30] = 300;
    }
    cm_barrier();
    expect("access miss, two concurrent writers (2m, m=2)", COUNT(2, sink += page_a[20]), 4);
    if (me == 2) {
        MP_CHECK(page_a[20] == 200 && page_a[30] == 300 && page_a[10] == 111,
                 "merged page wrong: %d %d %d", page_a[20], page_a[30], page_a[10]);
    }
    cm_barrier();
    /* Rank 1 then rank 0 write in turn under a lock: the newer writer has both diffs, m = 1. */
    expect("cold miss (page from the manager)", COUNT(2, sink += page_b[0]), 2);
    cm_barrier();
    if (me == 1) {
        cm_lock_acquire(5);
        page_b[1] = 1;
        cm_lock_release(5);
    }
    cm_barrier();
    if (me == 0) {
        cm_lock_acquire(5);
        page_b[2] = 2;
        cm_lock_release(5);
    }
    cm_barrier();
    expect("access miss, two ordered writers (2m, m=1)", COUNT(2, sink += page_b[1]), 2);
    if (me == 2) {
        MP_CHECK(page_b[1] == 1 && page_b[2] == 2, "page_b: %d %d", page_b[1], page_b[2]);
    }
    cm_barrier();
    /*
     * Lazy diffs with twins that span intervals (thesis 2.3.1): rank 1 writes page_a in five
     * intervals that nobody asks about; rank 2's miss then costs 2 messages and rank 1 encodes
     * one diff, attached to the oldest of its five notices (the others get empty ones).
     */
    {
        uint64_t d0 = my_diffs();
        for (int k = 0; k < 5; k++) {
            if (me == 1) {
                cm_lock_acquire(7);
                page_a[40 + k] = 40 + k;
                cm_lock_release(7);
            }
        }
        cm_barrier();
        expect("access miss after 5 intervals of one writer (m=1)", COUNT(2, sink += page_a[44]), 2);
        if (me == 2) {
            for (int k = 0; k < 5; k++) {
                MP_CHECK(page_a[40 + k] == 40 + k, "page_a[%d] = %d", 40 + k, page_a[40 + k]);
            }
        }
        uint64_t diffs = total(my_diffs() - d0);
        if (me == 0) {
            MP_CHECK(diffs == 1, "5 intervals of writes to one page, read once: %" PRIu64
                     " diffs encoded, the twin should have spanned them (1)", diffs);
            printf("mp_tmk: %-48s %2" PRIu64 " diff\n", "diffs for 5 intervals of one writer", diffs);
        }
    }
    cm_barrier();
    if (me == 0) {
        printf("mp_tmk: OK (%d processes)\n", np);
    }
    (void)sink;
    cm_finalize();
    return 0;
}
