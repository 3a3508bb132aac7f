/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the per-sender write-notice bins (writenotice/cm_wn_bin.c) over the fake
 * one-sided layer (fake_rma.h: ranks are threads): a notice is seen only once its tail is
 * committed, each exactly once and in posting order; a full bin counts an overflow instead and
 * loses nothing else; the consumed index returned frees the room; a reset drops what is there;
 * and under concurrent posting and draining no notice is seen twice or skipped without an
 * overflow saying so.
 */
#include "config.h"
#include "writenotice/cm_wn_bin.h"
#include "tests/unit/fake_rma.h"

#include <check.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define NPROCS 4
#define CAP    8
#define AREA   8192
#define OFF_BINS  0
#define OFF_HEADS 4096

static fake_world_t *world;
static cm_wn_bin_t wb[NPROCS];

static void setup(void)
{
    world = fake_world_create(NPROCS, AREA);
    for (int r = 0; r < NPROCS; r++) {
        cm_wn_bin_seg_t seg = {fake_base(world, r), OFF_BINS, OFF_HEADS, CAP};
        ck_assert_int_eq(cm_wn_bin_init(&wb[r], fake_rma(world, r), &seg), CM_OK);
    }
}

static void teardown(void)
{
    for (int r = 0; r < NPROCS; r++) {
        cm_wn_bin_fini(&wb[r]);
    }
    fake_world_destroy(world);
}

/* What a drain saw: pages in order, per sender (the page numbers say which). */
typedef struct {
    uint64_t pages[256];
    int      n;
} seen_t;

static cm_status_t visit(uint64_t page, void *arg)
{
    seen_t *s = arg;
    ck_assert_int_lt(s->n, 256);
    s->pages[s->n++] = page;
    return CM_OK;
}

static void drain(int r, seen_t *s, bool *overflowed)
{
    memset(s, 0, sizeof(*s));
    ck_assert_int_eq(cm_wn_bin_drain(&wb[r], visit, s, overflowed), CM_OK);
}

START_TEST(test_bin_needs_commit)
{
    seen_t s;
    bool ovf;

    ck_assert_int_eq(cm_wn_bin_post(&wb[0], 1, 42), CM_OK);
    drain(1, &s, &ovf);
    ck_assert_int_eq(s.n, 0); /* the slot is there, its tail is not */
    ck_assert(!ovf);
    ck_assert_int_eq(cm_wn_bin_commit(&wb[0]), CM_OK);
    drain(1, &s, &ovf);
    ck_assert_int_eq(s.n, 1);
    ck_assert_uint_eq(s.pages[0], 42);
    drain(1, &s, &ovf);
    ck_assert_int_eq(s.n, 0); /* once */
}
END_TEST

START_TEST(test_bin_order_per_sender)
{
    seen_t s;
    bool ovf;

    /* Every rank posts to rank 3, interleaved; page = sender * 100 + k. */
    for (int k = 0; k < CAP; k++) {
        for (int r = 0; r < 3; r++) {
            ck_assert_int_eq(cm_wn_bin_post(&wb[r], 3, (uint64_t)(r * 100 + k)), CM_OK);
        }
    }
    for (int r = 0; r < 3; r++) {
        ck_assert_int_eq(cm_wn_bin_commit(&wb[r]), CM_OK);
    }
    drain(3, &s, &ovf);
    ck_assert(!ovf);
    ck_assert_int_eq(s.n, 3 * CAP);
    for (int i = 0; i < s.n; i++) {
        ck_assert_uint_eq(s.pages[i], (uint64_t)((i / CAP) * 100 + i % CAP));
    }
}
END_TEST

START_TEST(test_bin_overflow)
{
    seen_t s;
    bool ovf;

    for (int k = 0; k < CAP + 3; k++) {
        ck_assert_int_eq(cm_wn_bin_post(&wb[0], 2, (uint64_t)k), CM_OK);
    }
    ck_assert_int_eq(cm_wn_bin_commit(&wb[0]), CM_OK);
    ck_assert_uint_eq(wb[0].posted, CAP);
    ck_assert_uint_eq(wb[0].overflows, 3);
    drain(2, &s, &ovf);
    ck_assert(ovf);               /* the three that did not fit: invalidate everything */
    ck_assert_int_eq(s.n, CAP);   /* and those that did, once each */
    for (int i = 0; i < CAP; i++) {
        ck_assert_uint_eq(s.pages[i], (uint64_t)i);
    }
    drain(2, &s, &ovf);
    ck_assert(!ovf);
    ck_assert_int_eq(s.n, 0);
    /* The consumed index went back: a whole bin's worth fits again. */
    for (int k = 0; k < CAP; k++) {
        ck_assert_int_eq(cm_wn_bin_post(&wb[0], 2, (uint64_t)(50 + k)), CM_OK);
    }
    ck_assert_int_eq(cm_wn_bin_commit(&wb[0]), CM_OK);
    ck_assert_uint_eq(wb[0].overflows, 3);
    drain(2, &s, &ovf);
    ck_assert(!ovf);
    ck_assert_int_eq(s.n, CAP);
    ck_assert_uint_eq(s.pages[CAP - 1], (uint64_t)(50 + CAP - 1));
}
END_TEST

