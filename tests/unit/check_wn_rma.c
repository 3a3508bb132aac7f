/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The write-notice ring over real one-sided operations, in one process (a
 * singleton job posting to itself): order, duplicate suppression, pending
 * bits, waiting for reserved slots, overflow without loss.
 */
#include "config.h"
#include "rma/cm_boot.h"
#include "rma/cm_rma.h"
#include "src/protocols/cm_meta.h"
#include "writenotice/cm_wn.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static cm_boot_t *boot;
static cm_rma_t *rma;
static cm_meta_layout_t meta;
static char *base = (char *)0x3f0000000000ull;

static uint64_t seen[64];
static int nseen;

static cm_status_t visit(uint64_t page, void *arg)
{
    (void)arg;
    seen[nseen++] = page;
    return CM_OK;
}

static void setup(void)
{
    cm_rma_params_t p = {0};
    cm_rma_seg_t *seg;

    ck_assert_int_eq(cm_boot_init(&boot), CM_OK);
    ck_assert(cm_boot_is_singleton(boot));
    p.boot     = boot;
    p.progress = CM_RMA_PROGRESS_OFF;
    ck_assert_int_eq(cm_rma_init(&p, &rma), CM_OK);
    ck_assert_int_eq(cm_meta_layout_compute(1000, 1, 4, 8, 4096, &meta), CM_OK);
    ck_assert_int_eq(cm_rma_seg_map(rma, base, meta.total, CM_RMA_SEG_ATOMIC, "test", &seg), CM_OK);
}

static void teardown(void)
{
    ck_assert_int_eq(cm_rma_finalize(rma), CM_OK);
    cm_boot_finalize(boot);
}

START_TEST(test_ring_roundtrip)
{
    cm_wn_t wn;
    cm_wn_seg_t wseg = cm_meta_wn_seg(&meta, base);
    bool overflow;

    ck_assert_int_eq(cm_wn_init(&wn, rma, &wseg), CM_OK);
    ck_assert_uint_eq(wn.cap, 8);
    ck_assert_int_eq(cm_wn_post(&wn, 0, 5), CM_OK);
    ck_assert_int_eq(cm_wn_post(&wn, 0, 900), CM_OK);
    ck_assert_int_eq(cm_wn_post(&wn, 0, 5), CM_OK);   /* duplicate: suppressed */
    ck_assert_int_eq(cm_wn_post(&wn, 0, 64), CM_OK);
    ck_assert_int_eq(cm_rma_flush_all(rma), CM_OK);
    ck_assert_uint_eq(wn.posted, 3);
    ck_assert_uint_eq(wn.suppressed, 1);
    nseen = 0;
    ck_assert_int_eq(cm_wn_drain(&wn, visit, NULL, &overflow), CM_OK);
    ck_assert(!overflow);
    ck_assert_int_eq(nseen, 3);
    ck_assert_uint_eq(seen[0], 5);
    ck_assert_uint_eq(seen[1], 900);
    ck_assert_uint_eq(seen[2], 64);
    for (uint64_t p = 0; p < wn.npages; p++) {
        ck_assert_uint_eq(wn.pending[p], 0); /* all consumed */
    }
    /* After the drain the same page can be posted again. */
    ck_assert_int_eq(cm_wn_post(&wn, 0, 5), CM_OK);
    ck_assert_int_eq(cm_rma_flush_all(rma), CM_OK);
    nseen = 0;
    ck_assert_int_eq(cm_wn_drain(&wn, visit, NULL, &overflow), CM_OK);
    ck_assert_int_eq(nseen, 1);
    /* Many laps around the ring. */
    for (int lap = 0; lap < 20; lap++) {
        for (uint64_t p = 0; p < 7; p++) {
            ck_assert_int_eq(cm_wn_post(&wn, 0, 100 + p + (uint64_t)lap), CM_OK);
        }
        ck_assert_int_eq(cm_rma_flush_all(rma), CM_OK);
        nseen = 0;
        ck_assert_int_eq(cm_wn_drain(&wn, visit, NULL, &overflow), CM_OK);
        ck_assert(!overflow);
        ck_assert_int_eq(nseen, 7);
        ck_assert_uint_eq(seen[6], 106 + (uint64_t)lap);
    }
    cm_wn_fini(&wn);
}
END_TEST

START_TEST(test_ring_overflow)
{
    cm_wn_t wn;
    cm_wn_seg_t wseg = cm_meta_wn_seg(&meta, base);
    bool overflow;

    ck_assert_int_eq(cm_wn_init(&wn, rma, &wseg), CM_OK);
    cm_wn_reset_local(&wn);
    for (uint64_t p = 0; p < 12; p++) {               /* 12 notices, 8 slots */
        ck_assert_int_eq(cm_wn_post(&wn, 0, p), CM_OK);
    }
    ck_assert_int_eq(cm_rma_flush_all(rma), CM_OK);
    ck_assert_uint_eq(wn.posted, 8);
    ck_assert_uint_eq(wn.full, 4);
    /* A pending word stands for a reserved notice only: set for the 8 in the ring, never for
     * the 4 that found it full (cm_wn.h, suppression invariant). */
    for (uint64_t p = 0; p < 12; p++) {
        ck_assert_uint_eq(wn.pending[p], p < 8 ? 1 : 0);
    }
    nseen = 0;
    ck_assert_int_eq(cm_wn_drain(&wn, visit, NULL, &overflow), CM_OK);
    ck_assert(overflow);                              /* the caller must invalidate everything */
    ck_assert_int_eq(nseen, 8);
    ck_assert_uint_eq(wn.overflows, 1);
    for (uint64_t p = 0; p < wn.npages; p++) {
        ck_assert_uint_eq(wn.pending[p], 0);          /* nothing stale blocks a later notice */
    }
    /* The ring works normally afterwards, and a dropped page can be posted again. */
    ck_assert_int_eq(cm_wn_post(&wn, 0, 11), CM_OK);
    ck_assert_int_eq(cm_rma_flush_all(rma), CM_OK);
    nseen = 0;
    ck_assert_int_eq(cm_wn_drain(&wn, visit, NULL, &overflow), CM_OK);
    ck_assert(!overflow);
    ck_assert_int_eq(nseen, 1);
    ck_assert_uint_eq(seen[0], 11);
    cm_wn_fini(&wn);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("writenotice");
    TCase *tc = tcase_create("rma");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_ring_roundtrip);
    tcase_add_test(tc, test_ring_overflow);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
