/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: the delay-injection model and the shared-region layout. */
#include "config.h"
#include "rma/cm_rma_delay.h"
#include "src/runtime/cm_runtime.h"

#include <check.h>
#include <stdlib.h>

/* The model's settings: latency, bandwidth (B/s), overhead, occupancy, packet, interrupt. */
static void delay_init(cm_rma_delay_t *d, uint64_t lat, double bw, uint64_t ovh, uint64_t occ,
                       size_t packet, uint64_t irq)
{
    cm_rma_delay_cfg_t c = {.latency_ns = lat, .bandwidth = bw, .overhead_ns = ovh,
                            .occupancy_ns = occ, .packet = packet, .interrupt_ns = irq};
    cm_rma_delay_init(d, &c);
}

START_TEST(test_delay_off)
{
    cm_rma_delay_t d;
    delay_init(&d, 0, 0, 0, 0, 0, 0);
    ck_assert(!d.enabled);
    ck_assert_uint_eq(d.packet, 4096); /* 0: the default packet */
    delay_init(&d, 0, 1e6, 0, 0, 0, 0);
    ck_assert(d.enabled);
    delay_init(&d, 0, 0, 0, 5, 0, 0);
    ck_assert(d.enabled); /* occupancy alone */
    delay_init(&d, 0, 0, 0, 0, 0, 5);
    ck_assert(d.enabled); /* the interrupt alone */
}
END_TEST

START_TEST(test_delay_latency_overhead)
{
    cm_rma_delay_t d;
    uint64_t cpu, ready;
    delay_init(&d, 2000, 0, 300, 0, 0, 0);
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
    delay_init(&d, 100, 1e9, 0, 0, 0, 0); /* 1 ns per byte */
    ready = cm_rma_delay_charge(&d, 0, 1000, &cpu);
    ck_assert_uint_eq(ready, 1000 + 100);
    ready = cm_rma_delay_charge(&d, 0, 1000, &cpu); /* queued behind the first */
    ck_assert_uint_eq(ready, 2000 + 100);
    ready = cm_rma_delay_charge(&d, 5000, 500, &cpu); /* link idle again */
    ck_assert_uint_eq(ready, 5500 + 100);
    delay_init(&d, 0, 400e6, 0, 0, 0, 0);
    ready = cm_rma_delay_charge(&d, 0, 4096, &cpu);
    ck_assert_uint_eq(ready, 10240); /* 4096 B at 400 MB/s */
}
END_TEST

START_TEST(test_delay_occupancy_packets)
{
    cm_rma_delay_t d;
    uint64_t cpu, ready;
    delay_init(&d, 0, 0, 0, 5000, 4096, 0); /* the seed's 1000 cycles at 5 ns */
    ck_assert_uint_eq(cm_rma_delay_wire(&d, 0), 5000);     /* a null message is a packet */
    ck_assert_uint_eq(cm_rma_delay_wire(&d, 8), 5000);
    ck_assert_uint_eq(cm_rma_delay_wire(&d, 4096), 5000);
    ck_assert_uint_eq(cm_rma_delay_wire(&d, 4097), 10000);  /* two packets */
    ck_assert_uint_eq(cm_rma_delay_wire(&d, 65536), 80000); /* 16 */
    /* Packets serialize on the interface: a second operation issued at once waits. */
    ready = cm_rma_delay_charge(&d, 0, 8, &cpu);
    ck_assert_uint_eq(ready, 5000);
    ready = cm_rma_delay_charge(&d, 0, 8, &cpu);
    ck_assert_uint_eq(ready, 10000);
    ck_assert_uint_eq(cpu, 0); /* the CPU is not the interface: no overhead set */
    /* With bandwidth: a packet's occupancy and its bytes, on the one queue. */
    delay_init(&d, 0, 1e9, 0, 100, 1024, 0);
    ck_assert_uint_eq(cm_rma_delay_wire(&d, 2048), 2 * 100 + 2048);
}
END_TEST

START_TEST(test_delay_message_half_latency)
{
    cm_rma_delay_t d;
    uint64_t cpu, due, ready;
    delay_init(&d, 10000, 0, 600, 0, 0, 0);
    /* A message is half a round trip: a request and its reply add one latency, as a get. */
    due = cm_rma_delay_message(&d, 1000, 8, &cpu);
    ck_assert_uint_eq(cpu, 1600);
    ck_assert_uint_eq(due, 1600 + 5000);
    ready = cm_rma_delay_charge(&d, 1000, 8, &cpu);
    ck_assert_uint_eq(ready, 1600 + 10000);
    /* The interrupt is the target's, not in the issuer's arithmetic. */
    delay_init(&d, 0, 0, 0, 0, 0, 7000);
    ck_assert(d.enabled);
    ck_assert_uint_eq(cm_rma_delay_message(&d, 50, 8, &cpu), 50);
    ck_assert_uint_eq(d.interrupt_ns, 7000);
}
END_TEST

