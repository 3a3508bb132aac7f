/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the statistics' exclusive phase timers (src/cm_stats.h): a nested phase stops
 * its parent's clock, so that the breakdown of experiments/paper (Fig. 2) can add timers up.
 * The checks are inequalities between a phase's charge and spans the test measures itself on
 * the same clock, inside or around the phase: no timing threshold.
 */
#include "config.h"
#include "src/cm_stats.h"
#include "src/util/cm_time.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>

static volatile uint64_t sink;

static void busy(void)
{
    for (int i = 0; i < 200000; i++) {
        sink += (uint64_t)i;
    }
}

START_TEST(test_phase_charges_its_span)
{
    uint64_t a = 0, t0, t1, *outer;

    ck_assert_ptr_null(cm_stats_phase_acc);
    t0    = cm_ticks();
    outer = cm_stats_phase_enter(&a);
    busy();
    cm_stats_phase_leave(outer);
    t1 = cm_ticks();
    ck_assert_ptr_null(outer);
    ck_assert_ptr_null(cm_stats_phase_acc); /* nothing left open */
    ck_assert_uint_gt(a, 0);
    ck_assert_uint_le(a, cm_ticks_to_ns(t1 - t0) + 1);
}
END_TEST

START_TEST(test_phase_nested_is_exclusive)
{
    uint64_t a = 0, b = 0, t0, t1, s0, s1, s2, s3, i0, i1, *outer, *inner;

    t0    = cm_ticks();
    outer = cm_stats_phase_enter(&a);
    s0    = cm_ticks();
    busy();
    s1    = cm_ticks();
    inner = cm_stats_phase_enter(&b);
    ck_assert_ptr_eq(inner, &a);
    i0 = cm_ticks();
    busy();
    busy();
    i1 = cm_ticks();
    cm_stats_phase_leave(inner);
    ck_assert_ptr_eq(cm_stats_phase_acc, &a);
    s2 = cm_ticks();
    busy();
    s3 = cm_ticks();
    cm_stats_phase_leave(outer);
    t1 = cm_ticks();
    /* Together no more than the whole; each at least what ran only inside it. */
    ck_assert_uint_le(a + b, cm_ticks_to_ns(t1 - t0) + 2);
    ck_assert_uint_ge(b + 1, cm_ticks_to_ns(i1 - i0));
    ck_assert_uint_ge(a + 2, cm_ticks_to_ns(s1 - s0) + cm_ticks_to_ns(s3 - s2));
    /* The parent was not charged for the child: a is at most the whole less the inner span. */
    ck_assert_uint_le(a, cm_ticks_to_ns(t1 - t0) - cm_ticks_to_ns(i1 - i0) + 2);
}
END_TEST

static int busy_value(int v)
{
    busy();
    return v;
}

START_TEST(test_in_phase_gives_the_value)
{
    uint64_t a = 0, t0, t1;
    int v;

    t0 = cm_ticks();
    v  = CM_STATS_IN_PHASE(&a, busy_value(7));
    t1 = cm_ticks();
    ck_assert_int_eq(v, 7);
    ck_assert_uint_gt(a, 0);
    ck_assert_uint_le(a, cm_ticks_to_ns(t1 - t0) + 1);
    ck_assert_ptr_null(cm_stats_phase_acc);
}
END_TEST

static uint64_t thread_acc;
static void *thread_main(void *arg)
{
    uint64_t **outer_seen = arg;
    uint64_t *outer       = cm_stats_phase_enter(&thread_acc);

    *outer_seen = outer;
    busy();
    cm_stats_phase_leave(outer);
    return NULL;
}

START_TEST(test_phase_per_thread)
{
    uint64_t a = 0, *outer, *seen = (uint64_t *)1;
    pthread_t t;

    outer = cm_stats_phase_enter(&a);
    ck_assert_int_eq(pthread_create(&t, NULL, thread_main, &seen), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    /* The other thread started with no phase: our open one is not its parent. */
    ck_assert_ptr_null(seen);
    ck_assert_uint_gt(thread_acc, 0);
    ck_assert_ptr_eq(cm_stats_phase_acc, &a);
    cm_stats_phase_leave(outer);
}
END_TEST

START_TEST(test_total_sums_and_takes_the_longest_run)
{
    cm_stats_t per[3] = {{0}}, tot;

    per[0].total_ns = 10; per[1].total_ns = 30; per[2].total_ns = 20;
    per[0].fault_ns = 1;  per[1].fault_ns = 2;  per[2].fault_ns = 3;
    per[2].page_copy_ns = 7;
    cm_stats_total(per, 3, &tot);
    ck_assert_uint_eq(tot.total_ns, 30);
    ck_assert_uint_eq(tot.fault_ns, 6);
    ck_assert_uint_eq(tot.page_copy_ns, 7);
}
END_TEST

int main(void)
{
    Suite *s   = suite_create("stats");
    TCase *tc  = tcase_create("phases");
    SRunner *r;
    int failed;

    cm_ticks_calibrate();
    tcase_add_test(tc, test_phase_charges_its_span);
    tcase_add_test(tc, test_phase_nested_is_exclusive);
    tcase_add_test(tc, test_phase_per_thread);
    tcase_add_test(tc, test_in_phase_gives_the_value);
    tcase_add_test(tc, test_total_sums_and_takes_the_longest_run);
    suite_add_tcase(s, tc);
    r = srunner_create(s);
    srunner_set_fork_status(r, CK_NOFORK);
    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
