/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of locks/ alone, over the fake one-sided layer (fake_rma.h: ranks are threads):
 * the MCS lock excludes and hands over in queue order (also with the release that waits for
 * nothing), the lock that carries data hands the data to its successor (and fetches it from
 * the home when free), the barrier lets nobody through before everyone arrived, a sleeper on
 * a lock's word is woken by whoever changes the word after it armed, and only by those.
 */
#include "config.h"
#include "locks/cm_barrier.h"
#include "locks/cm_mcs.h"
#include "locks/cm_sleep.h"
#include "tests/unit/fake_rma.h"

#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define NPROCS 4
#define NLOCKS 3

/* Where things lie in every rank's copy of the area. */
#define OFF_TAIL    0      /* NLOCKS tail words, lock l at rank l % NPROCS */
#define OFF_QNODE   256    /* NLOCKS queue nodes */
#define OFF_DATA    1024   /* NLOCKS carried values while free (at the home) */
#define OFF_HANDOFF 2048   /* NLOCKS handoff areas */
#define OFF_BARRIER 4096   /* CM_BARRIER_WORDS flags */
#define OFF_MAPS    8192   /* each rank's copy of the sleep maps: CM_SLEEP_SLOTS words */
#define AREA        (OFF_MAPS + CM_SLEEP_SLOTS * 8)

static fake_world_t *world;

static uint64_t *tail_of(int r, int l)
{
    return (uint64_t *)(void *)(fake_base(world, r) + OFF_TAIL) + l;
}

static cm_mcs_qnode_t *qnode_of(int r, int l)
{
    return (cm_mcs_qnode_t *)(void *)(fake_base(world, r) + OFF_QNODE) + l;
}

static uint64_t *data_of(int r, int l)
{
    return (uint64_t *)(void *)(fake_base(world, r) + OFF_DATA) + l;
}

static uint64_t *handoff_of(int r, int l)
{
    return (uint64_t *)(void *)(fake_base(world, r) + OFF_HANDOFF) + l;
}

static void setup(void)
{
    world = fake_world_create(NPROCS, AREA);
}

static void teardown(void)
{
    fake_world_destroy(world);
}

/* ---- mutual exclusion ------------------------------------------------------- */

#define ITERS 3000

/* Plain memory of the test process, changed only inside the locks. */
static struct {
    uint64_t count[NLOCKS];
    int      owner[NLOCKS];
    int      overlaps;
} cs;

static void exclusion_rank(int r, void *arg)
{
    cm_rma_t *rma = fake_rma(world, r);
    const bool lazy = arg != NULL;
    cm_mcs_lazy_t lz[NLOCKS] = {0};

    for (int i = 0; i < ITERS; i++) {
        int l = (i + r) % NLOCKS;
        uint64_t c;

        if (lazy) {
            ck_assert_int_eq(cm_mcs_acquire_lazy(rma, l % NPROCS, tail_of(r, l), qnode_of(r, l),
                                                 &lz[l]),
                             CM_OK);
        } else {
            ck_assert_int_eq(cm_mcs_acquire(rma, l % NPROCS, tail_of(r, l), qnode_of(r, l), NULL),
                             CM_OK);
        }
        if (cs.owner[l] != -1) {
            __atomic_fetch_add(&cs.overlaps, 1, __ATOMIC_RELAXED);
        }
        cs.owner[l] = r;
        c = cs.count[l];
        if (i % 7 == 0) {
            sched_yield(); /* let a contender queue up behind us */
        }
        cs.count[l] = c + 1;
        if (cs.owner[l] != r) {
            __atomic_fetch_add(&cs.overlaps, 1, __ATOMIC_RELAXED);
        }
        cs.owner[l] = -1;
        if (lazy) {
            ck_assert_int_eq(cm_mcs_release_lazy(rma, l % NPROCS, tail_of(r, l), qnode_of(r, l),
                                                 &lz[l]),
                             CM_OK);
        } else {
            ck_assert_int_eq(cm_mcs_release(rma, l % NPROCS, tail_of(r, l), qnode_of(r, l), NULL,
                                            NULL, NULL),
                             CM_OK);
        }
    }
    for (int l = 0; lazy && l < NLOCKS; l++) {
        /* Nobody links into our nodes after this: the memory may go. */
        ck_assert_int_eq(cm_mcs_resolve(rma, qnode_of(r, l), &lz[l]), CM_OK);
        ck_assert(!lz[l].pending);
    }
}

