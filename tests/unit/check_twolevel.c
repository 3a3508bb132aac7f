/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the two-level protocol's two-way diffs (src/protocols/twolevel/cm_2l_diff.c):
 * an outgoing diff hands out exactly the runs of bytes where the host's copy differs from its
 * twin (maximal, in order, none empty) and leaves the twin equal to the copy; an incoming diff
 * writes the copy and the twin where the page got from its home differs from the twin and
 * nowhere else, so that the host's own unsent writes stay; two hosts writing disjoint bytes of
 * one page through a home end with every write everywhere; and a process storing to its own
 * bytes of the copy while incoming diffs run keeps every store.
 */
#include "config.h"
#include "src/protocols/twolevel/cm_2l_int.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LEN 4096

typedef struct {
    size_t off[LEN], len[LEN];
    int    n;
} runs_t;

static cm_status_t collect(size_t off, size_t len, void *arg)
{
    runs_t *r = arg;
    r->off[r->n] = off;
    r->len[r->n] = len;
    r->n++;
    return CM_OK;
}

static void fill_random(char *p, size_t len, unsigned *seed)
{
    for (size_t i = 0; i < len; i++) {
        p[i] = (char)rand_r(seed);
    }
}

START_TEST(test_diff_out_runs)
{
    static char copy[LEN], twin[LEN], before[LEN];
    unsigned seed = 7 + (unsigned)_i;

    for (int round = 0; round < 200; round++) {
        runs_t r = {.n = 0};
        size_t changed, expect = 0, covered = 0;

        fill_random(twin, LEN, &seed);
        memcpy(copy, twin, LEN);
        /* Changes of every shape: single bytes, runs across words, the page's ends. */
        for (int k = rand_r(&seed) % 40; k > 0; k--) {
            size_t at = (size_t)rand_r(&seed) % LEN, n = 1 + (size_t)rand_r(&seed) % 24;
            for (size_t i = at; i < at + n && i < LEN; i++) {
                copy[i] = (char)(twin[i] + 1 + rand_r(&seed) % 200);
            }
        }
        if (round % 10 == 0) {
            copy[0] ^= 1;
            copy[LEN - 1] ^= 1;
        }
        for (size_t i = 0; i < LEN; i++) {
            expect += copy[i] != twin[i];
        }
        memcpy(before, twin, LEN);
        ck_assert_int_eq(cm_2l_diff_out(copy, twin, LEN, collect, &r, &changed), CM_OK);
        ck_assert_uint_eq(changed, expect);
        ck_assert_mem_eq(twin, copy, LEN);
        for (int j = 0; j < r.n; j++) {
            ck_assert_uint_gt(r.len[j], 0);
            /* In order, apart (maximal: the byte before and after each run did not change). */
            if (j > 0) {
                ck_assert_uint_gt(r.off[j], r.off[j - 1] + r.len[j - 1]);
            }
            if (r.off[j] > 0) {
                ck_assert(before[r.off[j] - 1] == copy[r.off[j] - 1]);
            }
            if (r.off[j] + r.len[j] < LEN) {
                ck_assert(before[r.off[j] + r.len[j]] == copy[r.off[j] + r.len[j]]);
            }
            for (size_t i = r.off[j]; i < r.off[j] + r.len[j]; i++) {
                ck_assert(before[i] != copy[i]);
            }
            covered += r.len[j];
        }
        ck_assert_uint_eq(covered, expect);
    }
}
END_TEST

START_TEST(test_diff_in_keeps_local)
{
    static char copy[LEN], twin[LEN], got[LEN], base[LEN], local[LEN];
    static bool mine[LEN];
    unsigned seed = 11 + (unsigned)_i;

    for (int round = 0; round < 200; round++) {
        size_t remote = 0;

        fill_random(base, LEN, &seed);
        memcpy(twin, base, LEN);
        memcpy(copy, base, LEN);
        memcpy(got, base, LEN);
        memset(mine, 0, sizeof(mine));
        /* Our host's unsent writes on some bytes, the home's newer ones on others. */
        for (size_t i = 0; i < LEN; i++) {
            int what = rand_r(&seed) % 8;
            if (what == 0) {
                copy[i] = (char)(base[i] + 1);
                mine[i] = true;
            } else if (what == 1) {
                got[i] = (char)(base[i] + 2);
                remote++;
            }
        }
        memcpy(local, copy, LEN);
        ck_assert_uint_eq(cm_2l_diff_in(copy, twin, got, LEN, true), remote);
        for (size_t i = 0; i < LEN; i++) {
            ck_assert(copy[i] == (mine[i] ? local[i] : got[i]));
            ck_assert(twin[i] == got[i]);
        }
    }
    /* No twin: nobody here writes the page, the copy is what was got. */
    fill_random(got, LEN, &seed);
    ck_assert_uint_eq(cm_2l_diff_in(copy, twin, got, LEN, false), LEN);
    ck_assert_mem_eq(copy, got, LEN);
}
END_TEST