START_TEST(test_layout)
{
    cm_config_t cfg = {0};
    cm_layout_t l;

    cfg.shared_base = 0x200000000000ull;
    cfg.shared_size = 1000;
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, 5000, &l), CM_OK);
    ck_assert_uint_eq(l.shared_size, 4096);
    ck_assert_uint_eq(l.meta_size, 8192);       /* automatic: what the job needs, page rounded */
    ck_assert_uint_eq(l.meta_base % (2u << 20), 0);
    ck_assert(l.meta_base + l.meta_size <= cfg.shared_base); /* below, not overlapping */
    ck_assert(cfg.shared_base - l.meta_base < (4u << 20));
    ck_assert_uint_eq(l.app_base, cfg.shared_base);
    ck_assert_uint_eq(l.net_base, cfg.shared_base + (1u << 30)); /* next GiB above the app view */

    cfg.shared_size = (3ul << 30) + 5;          /* views never overlap */
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, 5000, &l), CM_OK);
    ck_assert(l.net_base >= l.app_base + l.shared_size);
    ck_assert_uint_eq(l.net_base % (1u << 30), 0);

    cfg.shared_size = 1000;
    cfg.meta_size   = 4096;                     /* explicit but too small */
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, 5000, &l), CM_ERR_INVALID);
    cfg.meta_size   = 1u << 20;                 /* explicit and large enough */
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, 5000, &l), CM_OK);
    ck_assert_uint_eq(l.meta_size, 1u << 20);
    cfg.meta_size   = 0;

    cfg.shared_base = 0x200000000100ull;        /* not page aligned */
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, 5000, &l), CM_ERR_INVALID);
    cfg.shared_base = 0x1000;                   /* no room below for the metadata */
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, 5000, &l), CM_ERR_INVALID);
    cfg.shared_base = 0x200000000000ull;
    cfg.shared_size = 0;
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, 5000, &l), CM_ERR_INVALID);
    cfg.shared_size = 100ul << 40;              /* two views of 100 TiB do not fit below 128 TiB */
    ck_assert_int_eq(cm_runtime_layout(&cfg, 4096, 5000, &l), CM_ERR_INVALID);
}
END_TEST

START_TEST(test_meta_layout)
{
    cm_meta_layout_t m;
    size_t areas[10];

    ck_assert_int_eq(cm_meta_layout_compute(262144, 4, 65536, 5000, 4096, &m), CM_OK);
    ck_assert_uint_eq(m.ring_slots, 8192);      /* rounded up to a power of two */
    ck_assert_uint_eq(m.dir_per_proc, 65536);
    ck_assert_uint_eq(m.lock_per_proc, 16384);
    ck_assert_uint_eq(m.total % 4096, 0);
    /* Areas in order, 64-byte aligned, each large enough, all inside the total. */
    areas[0] = m.dir_entries; areas[1] = m.dir_qnode; areas[2] = m.wn_ctl; areas[3] = m.wn_slots;
    areas[4] = m.wn_pending; areas[5] = m.lock_tails; areas[6] = m.lock_qnodes;
    areas[7] = m.barrier_flags; areas[8] = m.stats; areas[9] = m.scratch;
    for (int i = 0; i < 10; i++) {
        ck_assert_uint_eq(areas[i] % 64, 0);
        if (i > 0) {
            ck_assert(areas[i] > areas[i - 1]);
        }
    }
    ck_assert(m.dir_qnode >= m.dir_entries + 65536 * CM_DIR_ENTRY_BYTES);
    ck_assert(m.wn_pending >= m.wn_slots + 8192 * 8);
    ck_assert(m.lock_tails >= m.wn_pending + 262144 * 8);
    ck_assert(m.barrier_flags >= m.lock_qnodes + 65536 * CM_META_LOCK_QNODE);
    ck_assert(m.scratch >= m.stats + 4 * CM_META_STATS_SLOT);
    ck_assert(m.total >= m.scratch + CM_META_SCRATCH);
    /* Uneven division rounds up. */
    ck_assert_int_eq(cm_meta_layout_compute(10, 3, 7, 1, 4096, &m), CM_OK);
    ck_assert_uint_eq(m.dir_per_proc, 4);
    ck_assert_uint_eq(m.lock_per_proc, 3);
    ck_assert_uint_eq(m.ring_slots, 1);
    ck_assert_int_eq(cm_meta_layout_compute(10, 0, 7, 1, 4096, &m), CM_ERR_INVALID);
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
    tcase_add_test(tc, test_delay_occupancy_packets);
    tcase_add_test(tc, test_delay_message_half_latency);
    tcase_add_test(tc, test_layout);
    tcase_add_test(tc, test_meta_layout);
    tcase_add_test(tc, test_status_strings);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