/* _i 0: the MCS lock as the directory's MCS form uses it; 1: the release that waits for
 * nothing (the add form's application locks). */
START_TEST(test_mcs_exclusion)
{
    uint64_t total = 0;
    static int lazy_arg;

    memset(&cs, 0, sizeof(cs));
    for (int l = 0; l < NLOCKS; l++) {
        cs.owner[l] = -1;
    }
    fake_run(world, exclusion_rank, _i ? &lazy_arg : NULL);
    ck_assert_int_eq(cs.overlaps, 0);
    for (int l = 0; l < NLOCKS; l++) {
        total += cs.count[l];
        /* Free again: every tail back to none. */
        ck_assert_uint_eq(*tail_of(l % NPROCS, l), 0);
    }
    ck_assert_uint_eq(total, (uint64_t)NPROCS * ITERS);
}
END_TEST

/* ---- hand-over order and the carried data -------------------------------------- */

/* Rank 0 holds lock 0 until ranks 1, 2, 3 have queued behind it, one after the other; the lock
 * then goes 0 -> 1 -> 2 -> 3, each told its predecessor, each release told its successor, and
 * a value carried with the lock (100 at the home while free) is incremented by each holder:
 * rank 0 fetches it from the home, the others are handed it by their predecessor. */
static struct {
    uint64_t pred[NPROCS];
    uint64_t succ[NPROCS];
    int      order[NPROCS];
    int      n;
    uint64_t seen[NPROCS];    /* the carried value each holder found */
} ho;

/* This holder's working copy of the carried value, in its own memory. */
static uint64_t *value_of(int r)
{
    return data_of(r, 0) + 32;
}

/* The release's before_handoff: the carried value goes to the successor's handoff area. */
static cm_status_t put_value(int succ, void *arg)
{
    int r = *(int *)arg;

    return cm_rma_put(fake_rma(world, r), succ, handoff_of(r, 0), value_of(r), sizeof(uint64_t));
}

static void order_rank(int r, void *arg)
{
    cm_rma_t *rma = fake_rma(world, r);
    uint64_t *value = value_of(r);

    (void)arg;
    /* Rank r queues once the home's tail names rank r - 1 (queue entries are rank + 1). */
    if (r > 0) {
        while (__atomic_load_n(tail_of(0, 0), __ATOMIC_SEQ_CST) != (uint64_t)r) {
            sched_yield();
        }
    }
    ck_assert_int_eq(cm_mcs_acquire_data(rma, 0, tail_of(r, 0), qnode_of(r, 0), data_of(r, 0),
                                         handoff_of(r, 0), value, sizeof(*value), &ho.pred[r]),
                     CM_OK);
    if (r == 0) {
        /* Hold it until the last rank has queued. */
        while (__atomic_load_n(tail_of(0, 0), __ATOMIC_SEQ_CST) != NPROCS) {
            sched_yield();
        }
    }
    ho.seen[r] = *value;
    ho.order[ho.n++] = r;
    *value += 1;
    if (r == NPROCS - 1) {
        /* The last holder frees the lock: the value goes back to the home first. */
        ck_assert_int_eq(cm_rma_put(rma, 0, data_of(r, 0), value, sizeof(*value)), CM_OK);
    }
    ck_assert_int_eq(cm_mcs_release(rma, 0, tail_of(r, 0), qnode_of(r, 0), put_value, &r,
                                    &ho.succ[r]),
                     CM_OK);
}

START_TEST(test_mcs_order_and_data)
{
    memset(&ho, 0, sizeof(ho));
    *data_of(0, 0) = 100;
    fake_run(world, order_rank, NULL);
    for (int r = 0; r < NPROCS; r++) {
        ck_assert_int_eq(ho.order[r], r);
        ck_assert_uint_eq(ho.pred[r], (uint64_t)r); /* rank r - 1, as rank + 1; 0: was free */
        ck_assert_uint_eq(ho.succ[r], (r == NPROCS - 1) ? 0 : (uint64_t)r + 2);
        ck_assert_uint_eq(ho.seen[r], 100 + (uint64_t)r);
    }
    ck_assert_uint_eq(*data_of(0, 0), 100 + NPROCS);
    ck_assert_uint_eq(*tail_of(0, 0), 0);
}
END_TEST

