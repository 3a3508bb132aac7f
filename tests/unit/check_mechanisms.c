/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of Cashmere's mechanisms alone, each built into this test from its own file
 * (no protocol events, no library) over the fake one-sided layer (fake_rma.h): the merge
 * buffer through its ops table, the page fill (an early copy is used only when the join found
 * the entry as seen, else the page is got again), the hooked writes (each reported store
 * reaches the home by the flush; with the merge buffer a line's stores go as one put), and the
 * check of required ops.
 */
#include "config.h"
#include "src/protocols/cashmere/cm_cm_int.h"
#include "tests/unit/fake_rma.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The protocol's state the mechanisms read (cm_cashmere.c's, not linked here), and what of the
 * protocol they call. */
cm_cm_t cm_cm;

void cm_cm_repaint(uint64_t p)
{
    (void)p; /* no inline checks here: no shadow to write */
}

/* The marker cmcc links into every checked program (src/access/cm_hooks.c): the hooked writes
 * refuse a program without it. Exported by the link (tests/Makefile.inc). */
__attribute__((used)) const char cm_build_stores[] = "CASHMERE_BUILD=stores";

/* ---- the merge buffer, through its ops ---------------------------------------------------- */

static int nwr;
static uintptr_t wr_addr[16];
static size_t wr_len[16];

static void record_write(uintptr_t addr, size_t len, void *arg)
{
    ck_assert_ptr_eq(arg, &nwr); /* the write mechanism's argument comes back */
    ck_assert_int_lt(nwr, 16);
    wr_addr[nwr] = addr;
    wr_len[nwr]  = len;
    nwr++;
}

START_TEST(test_merge_ops)
{
    const cm_merge_ops_t *ops = &cm_merge_buffer_ops;
    cm_merge_t *m = NULL;

    nwr = 0;
    ck_assert_ptr_null(cm_cm_ops_missing(&cm_fill_page_ops, &cm_write_mapped_ops, ops));
    ck_assert_int_eq(ops->init(2, record_write, &nwr, &m), CM_OK);
    ck_assert_ptr_eq(m->ops, ops);
    ops->record(m, 0x1000, 8);
    ops->record(m, 0x1008, 8);   /* merges: bytes 0-15 */
    ck_assert(cm_merge_hit(m, 0x1020, 4)); /* the fast path: the same line, another run */
    ops->record(m, 0x2000, 1);
    ck_assert_int_eq(nwr, 0);    /* nothing leaves while it fits */
    ops->record(m, 0x3000, 2);   /* the oldest line (0x1000) is displaced: its two runs go */
    ck_assert_int_eq(nwr, 2);
    ck_assert_uint_eq(wr_addr[0], 0x1000);
    ck_assert_uint_eq(wr_len[0], 16);
    ck_assert_uint_eq(wr_addr[1], 0x1020);
    ck_assert_uint_eq(wr_len[1], 4);
    ops->flush(m);               /* oldest first */
    ck_assert_int_eq(nwr, 4);
    ck_assert_uint_eq(wr_addr[2], 0x2000);
    ck_assert_uint_eq(wr_addr[3], 0x3000);
    ck_assert_uint_eq(m->line_flushes, 3);
    ops->flush(m);               /* empty: nothing */
    ck_assert_int_eq(nwr, 4);
    ops->fini(m);
}
END_TEST

/* ---- required ops --------------------------------------------------------------------- */

START_TEST(test_required_ops)
{
    cm_fill_ops_t no_map = cm_fill_page_ops;
    cm_write_ops_t no_flush = cm_write_mapped_ops;
    cm_merge_ops_t no_record = cm_merge_buffer_ops;
    const char *why;

    ck_assert_ptr_null(cm_cm_ops_missing(&cm_fill_page_ops, &cm_write_mapped_ops, NULL));
    no_map.map = NULL;
    why = cm_cm_ops_missing(&no_map, &cm_write_mapped_ops, NULL);
    ck_assert_ptr_nonnull(why);
    ck_assert_ptr_nonnull(strstr(why, "map"));
    no_flush.flush = NULL;
    why = cm_cm_ops_missing(&cm_fill_page_ops, &no_flush, NULL);
    ck_assert_ptr_nonnull(why);
    ck_assert_ptr_nonnull(strstr(why, "flush"));
    no_record.record = NULL;
    why = cm_cm_ops_missing(&cm_fill_page_ops, &cm_write_mapped_ops, &no_record);
    ck_assert_ptr_nonnull(why);
    ck_assert_ptr_nonnull(strstr(why, "record"));
    /* Optional ops left NULL are no reason: the mapped writes have no settle, store, stats. */
    ck_assert_ptr_null(cm_write_mapped_ops.settle);
    ck_assert_ptr_null(cm_write_mapped_ops.store);
}
END_TEST

/* ---- the page fill, against the fake one-sided layer ---------------------------------------- */

#define PS     4096
#define NPAGES 4

static fake_world_t *world;
static cm_fill_t *fill;
static cm_config_t cfg;

/* Rank 0 runs the mechanism; rank 1 is every page's home. Rank 0's copy of the area is its
 * network view; its application view is a separate mapping of the same size. The protocol's
 * state as a mechanism finds it, and the context its init gets, into *ctx. */
static void proto_setup(cm_protocol_ctx_t *ctx)
{
    world = fake_world_create(2, NPAGES * PS);
    memset(&cm_cm, 0, sizeof(cm_cm));
    cm_cm.me      = 0;
    cm_cm.nprocs  = 2;
    cm_cm.rma     = fake_rma(world, 0);
    cm_cm.net     = fake_base(world, 0);
    cm_cm.app     = mmap(NULL, NPAGES * PS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0);
    ck_assert_ptr_ne(cm_cm.app, MAP_FAILED);
    cm_cm.ps      = PS;
    cm_cm.shift   = 12;
    cm_cm.npages  = NPAGES;
    cm_cm.pte     = calloc(NPAGES, sizeof(*cm_cm.pte));
    cm_cm.dirty.v = calloc(NPAGES, sizeof(uint32_t));
    *ctx = (cm_protocol_ctx_t){.rank = 0, .nprocs = 2, .rma = cm_cm.rma, .app = cm_cm.app,
                               .net = cm_cm.net, .size = NPAGES * PS, .page_size = PS,
                               .npages = NPAGES, .config = &cfg};
}

static void proto_teardown(void)
{
    munmap(cm_cm.app, NPAGES * PS);
    free(cm_cm.pte);
    free(cm_cm.dirty.v);
    fake_world_destroy(world);
}

static void fill_setup(void)
{
    cm_protocol_ctx_t ctx;

    memset(&cfg, 0, sizeof(cfg));
    proto_setup(&ctx);
    ck_assert_int_eq(cm_fill_page_ops.init(&ctx, &fill), CM_OK);
    fill->ops = &cm_fill_page_ops;
}

static void fill_teardown(void)
{
    fill->ops->fini(fill);
    proto_teardown();
}

/* Page p's copy at the home (rank 1) holds byte v throughout. */
static void home_page(uint64_t p, int v)
{
    memset(fake_base(world, 1) + p * PS, v, PS);
}

static bool net_page_is(uint64_t p, int v)
{
    for (size_t i = 0; i < PS; i++) {
        if ((uint8_t)cm_cm.net[p * PS + i] != (uint8_t)v) {
            return false;
        }
    }
    return true;
}

static uint64_t gets(void)
{
    fake_counts_t c;

    fake_counts(world, &c);
    return c.gets;
}

START_TEST(test_fill_page_map)
{
    uint64_t g0 = gets();

    home_page(2, 0x5a);
    ck_assert_int_eq(fill->ops->map(fill, 2, 1, false, true), CM_OK);
    ck_assert(net_page_is(2, 0x5a));
    ck_assert_uint_eq(gets() - g0, 1);
    ck_assert_uint_eq(cm_cm.st.pages_fetched, 1);
    /* Just moved here (copied in while the entry was held) or homed here: nothing to get. */
    ck_assert_int_eq(fill->ops->map(fill, 1, 1, true, true), CM_OK);
    ck_assert_int_eq(fill->ops->map(fill, 0, 0, false, true), CM_OK);
    ck_assert_uint_eq(gets() - g0, 1);
}
END_TEST

START_TEST(test_fill_page_early)
{
    uint64_t g0 = gets();

    /* The copy travels with the join: map waits for it and gets nothing more. */
    home_page(3, 0x11);
    ck_assert_int_eq(fill->ops->early(fill, 3, 1), CM_OK);
    ck_assert_int_eq(fill->ops->map(fill, 3, 1, false, true), CM_OK);
    ck_assert(net_page_is(3, 0x11));
    ck_assert_uint_eq(gets() - g0, 1);
}
END_TEST

START_TEST(test_fill_page_early_stale)
{
    uint64_t g0 = gets();

    /* The early copy went out; then a writer changed the page, and the join found the entry
     * changed since it was seen (early with home -1): map must get the page again. */
    home_page(3, 0x11);
    ck_assert_int_eq(fill->ops->early(fill, 3, 1), CM_OK);
    home_page(3, 0x22);
    ck_assert_int_eq(fill->ops->early(fill, 3, -1), CM_OK);
    ck_assert_int_eq(fill->ops->map(fill, 3, 1, false, true), CM_OK);
    ck_assert(net_page_is(3, 0x22));
    ck_assert_uint_eq(gets() - g0, 2);
}
END_TEST

START_TEST(test_fill_page_drop)
{
    cm_cm.pte[2].prot = PROT_READ;
    ck_assert_int_eq(fill->ops->drop(fill, 2), CM_OK);
    ck_assert_uint_eq(cm_cm.pte[2].prot, PROT_NONE);
}
END_TEST

/* ---- the hooked writes (CHS*), against the fake one-sided layer --------------------------- */

static cm_write_t *wr;
static intptr_t home_delta[2];

/* Rank 0 stores; page 1 is homed at rank 1 and mapped here, reached by puts (no mapping). */
static void writes_setup(const cm_merge_ops_t *merge)
{
    cm_protocol_ctx_t ctx;

    memset(&cfg, 0, sizeof(cfg));
    cfg.forward       = CM_FORWARD_STORE;
    cfg.forward_batch = 4096;
    cfg.merge_lines   = 4;
    proto_setup(&ctx);
    cm_cm.home_delta  = home_delta;
    cm_cm.vname       = merge ? "CHSM" : "CHSN";
    cm_cm.whole_pages = true;
    cm_cm.pte[1].mapped = 1;
    cm_cm.pte[1].home   = 1;
    ck_assert_int_eq(cm_write_hooks_ops.init(&ctx, merge, &wr), CM_OK);
    wr->ops = &cm_write_hooks_ops;
    ck_assert_ptr_null(cm_cm_ops_missing(&cm_fill_page_ops, wr->ops, merge));
}

static void writes_teardown(void)
{
    wr->ops->fini(wr);
    proto_teardown();
}

/* The program stores v at offset off of page 1: the bytes land in our copy and the store is
 * reported to the hook (the two views are one memory in a real run; two here). */
static void store_u64(size_t off, uint64_t v)
{
    memcpy(cm_cm.net + PS + off, &v, sizeof(v));
    wr->ops->store((uintptr_t)cm_cm.app + PS + off, sizeof(v));
}

static uint64_t home_u64(size_t off)
{
    uint64_t v;

    memcpy(&v, fake_base(world, 1) + PS + off, sizeof(v));
    return v;
}

static uint64_t puts_now(void)
{
    fake_counts_t c;

    fake_counts(world, &c);
    return c.puts;
}

/* Eight stores filling one 64-byte line, and one in another line: every byte is at the home
 * once the flush returns; the page is dirty (its write transition is due at the release). */
static uint64_t store_line_and_flush(void)
{
    uint64_t p0 = puts_now();

    for (size_t i = 0; i < 8; i++) {
        store_u64(128 + 8 * i, 0x1000 + i);
    }
    store_u64(1024, 0xabcd);
    wr->ops->flush(wr);
    for (size_t i = 0; i < 8; i++) {
        ck_assert_uint_eq(home_u64(128 + 8 * i), 0x1000 + i);
    }
    ck_assert_uint_eq(home_u64(1024), 0xabcd);
    ck_assert(cm_cm.pte[1].flags & CM_PTE_DIRTY);
    return puts_now() - p0;
}

START_TEST(test_write_hooks_none)
{
    uint64_t puts;

    writes_setup(NULL);
    puts = store_line_and_flush();
    ck_assert_uint_ge(puts, 2);      /* N: at least the line and the lone store */
    ck_assert_uint_le(puts, 9);      /* at most one put per store */
    writes_teardown();
}
END_TEST

START_TEST(test_write_hooks_merge)
{
    uint64_t puts;

    writes_setup(&cm_merge_buffer_ops);
    puts = store_line_and_flush();
    ck_assert_uint_eq(puts, 2);      /* M: the whole line in one put, the lone store in another */
    writes_teardown();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mechanisms");
    TCase *alone = tcase_create("alone");
    TCase *page = tcase_create("fill-page");
    TCase *writes = tcase_create("write-hooks");
    SRunner *sr;
    int failed;

    tcase_add_test(alone, test_merge_ops);
    tcase_add_test(alone, test_required_ops);
    suite_add_tcase(s, alone);
    tcase_add_checked_fixture(page, fill_setup, fill_teardown);
    tcase_add_test(page, test_fill_page_map);
    tcase_add_test(page, test_fill_page_early);
    tcase_add_test(page, test_fill_page_early_stale);
    tcase_add_test(page, test_fill_page_drop);
    suite_add_tcase(s, page);
    tcase_add_test(writes, test_write_hooks_none);
    tcase_add_test(writes, test_write_hooks_merge);
    suite_add_tcase(s, writes);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
