/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the TreadMarks baseline's pure parts: diff encoding and
 * application (with randomized pages, false-sharing merges and malformed
 * input), vector-timestamp ordering, and interval bookkeeping (send sets,
 * duplicates, gaps, wire form, garbage collection).
 */
#include "config.h"
#include "src/protocols/treadmarks/cm_tmk_diff.h"
#include "src/protocols/treadmarks/cm_tmk_interval.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define PS 4096

static unsigned char page[PS], twin[PS], copy[PS], diff[2 * PS + 64];

/* ---- diffs ------------------------------------------------------------------ */

START_TEST(test_diff_identical_is_empty)
{
    memset(page, 7, PS);
    memcpy(twin, page, PS);
    ck_assert_uint_eq(cm_tmk_diff_encode(page, twin, PS, diff), 0);
    ck_assert_int_eq(cm_tmk_diff_apply(copy, PS, diff, 0), CM_OK);
}
END_TEST

START_TEST(test_diff_runs)
{
    size_t len;
    memset(twin, 0, PS);
    memcpy(page, twin, PS);
    page[0] = 1;                    /* word 0 */
    page[4 * 10 + 3] = 2;           /* word 10 */
    memset(page + 4 * 20, 3, 4 * 5); /* words 20..24 */
    page[PS - 1] = 4;               /* last word */
    len = cm_tmk_diff_encode(page, twin, PS, diff);
    /* four runs: 1 + 1 + 5 + 1 words, a 4-byte header each; the three words changed in one
     * byte carry a mask byte each, the five changed whole none */
    ck_assert_uint_eq(len, 4 * 4 + 8 * 4 + 3);
    memset(copy, 0, PS);
    ck_assert_int_eq(cm_tmk_diff_apply(copy, PS, diff, len), CM_OK);
    ck_assert_mem_eq(copy, page, PS);
}
END_TEST

START_TEST(test_diff_worst_case_bound)
{
    size_t len;
    memset(twin, 0, PS);
    memset(page, 0, PS);
    for (size_t w = 0; w < PS / 4; w += 2) {
        page[4 * w] = 1; /* every other word: the most runs */
    }
    len = cm_tmk_diff_encode(page, twin, PS, diff);
    ck_assert_uint_eq(len, (PS / 8) * 9); /* header, word, mask byte */
    ck_assert_uint_le(len, cm_tmk_diff_max(PS));
    memset(page, 0xff, PS);
    len = cm_tmk_diff_encode(page, twin, PS, diff);
    ck_assert_uint_eq(len, 4 + PS);
    ck_assert_uint_le(len, cm_tmk_diff_max(PS));
}
END_TEST

/* Random pages: diff(page, twin) applied to twin gives page, and never touches unchanged bytes. */
START_TEST(test_diff_random)
{
    unsigned seed = 12345;
    for (int round = 0; round < 500; round++) {
        int bad = 0;
        size_t len;
        int nchanges = rand_r(&seed) % 64;
        for (size_t i = 0; i < PS; i++) {
            twin[i] = (unsigned char)rand_r(&seed);
        }
        memcpy(page, twin, PS);
        for (int c = 0; c < nchanges; c++) {
            size_t at = (size_t)rand_r(&seed) % PS, n = 1 + (size_t)rand_r(&seed) % 64;
            for (size_t i = at; i < at + n && i < PS; i++) {
                page[i] = (unsigned char)rand_r(&seed);
            }
        }
        len = cm_tmk_diff_encode(page, twin, PS, diff);
        ck_assert_uint_le(len, cm_tmk_diff_max(PS));
        ck_assert_int_eq(cm_tmk_diff_check(PS, diff, len), CM_OK);
        /* applied to a page whose unchanged bytes hold something else: only changed bytes land */
        for (size_t i = 0; i < PS; i++) {
            copy[i] = (unsigned char)~twin[i];
        }
        ck_assert_int_eq(cm_tmk_diff_apply(copy, PS, diff, len), CM_OK);
        for (size_t i = 0; i < PS; i++) {
            bad += copy[i] != (page[i] != twin[i] ? page[i] : (unsigned char)~twin[i]);
        }
        ck_assert_msg(bad == 0, "round %d: %d wrong bytes", round, bad);
    }
}
END_TEST