/* ---- barrier -------------------------------------------------------------------- */

#define BARRIERS 500

static uint64_t arrived[NPROCS]; /* the last barrier each rank reached (plain memory) */
static int early;                /* a rank that passed a barrier someone had not reached */

static void barrier_rank(int r, void *arg)
{
    cm_barrier_t b;

    (void)arg;
    cm_barrier_init(&b, fake_rma(world, r),
                    (uint64_t *)(void *)(fake_base(world, r) + OFF_BARRIER));
    for (uint64_t e = 1; e <= BARRIERS; e++) {
        __atomic_store_n(&arrived[r], e, __ATOMIC_SEQ_CST);
        if ((e + (uint64_t)r) % 5 == 0) {
            sched_yield(); /* arrive late now and then */
        }
        ck_assert_int_eq(cm_barrier_wait(&b), CM_OK);
        for (int o = 0; o < NPROCS; o++) {
            if (__atomic_load_n(&arrived[o], __ATOMIC_SEQ_CST) < e) {
                __atomic_store_n(&early, 1, __ATOMIC_SEQ_CST);
            }
        }
    }
}

START_TEST(test_barrier)
{
    memset(arrived, 0, sizeof(arrived));
    early = 0;
    fake_run(world, barrier_rank, NULL);
    ck_assert_int_eq(early, 0);
    for (int r = 0; r < NPROCS; r++) {
        ck_assert_uint_eq(arrived[r], BARRIERS);
    }
}
END_TEST

/* ---- sleeping on a lock's word ------------------------------------------------------ */

static void sleep_init(cm_sleep_t *s, int r)
{
    ck_assert_int_eq(cm_sleep_init(s, fake_rma(world, r),
                                   (uint64_t *)(void *)(fake_base(world, r) + OFF_MAPS)),
                     CM_OK);
}

static cm_sleep_t sl[NPROCS];

static uint64_t nap_of(int r)
{
    return __atomic_load_n(&sl[r].nap, __ATOMIC_SEQ_CST);
}

/* Slot l's map in rank r's copy. */
static uint64_t map_at(int r, int l)
{
    return *(uint64_t *)(void *)(fake_base(world, r) + OFF_MAPS + (size_t)l * 8);
}

START_TEST(test_sleep_arm_wake)
{
    cm_sleep_t *s = sl;
    uint64_t seen1, seen2, again, woken;
    fake_counts_t c0, c1;

    ck_assert_uint_le(cm_sleep_map_bytes(NPROCS), AREA - OFF_MAPS);
    for (int r = 0; r < NPROCS; r++) {
        sleep_init(&s[r], r);
    }
    ck_assert_int_eq(cm_sleep_arm(&s[1], 5, &seen1), CM_OK);
    ck_assert_int_eq(cm_sleep_arm(&s[2], 5, &seen2), CM_OK);
    /* Each armed bit in every copy but its owner's; the waker reads only its own. */
    ck_assert_uint_eq(map_at(0, 5), (1u << 1) | (1u << 2));
    ck_assert_uint_eq(map_at(3, 5), (1u << 1) | (1u << 2));
    ck_assert_uint_eq(map_at(1, 5), 1u << 2);
    fake_counts(world, &c0);
    ck_assert_int_eq(cm_sleep_wake(&s[0], 5), CM_OK);
    fake_counts(world, &c1);
    /* Two messages, nothing else. */
    ck_assert_uint_eq(c1.gets + c1.atomics + c1.puts, c0.gets + c0.atomics + c0.puts);
    ck_assert_uint_eq(c1.msgs, c0.msgs + 2);
    ck_assert_uint_ne(nap_of(1), seen1);
    ck_assert_uint_ne(nap_of(2), seen2);
    ck_assert_uint_eq(nap_of(3), 0);
    ck_assert_uint_eq(s[0].wakes, 2);

    /* Armed on 5 still: arming it again costs nothing; another lock moves the bit. */
    fake_counts(world, &c0);
    ck_assert_int_eq(cm_sleep_arm(&s[1], 5, &again), CM_OK);
    fake_counts(world, &c1);
    ck_assert_uint_eq(c1.atomics, c0.atomics);
    ck_assert_uint_eq(again, nap_of(1));
    ck_assert_int_eq(cm_sleep_arm(&s[1], 6, &seen1), CM_OK);
    ck_assert_uint_eq(map_at(0, 5), 1u << 2);
    ck_assert_uint_eq(map_at(0, 6), 1u << 1);
    /* Another lock of slot 5 wakes its sleepers too (spurious, allowed). */
    ck_assert_int_eq(cm_sleep_wake(&s[0], 5 + CM_SLEEP_SLOTS), CM_OK);
    woken = nap_of(1);
    seen2 = nap_of(2);
    ck_assert_int_eq(cm_sleep_wake(&s[3], 5), CM_OK);
    ck_assert_uint_eq(nap_of(1), woken);
    ck_assert_uint_ne(nap_of(2), seen2);
    /* The waker's own bit wakes nobody. */
    ck_assert_int_eq(cm_sleep_arm(&s[3], 6, &seen2), CM_OK);
    ck_assert_int_eq(cm_sleep_wake(&s[3], 6), CM_OK);
    ck_assert_uint_eq(nap_of(3), seen2);
    ck_assert_uint_ne(nap_of(1), woken);
}
END_TEST

