/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of Cashmere's mechanisms alone, each built into this test from its own file
 * (no protocol events, no library) over the fake one-sided layer (fake_rma.h): the merge
 * buffer through its ops table and the check of required ops; each fill (page copies: an early
 * copy is used only when the join found the entry as seen; mapped: the view becomes the home's
 * memory, refused where it is not mapped; lines: one get per missed line, the rest of a page
 * swept from nothing in one go, the program's own bytes kept) and each write mechanism (hooked:
 * each reported store reaches the home by the flush, a line's stores in one put with the merge
 * buffer; mapped: learned from faults; offload: only the bytes changed since the twin go, a
 * quiet page is protected again, fetched lines are never taken for stores, the thread forwards
 * without a flush).
 */
#include "config.h"
#include "src/protocols/cashmere/cm_cm_int.h"
#include "tests/unit/fake_rma.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* The protocol's state the mechanisms read (cm_cashmere.c's, not linked here), and what of the
 * protocol they call. */
cm_cm_t cm_cm;

void cm_cm_repaint(uint64_t p)
{
    (void)p; /* no inline checks here: no shadow to write */
}

/* The markers cmcc links into every checked program (src/access/cm_hooks.c,
 * cm_hooks_loads.c): the hooked writes refuse a program without store checks, the line fill one
 * without load checks. Exported by the link (tests/Makefile.inc). */
__attribute__((used)) const char cm_build_stores[] = "CASHMERE_BUILD=stores";
__attribute__((used)) const char cm_hooks_loads[] = "CASHMERE_BUILD=accesses";

/* A software access check joins a page not yet in our sharing set (cm_cashmere.c): here it
 * is homed at rank 1, found through no directory, and mapped as the protocol would. */
static int joins;

cm_status_t cm_cm_join(uint64_t p, bool write)
{
    (void)write;
    joins++;
    cm_cm.pte[p].mapped = 1;
    cm_cm.pte[p].home   = 1;
    return cm_cm.fill->ops->map(cm_cm.fill, p, 1, false, false);
}

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
static intptr_t home_delta[2]; /* no home's memory mapped here: write-through by puts */

/* Rank 0 runs the mechanism; rank 1 is every page's home. Rank 0's copy of the area is its
 * network view; its application view is a separate mapping of the same size. The protocol's
 * state as a mechanism finds it, and the context its init gets, into *ctx; the settings all
 * zero (a test sets what its mechanism reads before the mechanism's init). */