/* Two writers of one page, each from a copy of the same twin: the page a and b start as, and
 * the result both diffs must give (set up by the caller from twin). */
static unsigned char wa[PS], wb[PS], wwant[PS];

static void two_writers_begin(unsigned seed)
{
    for (size_t i = 0; i < PS; i++) {
        twin[i] = (unsigned char)rand_r(&seed);
    }
    memcpy(wa, twin, PS);
    memcpy(wb, twin, PS);
    memcpy(wwant, twin, PS);
}

/* Both writers' diffs, applied to the twin in either order, give wwant. */
static void two_writers_merge(void)
{
    static unsigned char da[2 * PS], db[2 * PS], m1[PS], m2[PS];
    size_t la = cm_tmk_diff_encode(wa, twin, PS, da), lb = cm_tmk_diff_encode(wb, twin, PS, db);

    ck_assert_uint_le(la, cm_tmk_diff_max(PS));
    ck_assert_uint_le(lb, cm_tmk_diff_max(PS));
    memcpy(m1, twin, PS);
    memcpy(m2, twin, PS);
    ck_assert_int_eq(cm_tmk_diff_apply(m1, PS, da, la), CM_OK);
    ck_assert_int_eq(cm_tmk_diff_apply(m1, PS, db, lb), CM_OK);
    ck_assert_int_eq(cm_tmk_diff_apply(m2, PS, db, lb), CM_OK);
    ck_assert_int_eq(cm_tmk_diff_apply(m2, PS, da, la), CM_OK);
    ck_assert_mem_eq(m1, wwant, PS);
    ck_assert_mem_eq(m2, wwant, PS);
}

/* Two writers of disjoint words of one page (false sharing): both diffs merge, in either order. */
START_TEST(test_diff_false_sharing_merge)
{
    two_writers_begin(99);
    for (size_t w = 0; w < PS / 4; w++) {
        unsigned char *dst = (w % 3 == 0) ? wa : (w % 3 == 1) ? wb : NULL;
        if (dst != NULL) {
            unsigned char v[4] = {(unsigned char)w, (unsigned char)(w >> 8), 0x5a, 0xa5};
            memcpy(dst + 4 * w, v, 4);
            memcpy(wwant + 4 * w, v, 4);
        }
    }
    two_writers_merge();
}
END_TEST

/* Two writers of disjoint bytes of the same words (VOLREND's image blocks straddle words): both
 * diffs merge, in either order. */
START_TEST(test_diff_subword_merge)
{
    two_writers_begin(7);
    for (size_t i = 0; i < PS; i++) {
        /* blocks of 1, 2 and 3 bytes, alternating writers, straddling word boundaries */
        unsigned char *dst = ((i / (1 + i % 3)) % 2) ? wa : wb;
        unsigned char v = (unsigned char)(twin[i] + 1 + i % 251);
        dst[i] = v;
        wwant[i] = v;
    }
    two_writers_merge();
}
END_TEST

START_TEST(test_diff_malformed)
{
    unsigned char bad[16] = {0};
    uint16_t h[2];
    memset(copy, 1, PS);
    memcpy(twin, copy, PS);
    /* truncated header */
    ck_assert_int_eq(cm_tmk_diff_apply(copy, PS, bad, 3), CM_ERR_INVALID);
    /* run past the end of the page */
    h[0] = PS / 4 - 1;
    h[1] = 2;
    memcpy(bad, h, 4);
    ck_assert_int_eq(cm_tmk_diff_apply(copy, PS, bad, 12), CM_ERR_INVALID);
    /* zero-length run */
    h[0] = 0;
    h[1] = 0;
    memcpy(bad, h, 4);
    ck_assert_int_eq(cm_tmk_diff_apply(copy, PS, bad, 4), CM_ERR_INVALID);
    /* data shorter than the run says */
    h[1] = 3;
    memcpy(bad, h, 4);
    ck_assert_int_eq(cm_tmk_diff_apply(copy, PS, bad, 12), CM_ERR_INVALID);
    /* a masked run without its mask byte */
    h[1] = 1 | CM_TMK_RUN_MASKED;
    memcpy(bad, h, 4);
    ck_assert_int_eq(cm_tmk_diff_apply(copy, PS, bad, 8), CM_ERR_INVALID);
    ck_assert_mem_eq(copy, twin, PS); /* nothing applied */
}
END_TEST

