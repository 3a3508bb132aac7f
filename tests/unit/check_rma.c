/* Unit tests: the delay-injection model and the shared-region layout. */
#include "config.h"
#include "rma/cm_rma_delay.h"
#include "src/cm_runtime.h"

#include <check.h>
#include <stdlib.h>

START_TEST(test_delay_off)
{
    cm_rma_delay_t d;
    cm_rma_delay_init(&d, 0, 0, 0);
    ck_assert(!d.enabled);
    cm_rma_delay_init(&d, 0, 1e6, 0);
    ck_assert(d.enabled);
}
END_TEST

START_TEST(test_delay_latency_overhead)
{
    cm_rma_delay_t d;
    uint64_t cpu, ready;
    cm_rma_delay_init(&d, 2000, 0, 300);
    ready = cm_rma_delay_charge(&d, 1000, 8, &cpu);
    ck_assert_uint_eq(cpu, 1300);        /* the issuer is busy for the overhead */
    ck_assert_uint_eq(ready, 1300 + 2000); /* then one latency */
    /* Without a bandwidth cap operations overlap: same latency for a later op. */
    ready = cm_rma_delay_charge(&d, 1100, 4096, &cpu);
    ck_assert_uint_eq(ready, 1400 + 2000);
}
END_TEST

START_TEST(test_delay_bandwidth_queues)
{
    cm_rma_delay_t d;
    uint64_t cpu, ready;
    cm_rma_delay_init(&d, 100, 1e9, 0); /* 1 ns per byte */
    ready = cm_rma_delay_charge(&d, 0, 1000, &cpu);
    ck_assert_uint_eq(ready, 1000 + 100);
    ready = cm_rma_delay_charge(&d, 0, 1000, &cpu); /* queued behind the first */
    ck_assert_uint_eq(ready, 2000 + 100);
    ready = cm_rma_delay_charge(&d, 5000, 500, &cpu); /* link idle again */
    ck_assert_uint_eq(ready, 5500 + 100);
    cm_rma_delay_init(&d, 0, 400e6, 0);
    ready = cm_rma_delay_charge(&d, 0, 4096, &cpu);
    ck_assert_uint_eq(ready, 10240); /* 4096 B at 400 MB/s */
}
END_TEST

START_TEST(test_layout)
{
    cm_config_t cfg = {0};
    uintptr_t meta;
    size_t meta_size, shared_size;

    cfg.shared_base = 0x200000000000ull;
    cfg.shared_size = 1000;
    cfg.meta_size   = 5000;
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, &meta, &meta_size, &shared_size), CM_OK);
    ck_assert_uint_eq(shared_size, 4096);
    ck_assert_uint_eq(meta_size, 8192);
    ck_assert_uint_eq(meta % (2u << 20), 0);
    ck_assert(meta + meta_size <= cfg.shared_base); /* below, not overlapping */
    ck_assert(cfg.shared_base - meta < (4u << 20));

    cfg.shared_base = 0x200000000100ull; /* not page aligned */
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, &meta, &meta_size, &shared_size), CM_ERR_INVALID);
    cfg.shared_base = 0x1000; /* no room below for the metadata */
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, &meta, &meta_size, &shared_size), CM_ERR_INVALID);
    cfg.shared_base = 0x200000000000ull;
    cfg.shared_size = 0;
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, &meta, &meta_size, &shared_size), CM_ERR_INVALID);
    cfg.shared_size = (size_t)-4096; /* wraps around */
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, &meta, &meta_size, &shared_size), CM_ERR_INVALID);
}
END_TEST

START_TEST(test_status_strings)
{
    ck_assert_str_eq(cm_status_string(CM_OK), "success");
    ck_assert_str_eq(cm_status_string(CM_ERR_ADDR_IN_USE), "address range in use");
    ck_assert_str_eq(cm_status_string(CM_ERR_IO), "I/O error");
    ck_assert_str_eq(cm_status_string((cm_status_t)-99), "unknown status");
    ck_assert_str_eq(cm_status_string((cm_status_t)5), "unknown status");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rma");
    TCase *tc = tcase_create("model");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_delay_off);
    tcase_add_test(tc, test_delay_latency_overhead);
    tcase_add_test(tc, test_delay_bandwidth_queues);
    tcase_add_test(tc, test_layout);
    tcase_add_test(tc, test_status_strings);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