static void proto_setup(cm_protocol_ctx_t *ctx)
{
    world = fake_world_create(2, NPAGES * PS);
    memset(&cfg, 0, sizeof(cfg));
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
    cm_cm.home_delta = home_delta;
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

/* Rank 0 stores; page 1 is homed at rank 1 and mapped here, reached by puts (no mapping). */
static void writes_setup(const cm_merge_ops_t *merge)
{
    cm_protocol_ctx_t ctx;

    proto_setup(&ctx);
    cfg.forward       = CM_FORWARD_STORE;
    cfg.forward_batch = 4096;
    cfg.merge_lines   = 4;
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

/* ---- the mapped fill (NH**): views onto the homes' memory ---------------------------------- */

static void map_setup(bool mapped, cm_status_t expect)
{
    cm_protocol_ctx_t ctx;

    proto_setup(&ctx);
    cm_cm.vname = "NHHN";
    fake_world_map_peers(world, mapped);
    fill = NULL;
    ck_assert_int_eq(cm_fill_map_ops.init(&ctx, &fill), expect);
    if (fill != NULL) {
        fill->ops = &cm_fill_map_ops;
    }
}

START_TEST(test_fill_map_refused)
{
    /* Peers across a network: the variant is refused at init, nothing made. */
    map_setup(false, CM_ERR_UNSUPPORTED);
    ck_assert_ptr_null(fill);
    proto_teardown();
}
END_TEST

START_TEST(test_fill_map_alias)
{
    char *home1;

    map_setup(true, CM_OK);
    home1 = fake_base(world, 1);
    home_page(2, 0x31);
    ck_assert_int_eq(fill->ops->map(fill, 2, 1, false, true), CM_OK);
    /* Loads and stores at the page's address are the home's memory: nothing is copied. */
    ck_assert_uint_eq((uint8_t)cm_cm.app[2 * PS + 100], 0x31);
    cm_cm.app[2 * PS + 7] = 0x42;
    ck_assert_uint_eq((uint8_t)home1[2 * PS + 7], 0x42);
    home1[2 * PS + 9] = 0x43;
    ck_assert_uint_eq((uint8_t)cm_cm.app[2 * PS + 9], 0x43);
    ck_assert_uint_eq(gets(), 0);
    ck_assert_uint_eq(cm_cm.pte[2].prot, CM_PTE_PROT_UNKNOWN); /* a new mapping: set it */
    ck_assert_uint_eq(cm_cm.st.pages_mapped, 1);
    /* Homed here: our own memory (the view may alias a former home). */
    ck_assert_int_eq(fill->ops->map(fill, 3, 0, false, true), CM_OK);
    cm_cm.app[3 * PS] = 0x44;
    ck_assert_uint_eq((uint8_t)cm_cm.net[3 * PS], 0x44);
    /* Self-invalidation takes the access away; the next access joins again. */
    ck_assert_int_eq(fill->ops->drop(fill, 2), CM_OK);
    ck_assert_uint_eq(cm_cm.pte[2].prot, PROT_NONE);
    fill->ops->fini(fill);
    proto_teardown();
}
END_TEST

/* ---- the line fill (NS**): lines from the home by the access checks ----------------------- */

static cm_write_t *lwr; /* the write mechanism the line fill works with */

/* Rank 0 checks accesses; page 1 is homed at rank 1 and joined (its pte as the protocol sets
 * it before the fill's map), holding byte (i * 7) at offset i. Lines of 64 bytes; the second
 * miss on a page with nothing valid brings the rest. */
static void line_setup_with(const cm_write_ops_t *w, uint64_t pause_ns)
{
    cm_protocol_ctx_t ctx;

    proto_setup(&ctx);
    cfg.line_size       = 64;
    cfg.line_page_fill  = 2;
    cfg.progress_thread = CM_PROGRESS_ON;
    cfg.offload_pause   = pause_ns;
    cm_cm.vname       = "NSHN";
    cm_cm.load_checks = true;
    ck_assert_int_eq(w->init(&ctx, NULL, &lwr), CM_OK);
    lwr->ops = w;
    cm_cm.write = lwr;
    ck_assert_int_eq(cm_fill_line_ops.init(&ctx, &fill), CM_OK);
    fill->ops = &cm_fill_line_ops;
    cm_cm.fill = fill;
    ck_assert_ptr_null(cm_cm_ops_missing(fill->ops, w, NULL));
    for (size_t i = 0; i < PS; i++) {
        fake_base(world, 1)[PS + i] = (char)(i * 7);
    }
    cm_cm.pte[1].mapped = 1;
    cm_cm.pte[1].home   = 1;
    joins = 0;
}

static void line_setup(void)
{
    line_setup_with(&cm_write_mapped_ops, 0);
}

static void line_teardown(void)
{
    fill->ops->fini(fill);
    lwr->ops->fini(lwr);
    proto_teardown();
}

/* Our copy of page p's bytes [lo, hi) are the home's (rank 1). */
static bool net_is_home(uint64_t p, size_t lo, size_t hi)
{
    return memcmp(cm_cm.net + p * PS + lo, fake_base(world, 1) + p * PS + lo, hi - lo) == 0;
}

static void check_load(uint64_t p, size_t off, size_t len)
{
    fill->ops->access(fill, (uintptr_t)cm_cm.app + p * PS + off, len, false, false);
}

START_TEST(test_fill_line_refused)
{
    cm_protocol_ctx_t ctx;

    proto_setup(&ctx);
    cfg.line_size = 48; /* not a power of two */
    cm_cm.vname = "NSSN";
    ck_assert_int_eq(cm_fill_line_ops.init(&ctx, &fill), CM_ERR_INVALID);
    proto_teardown();
}
END_TEST

START_TEST(test_fill_line_lines)
{
    ck_assert_int_eq(fill->ops->map(fill, 1, 1, false, false), CM_OK);
    ck_assert_uint_eq(gets(), 0); /* joined by a check: nothing until touched */
    check_load(1, 200, 8);        /* line 3: bytes 192-255, one get */
    ck_assert_uint_eq(gets(), 1);
    ck_assert(net_is_home(1, 192, 256));
    ck_assert_uint_eq((uint8_t)cm_cm.net[PS + 191], 0);
    ck_assert_uint_eq((uint8_t)cm_cm.net[PS + 256], 0);
    ck_assert_uint_eq(cm_cm.st.line_fills, 1);
    check_load(1, 240, 16);       /* the same line: valid, nothing */
    ck_assert_uint_eq(gets(), 1);
    /* A store check on bytes 250-257 reaches line 4, the page's second miss since nothing was
     * valid: the rest of the page comes, each run of missing lines in one get (0-2, 4-63). */
    fill->ops->access(fill, (uintptr_t)cm_cm.app + PS + 250, 8, true, false);
    ck_assert_uint_eq(gets(), 3);
    ck_assert(net_is_home(1, 0, PS));
    ck_assert_uint_eq(cm_cm.st.pages_fetched, 1);
    check_load(1, 4000, 8);
    ck_assert_uint_eq(gets(), 3);
    ck_assert_int_eq(joins, 0);
}
END_TEST

START_TEST(test_fill_line_kept)
{
    /* The runtime wrote bytes 100-107 for the program (cm_hook_store: reported after): they are
     * ours, and the line is fetched around them. */
    ck_assert_int_eq(fill->ops->map(fill, 1, 1, false, false), CM_OK);
    memset(cm_cm.net + PS + 100, 0x77, 8);
    fill->ops->access(fill, (uintptr_t)cm_cm.app + PS + 100, 8, true, true);
    ck_assert(net_is_home(1, 64, 100));
    for (size_t i = 100; i < 108; i++) {
        ck_assert_uint_eq((uint8_t)cm_cm.net[PS + i], 0x77);
    }
    ck_assert(net_is_home(1, 108, 128));
}
END_TEST

START_TEST(test_fill_line_drop)
{
    uint8_t sh[PS / 8];

    ck_assert_int_eq(fill->ops->map(fill, 1, 1, false, false), CM_OK);
    check_load(1, 8, 8);
    /* The shadow: the valid line (0) disarmed, the others armed; all armed when the write
     * mechanism wants the stores. */
    fill->ops->paint(fill, 1, sh, sizeof(sh), false);
    ck_assert_uint_eq(sh[0], 0);
    ck_assert_uint_eq(sh[7], 0);
    ck_assert_uint_eq(sh[8], 0xff);
    fill->ops->paint(fill, 1, sh, sizeof(sh), true);
    ck_assert_uint_eq(sh[0], 0xff);
    /* Self-invalidation: every line invalid, the page kept mapped, read-only for a write
     * mechanism that learns of stores from faults; the next load gets the line again. */
    ck_assert_int_eq(fill->ops->drop(fill, 1), CM_OK);
    ck_assert_uint_eq(cm_cm.pte[1].prot, PROT_READ);
    fake_base(world, 1)[PS + 8] = 0x5c;
    check_load(1, 8, 8);
    ck_assert_uint_eq(gets(), 2);
    ck_assert_uint_eq((uint8_t)cm_cm.net[PS + 8], 0x5c);
}
END_TEST

START_TEST(test_fill_line_home_and_join)
{
    /* Homed here: the master copy, every line valid. */
    cm_cm.pte[2].mapped = 1;
    cm_cm.pte[2].home   = 0;
    ck_assert_int_eq(fill->ops->map(fill, 2, 0, false, false), CM_OK);
    check_load(2, 64, 8);
    ck_assert_uint_eq(gets(), 0);
    /* Joined by code without checks (a fault): the whole page now. */
    ck_assert_int_eq(fill->ops->map(fill, 1, 1, false, true), CM_OK);
    ck_assert_uint_eq(gets(), 1);
    ck_assert(net_is_home(1, 0, PS));
    /* Not in our sharing set: the check joins it, then fills the line. */
    fake_base(world, 1)[3 * PS + 8] = 0x6d;
    check_load(3, 8, 8);
    ck_assert_int_eq(joins, 1);
    ck_assert_uint_eq(gets(), 2);
    ck_assert_uint_eq((uint8_t)cm_cm.net[3 * PS + 8], 0x6d);
}
END_TEST

/* ---- the offload engine (CHH*, NSH*): a thread compares written pages with their twins ----- */

/* Long enough that the thread makes no pass while a test stores and drains (the first pass
 * comes a second after init): the counts are the drain's. fini waits out the pause. */
#define NO_PASS_NS 1000000000ull

static void offload_setup(const cm_merge_ops_t *merge, uint64_t pause_ns)
{
    cm_protocol_ctx_t ctx;

    proto_setup(&ctx);
    cfg.progress_thread = CM_PROGRESS_ON;
    cfg.offload_pause   = pause_ns;
    cfg.merge_lines     = 4;
    cm_cm.vname      = merge ? "CHHM" : "CHHN";
    cm_cm.pte[1].mapped = 1;
    cm_cm.pte[1].home   = 1;
    ck_assert_int_eq(cm_write_offload_ops.init(&ctx, merge, &wr), CM_OK);
    wr->ops = &cm_write_offload_ops;
    /* The thread's first pass finds nothing tracked; then it pauses. */
    nanosleep(&(struct timespec){0, 50000000}, NULL);
    ck_assert_ptr_null(cm_cm_ops_missing(&cm_fill_page_ops, wr->ops, merge));
    /* Our copy of page 1 as fetched, then another writer changes byte 5 of word 8 at the
     * home: ours is stale there. */
    home_page(1, 0xaa);
    memcpy(cm_cm.net + PS, fake_base(world, 1) + PS, PS);
    fake_base(world, 1)[PS + 64 + 5] = 0x55;
    /* Its first store faulted: tracked, its twin taken now. */
    ck_assert_int_eq(wr->ops->write_fault(wr, 1), CM_OK);
    ck_assert(cm_cm.pte[1].flags & CM_PTE_DIRTY);
    ck_assert_uint_eq(cm_cm.pte[1].prot, PROT_READ | PROT_WRITE);
}

static void offload_teardown(void)
{
    wr->ops->fini(wr);
    proto_teardown();
}

START_TEST(test_write_offload_none)
{
    cm_stats_t st;
    uint64_t p0;

    offload_setup(NULL, NO_PASS_NS);
    p0 = puts_now();
    cm_cm.net[PS + 64 + 2] = 0x11;            /* one byte of word 8 */
    memset(cm_cm.net + PS + 512, 0x22, 8);    /* a whole word */
    memset(cm_cm.net + PS + 1001, 0x33, 3);   /* a run within a word */
    wr->ops->flush(wr);
    /* Each changed run went alone, and only the changed bytes: the other writer's byte 5 of
     * word 8 is still the home's. */
    ck_assert_uint_eq(puts_now() - p0, 3);
    ck_assert_uint_eq((uint8_t)fake_base(world, 1)[PS + 64 + 2], 0x11);
    ck_assert_uint_eq((uint8_t)fake_base(world, 1)[PS + 64 + 5], 0x55);
    ck_assert_uint_eq((uint8_t)fake_base(world, 1)[PS + 512 + 7], 0x22);
    ck_assert_uint_eq((uint8_t)fake_base(world, 1)[PS + 1003], 0x33);
    ck_assert_uint_eq((uint8_t)fake_base(world, 1)[PS + 1004], 0xaa);
    wr->ops->stats(wr, &st);
    ck_assert_uint_eq(st.forwarded_puts, 3);
    ck_assert_uint_eq(st.doubled_stores, 3);  /* words found changed */
    /* Quiet since the last drain: no longer scanned, protected so that its next store faults. */
    wr->ops->flush(wr);
    ck_assert_uint_eq(puts_now() - p0, 3);
    ck_assert_uint_eq(cm_cm.pte[1].prot, PROT_READ);
    /* Tracked again by that fault; settled (before a drop or transition) with no flush. */
    ck_assert_int_eq(wr->ops->write_fault(wr, 1), CM_OK);
    cm_cm.net[PS + 2000] = 0x44;
    ck_assert_int_eq(wr->ops->settle(wr, 1), CM_OK);
    ck_assert_uint_eq(puts_now() - p0, 4);
    ck_assert_uint_eq((uint8_t)fake_base(world, 1)[PS + 2000], 0x44);
    /* Dropped: forgotten. */
    wr->ops->dropped(wr, 1);
    cm_cm.net[PS + 2001] = 0x45;
    wr->ops->flush(wr);
    ck_assert_uint_eq(puts_now() - p0, 4);
    offload_teardown();
}
END_TEST

START_TEST(test_write_offload_merge)
{
    cm_stats_t st;
    uint64_t p0;

    offload_setup(&cm_merge_buffer_ops, NO_PASS_NS);
    p0 = puts_now();
    for (size_t i = 0; i < 8; i++) {          /* a line, word by word */
        uint64_t v = 0x1000 + i;
        memcpy(cm_cm.net + PS + 128 + 8 * i, &v, 8);
    }
    cm_cm.net[PS + 1024] = 0x66;
    wr->ops->flush(wr);
    ck_assert_uint_eq(puts_now() - p0, 2);     /* the line in one put, the lone byte in another */
    for (size_t i = 0; i < 8; i++) {
        ck_assert_uint_eq(home_u64(128 + 8 * i), 0x1000 + i);
    }
    ck_assert_uint_eq((uint8_t)fake_base(world, 1)[PS + 1024], 0x66);
    wr->ops->stats(wr, &st);
    ck_assert_uint_eq(st.merge_flushes, 2);
    ck_assert_uint_eq(st.doubled_stores, 9);
    offload_teardown();
}
END_TEST

START_TEST(test_write_offload_thread)
{
    struct timespec ms = {0, 1000000};
    cm_stats_t st;
    int waited = 0;

    /* No flush: the thread's passes find the store and forward it. */
    offload_setup(NULL, 100000);
    cm_cm.net[PS + 3000] = 0x77;
    while ((uint8_t)fake_base(world, 1)[PS + 3000] != 0x77 && waited++ < 10000) {
        nanosleep(&ms, NULL);
    }
    ck_assert_uint_eq((uint8_t)fake_base(world, 1)[PS + 3000], 0x77);
    wr->ops->stats(wr, &st);
    ck_assert_uint_ge(st.offload_passes, 1);
    offload_teardown();
}
END_TEST

START_TEST(test_write_offload_refused)
{
    cm_protocol_ctx_t ctx;

    /* Puts from the thread need a transport made for several threads. */
    proto_setup(&ctx);
    cfg.progress_thread = CM_PROGRESS_OFF;
    cm_cm.vname      = "CHHN";
    ck_assert_int_eq(cm_write_offload_ops.init(&ctx, NULL, &wr), CM_ERR_INVALID);
    proto_teardown();
}
END_TEST

START_TEST(test_fill_line_offload)
{
    uint64_t p0;

    /* NSH*: a line fetched into a page the engine tracks is taken into its twin too, never
     * forwarded as if stored here; a store in it is. */
    line_setup_with(&cm_write_offload_ops, NO_PASS_NS);
    ck_assert_int_eq(fill->ops->map(fill, 1, 1, false, false), CM_OK);
    ck_assert_int_eq(lwr->ops->joining(lwr, 1, 1, true), PROT_READ | PROT_WRITE);
    check_load(1, 320, 8);
    ck_assert(net_is_home(1, 320, 384));
    p0 = puts_now();
    lwr->ops->flush(lwr);
    ck_assert_uint_eq(puts_now() - p0, 0);
    cm_cm.net[PS + 330] = 0x12;
    lwr->ops->flush(lwr);
    ck_assert_uint_eq(puts_now() - p0, 1);
    ck_assert_uint_eq((uint8_t)fake_base(world, 1)[PS + 330], 0x12);
    line_teardown();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mechanisms");
    TCase *alone = tcase_create("alone");
    TCase *page = tcase_create("fill-page");
    TCase *writes = tcase_create("write-hooks");
    TCase *mapped = tcase_create("fill-map");
    TCase *line = tcase_create("fill-line");
    TCase *offload = tcase_create("write-offload");
    TCase *refused = tcase_create("refused");
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
    tcase_add_test(mapped, test_fill_map_alias);
    suite_add_tcase(s, mapped);
    tcase_add_checked_fixture(line, line_setup, line_teardown);
    tcase_add_test(line, test_fill_line_lines);
    tcase_add_test(line, test_fill_line_kept);
    tcase_add_test(line, test_fill_line_drop);
    tcase_add_test(line, test_fill_line_home_and_join);
    suite_add_tcase(s, line);
    tcase_add_test(offload, test_write_offload_none);
    tcase_add_test(offload, test_write_offload_merge);
    tcase_add_test(offload, test_write_offload_thread);
    tcase_add_test(offload, test_fill_line_offload);
    suite_add_tcase(s, offload);
    tcase_add_test(refused, test_fill_map_refused);
    tcase_add_test(refused, test_fill_line_refused);
    tcase_add_test(refused, test_write_offload_refused);
    suite_add_tcase(s, refused);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