/* ---- vector timestamps and intervals ------------------------------------------- */

#define NP 3

static cm_tmk_interval_t *iv_make(uint32_t proc, uint32_t v0, uint32_t v1, uint32_t v2,
                                  uint32_t pg)
{
    uint32_t vt[NP] = {v0, v1, v2};
    return cm_tmk_iv_new(NP, proc, vt, &pg, 1);
}

START_TEST(test_vt_order)
{
    uint32_t a[NP] = {1, 0, 2}, b[NP] = {1, 1, 2}, c[NP] = {2, 0, 1};
    cm_tmk_interval_t *x = iv_make(0, 1, 0, 0, 5);  /* p0's 1st */
    cm_tmk_interval_t *y = iv_make(1, 1, 1, 0, 5);  /* p1's 1st, after seeing x */
    cm_tmk_interval_t *z = iv_make(2, 0, 0, 1, 5);  /* p2's 1st, concurrent with both */
    cm_tmk_interval_t *x2 = iv_make(0, 2, 0, 0, 5); /* p0's 2nd */

    ck_assert(cm_tmk_vt_leq(a, b, NP));
    ck_assert(!cm_tmk_vt_leq(b, a, NP));
    ck_assert(!cm_tmk_vt_leq(a, c, NP) && !cm_tmk_vt_leq(c, a, NP));
    ck_assert(cm_tmk_iv_precedes(x, y));
    ck_assert(!cm_tmk_iv_precedes(y, x));
    ck_assert(!cm_tmk_iv_precedes(x, z) && !cm_tmk_iv_precedes(z, x));
    ck_assert(cm_tmk_iv_precedes(x, x2) && !cm_tmk_iv_precedes(x2, x));
    ck_assert(!cm_tmk_iv_precedes(x, x));
    ck_assert_uint_lt(cm_tmk_vt_sum(x->vt, NP), cm_tmk_vt_sum(y->vt, NP));
    cm_tmk_iv_free(x);
    cm_tmk_iv_free(y);
    cm_tmk_iv_free(z);
    cm_tmk_iv_free(x2);
}
END_TEST

static cm_status_t collect(const cm_tmk_interval_t *iv, void *arg)
{
    uint32_t *out = arg; /* pairs (proc, index), out[0] = count */
    out[1 + 2 * out[0]]     = iv->proc;
    out[1 + 2 * out[0] + 1] = iv->index;
    out[0]++;
    return CM_OK;
}