/*
 * Rank 0 opens ROUNDS gates one after another, each a word under lock 3 it sets and then
 * wakes; the others wait for each gate as the PAUSE flags do (look under the lock, arm, release,
 * sleep). A wake lost between a look and a sleep hangs the test.
 */
#define ROUNDS 300
static uint64_t gate; /* plain memory, changed and read only under lock 3 */
static pthread_barrier_t gate_ready;

static void gate_rank(int r, void *arg)
{
    cm_rma_t *rma = fake_rma(world, r);
    cm_sleep_t *s = &sl[r];
    const int l = 3;
    int rc;

    (void)arg;
    sleep_init(s, r);
    rc = pthread_barrier_wait(&gate_ready); /* every handler set before the first wake */
    ck_assert(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
    for (uint64_t k = 1; k <= ROUNDS; k++) {
        if (r == 0) {
            if (k % 3 == 0) {
                sched_yield();
            }
            ck_assert_int_eq(cm_mcs_acquire(rma, l % NPROCS, tail_of(r, l), qnode_of(r, l), NULL),
                             CM_OK);
            gate = k;
            ck_assert_int_eq(cm_mcs_release(rma, l % NPROCS, tail_of(r, l), qnode_of(r, l), NULL,
                                            NULL, NULL),
                             CM_OK);
            ck_assert_int_eq(cm_sleep_wake(s, (uint32_t)l), CM_OK);
            continue;
        }
        for (;;) {
            uint64_t seen, g;
            ck_assert_int_eq(cm_mcs_acquire(rma, l % NPROCS, tail_of(r, l), qnode_of(r, l), NULL),
                             CM_OK);
            g = gate;
            if (g < k) {
                ck_assert_int_eq(cm_sleep_arm(s, (uint32_t)l, &seen), CM_OK);
            }
            ck_assert_int_eq(cm_mcs_release(rma, l % NPROCS, tail_of(r, l), qnode_of(r, l), NULL,
                                            NULL, NULL),
                             CM_OK);
            if (g >= k) {
                break;
            }
            cm_sleep_wait(s, seen, NULL);
        }
    }
}

START_TEST(test_sleep_no_lost_wake)
{
    gate = 0;
    pthread_barrier_init(&gate_ready, NULL, NPROCS);
    fake_run(world, gate_rank, NULL);
    pthread_barrier_destroy(&gate_ready);
    ck_assert_uint_eq(gate, ROUNDS);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("locks");
    TCase *tc = tcase_create("fake-rma");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_mcs_exclusion, 0, 2);
    tcase_add_test(tc, test_mcs_order_and_data);
    tcase_add_test(tc, test_barrier);
    tcase_add_test(tc, test_sleep_arm_wake);
    tcase_add_test(tc, test_sleep_no_lost_wake);
    /* Four threads on two cores, yielding: seconds under load; a hang still fails. */
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