/* Host A and host B each write their own bytes, then release (out to the home) and fault
 * (in from the home) in turns: every byte ends with its writer's value at the home and on
 * both hosts. */
static char home_pg[LEN];

static cm_status_t put_home(size_t off, size_t len, void *arg)
{
    memcpy(home_pg + off, (const char *)arg + off, len);
    return CM_OK;
}

START_TEST(test_two_hosts_through_home)
{
    static char copy[2][LEN], twin[2][LEN], got[LEN];
    unsigned seed = 3;
    size_t changed;

    fill_random(home_pg, LEN, &seed);
    for (int h = 0; h < 2; h++) {
        memcpy(copy[h], home_pg, LEN);
        memcpy(twin[h], home_pg, LEN);
    }
    for (int round = 1; round <= 20; round++) {
        for (int h = 0; h < 2; h++) {
            /* Host h owns the bytes i with i % 2 == h; writes a few of them. */
            for (int k = 0; k < 64; k++) {
                size_t i = ((size_t)rand_r(&seed) % (LEN / 2)) * 2 + (size_t)h;
                copy[h][i] = (char)(round * 2 + h);
            }
            ck_assert_int_eq(cm_2l_diff_out(copy[h], twin[h], LEN, put_home, twin[h], &changed),
                             CM_OK);
            memcpy(got, home_pg, LEN);
            cm_2l_diff_in(copy[1 - h], twin[1 - h], got, LEN, true);
        }
    }
    memcpy(got, home_pg, LEN);
    cm_2l_diff_in(copy[0], twin[0], got, LEN, true);
    ck_assert_mem_eq(copy[0], home_pg, LEN);
    ck_assert_mem_eq(copy[1], home_pg, LEN);
}
END_TEST

/* A local process stores to the odd bytes while incoming diffs bring the even ones. */
static char cc_copy[LEN], cc_twin[LEN];
static volatile int cc_stop;
static char cc_last[LEN];

static void *cc_writer(void *arg)
{
    unsigned v = 0;
    (void)arg;
    while (!cc_stop) {
        v++;
        for (size_t i = 1; i < LEN; i += 2) {
            ((volatile char *)cc_copy)[i] = (char)(v + i);
        }
    }
    for (size_t i = 1; i < LEN; i += 2) {
        cc_last[i] = (char)(v + i);
    }
    return NULL;
}

START_TEST(test_diff_in_concurrent_writer)
{
    static char got[LEN];
    pthread_t t;

    memset(cc_copy, 0, LEN);
    memset(cc_twin, 0, LEN);
    cc_stop = 0;
    ck_assert_int_eq(pthread_create(&t, NULL, cc_writer, NULL), 0);
    for (int round = 1; round <= 2000; round++) {
        memcpy(got, cc_twin, LEN);
        for (size_t i = 0; i < LEN; i += 2) {
            got[i] = (char)round;
        }
        cm_2l_diff_in(cc_copy, cc_twin, got, LEN, true);
    }
    cc_stop = 1;
    pthread_join(t, NULL);
    for (size_t i = 0; i < LEN; i++) {
        if (i % 2 == 0) {
            ck_assert_int_eq(cc_copy[i], (char)2000);
        } else {
            ck_assert_int_eq(cc_copy[i], cc_last[i]);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("twolevel");
    TCase *tc = tcase_create("diffs");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_diff_out_runs, 0, 3);
    tcase_add_loop_test(tc, test_diff_in_keeps_local, 0, 3);
    tcase_add_test(tc, test_two_hosts_through_home);
    tcase_add_test(tc, test_diff_in_concurrent_writer);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