START_TEST(test_store)
{
    cm_tmk_store_t s;
    bool added;
    uint32_t seen[NP] = {1, 0, 0}, got[64] = {0};

    ck_assert_int_eq(cm_tmk_store_init(&s, NP), CM_OK);
    ck_assert_int_eq(cm_tmk_store_add(&s, iv_make(0, 1, 0, 0, 5), &added), CM_OK);
    ck_assert(added);
    ck_assert_int_eq(cm_tmk_store_add(&s, iv_make(1, 1, 1, 0, 6), &added), CM_OK);
    ck_assert(added);
    ck_assert_int_eq(cm_tmk_store_add(&s, iv_make(0, 2, 1, 0, 7), &added), CM_OK);
    ck_assert(added);
    /* a duplicate is dropped, a gap refused */
    ck_assert_int_eq(cm_tmk_store_add(&s, iv_make(0, 1, 0, 0, 5), &added), CM_OK);
    ck_assert(!added);
    {
        cm_tmk_interval_t *gap = iv_make(2, 0, 0, 2, 8);
        ck_assert_int_eq(cm_tmk_store_add(&s, gap, &added), CM_ERR_INVALID);
        cm_tmk_iv_free(gap);
    }
    ck_assert_uint_eq(s.vt[0], 2);
    ck_assert_uint_eq(s.vt[1], 1);
    ck_assert_uint_eq(s.vt[2], 0);
    ck_assert_ptr_nonnull(cm_tmk_store_get(&s, 0, 2));
    ck_assert_ptr_null(cm_tmk_store_get(&s, 0, 3));
    ck_assert_uint_eq(cm_tmk_store_get(&s, 0, 2)->notices[0].page, 7);

    /* send set for an acquirer that has seen p0's first interval only */
    ck_assert_int_eq(cm_tmk_store_send_set(&s, seen, collect, got), CM_OK);
    ck_assert_uint_eq(got[0], 2);
    ck_assert_uint_eq(got[1], 0);
    ck_assert_uint_eq(got[2], 2);
    ck_assert_uint_eq(got[3], 1);
    ck_assert_uint_eq(got[4], 1);

    /* diffs are kept once */
    {
        cm_tmk_interval_t *iv = cm_tmk_store_get(&s, 1, 1);
        size_t before = s.bytes;
        ck_assert_int_eq(cm_tmk_store_set_diff(&s, iv, 0, "abcd", 4), CM_OK);
        ck_assert_int_eq(cm_tmk_store_set_diff(&s, iv, 0, "wxyz", 4), CM_OK);
        ck_assert_mem_eq(iv->notices[0].diff, "abcd", 4);
        ck_assert_uint_eq(s.bytes, before + 4);
        ck_assert_int_eq(cm_tmk_store_set_diff(&s, iv, 1, "abcd", 4), CM_ERR_INVALID);
    }

    /* collection drops everything, keeps time, and refuses a send set from before it */
    cm_tmk_store_collect(&s);
    ck_assert_uint_eq(s.bytes, 0);
    ck_assert_ptr_null(cm_tmk_store_get(&s, 0, 2));
    ck_assert_uint_eq(s.vt[0], 2);
    ck_assert_int_eq(cm_tmk_store_send_set(&s, seen, collect, got), CM_ERR_INVALID);
    ck_assert_int_eq(cm_tmk_store_add(&s, iv_make(0, 3, 1, 0, 9), &added), CM_OK);
    ck_assert(added);
    ck_assert_ptr_nonnull(cm_tmk_store_get(&s, 0, 3));
    cm_tmk_store_fini(&s);
}
END_TEST

START_TEST(test_wire)
{
    uint32_t vt[NP] = {4, 2, 7}, pages[3] = {1, 99, 12345};
    cm_tmk_interval_t *iv = cm_tmk_iv_new(NP, 2, vt, pages, 3), *back;
    unsigned char buf[256];
    size_t len = cm_tmk_iv_pack(iv, NP, buf + 1), used; /* unaligned on purpose */

    ck_assert_uint_eq(len, cm_tmk_iv_wire_size(iv, NP));
    ck_assert_int_eq(cm_tmk_iv_unpack(buf + 1, len, NP, &back, &used), CM_OK);
    ck_assert_uint_eq(used, len);
    ck_assert_uint_eq(back->proc, 2);
    ck_assert_uint_eq(back->index, 7);
    ck_assert_uint_eq(back->npages, 3);
    ck_assert_mem_eq(back->vt, vt, sizeof(vt));
    ck_assert_uint_eq(back->notices[2].page, 12345);
    /* truncated and inconsistent forms are refused */
    ck_assert_int_eq(cm_tmk_iv_unpack(buf + 1, len - 1, NP, &back, &used), CM_ERR_INVALID);
    cm_tmk_iv_free(back);
    {
        uint32_t bad = 3; /* index no longer matches vt[proc] */
        memcpy(buf + 1 + 4, &bad, 4);
        ck_assert_int_eq(cm_tmk_iv_unpack(buf + 1, len, NP, &back, &used), CM_ERR_INVALID);
    }
    cm_tmk_iv_free(iv);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("treadmarks");
    TCase *d = tcase_create("diff"), *i = tcase_create("intervals");
    SRunner *r;
    int failed;

    tcase_add_test(d, test_diff_identical_is_empty);
    tcase_add_test(d, test_diff_runs);
    tcase_add_test(d, test_diff_worst_case_bound);
    tcase_add_test(d, test_diff_random);
    tcase_add_test(d, test_diff_false_sharing_merge);
    tcase_add_test(d, test_diff_subword_merge);
    tcase_add_test(d, test_diff_malformed);
    tcase_add_test(i, test_vt_order);
    tcase_add_test(i, test_store);
    tcase_add_test(i, test_wire);
    suite_add_tcase(s, d);
    suite_add_tcase(s, i);
    r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? 0 : 1;
}