START_TEST(test_bin_reset_local)
{
    seen_t s;
    bool ovf;

    for (int k = 0; k < CAP + 1; k++) {
        ck_assert_int_eq(cm_wn_bin_post(&wb[1], 0, (uint64_t)k), CM_OK);
    }
    ck_assert_int_eq(cm_wn_bin_commit(&wb[1]), CM_OK);
    ck_assert_int_eq(cm_wn_bin_reset_local(&wb[0]), CM_OK);
    drain(0, &s, &ovf);
    ck_assert(!ovf);
    ck_assert_int_eq(s.n, 0);
    ck_assert_int_eq(cm_wn_bin_post(&wb[1], 0, 7), CM_OK);  /* room again */
    ck_assert_int_eq(cm_wn_bin_commit(&wb[1]), CM_OK);
    ck_assert_uint_eq(wb[1].overflows, 1);
    drain(0, &s, &ovf);
    ck_assert_int_eq(s.n, 1);
    ck_assert_uint_eq(s.pages[0], 7);
}
END_TEST

/* ---- concurrent posting and draining ---------------------------------------------------- */

#define ROUNDS 400

static struct {
    uint64_t next[NPROCS][NPROCS];  /* [receiver][sender]: the next page number expected */
    int      dup_or_skip;
    uint64_t seen, overflows;
} cc;

typedef struct {
    int r;
} cc_arg_t;

static cm_status_t cc_visit(uint64_t page, void *arg)
{
    cc_arg_t *a = arg;
    int sender = (int)(page >> 32);
    uint64_t k = page & 0xffffffffu;

    /* In order from each sender; a gap only where an overflow was counted (checked below). */
    if (k < cc.next[a->r][sender]) {
        __atomic_fetch_add(&cc.dup_or_skip, 1, __ATOMIC_SEQ_CST);
    }
    cc.next[a->r][sender] = k + 1;
    __atomic_fetch_add(&cc.seen, 1, __ATOMIC_SEQ_CST);
    return CM_OK;
}

static void cc_rank(int r, void *arg)
{
    cc_arg_t a = {r};
    uint64_t k = 0;
    bool ovf;

    (void)arg;
    for (int round = 0; round < ROUNDS; round++) {
        /* A release: a few notices to each other rank, then the tails. */
        for (int n = 0; n < 1 + round % 3; n++, k++) {
            for (int t = 0; t < NPROCS; t++) {
                if (t != r) {
                    ck_assert_int_eq(cm_wn_bin_post(&wb[r], t, ((uint64_t)r << 32) | k), CM_OK);
                }
            }
        }
        ck_assert_int_eq(cm_wn_bin_commit(&wb[r]), CM_OK);
        /* An acquire. */
        ck_assert_int_eq(cm_wn_bin_drain(&wb[r], cc_visit, &a, &ovf), CM_OK);
        if (ovf) {
            __atomic_fetch_add(&cc.overflows, 1, __ATOMIC_SEQ_CST);
        }
        sched_yield();
    }
}

START_TEST(test_bin_concurrent)
{
    bool ovf;
    uint64_t posted = 0, overflowed = 0;

    memset(&cc, 0, sizeof(cc));
    fake_run(world, cc_rank, NULL);
    for (int r = 0; r < NPROCS; r++) {
        cc_arg_t a = {r};
        ck_assert_int_eq(cm_wn_bin_drain(&wb[r], cc_visit, &a, &ovf), CM_OK);
        posted += wb[r].posted;
        overflowed += wb[r].overflows;
    }
    ck_assert_int_eq(cc.dup_or_skip, 0);
    ck_assert_uint_eq(cc.seen, posted);         /* every notice that fit, once */
    ck_assert_uint_gt(posted, 0);
    /* A receiver that drains every round seldom lets a bin fill; when one did, it was told. */
    ck_assert(overflowed == 0 || cc.overflows > 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wn_bin");
    TCase *tc = tcase_create("bins");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_bin_needs_commit);
    tcase_add_test(tc, test_bin_order_per_sender);
    tcase_add_test(tc, test_bin_overflow);
    tcase_add_test(tc, test_bin_reset_local);
    tcase_add_test(tc, test_bin_concurrent);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
