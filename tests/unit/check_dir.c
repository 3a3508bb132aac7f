/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of directory/ over the fake one-sided layer (fake_rma.h: ranks are threads):
 * both forms of entry update (the MCS form's entry fetched with its lock through locks/'s one
 * MCS implementation, and the CAS word) are atomic read-modify-writes under contention, run
 * the held callback exclusively, count every leaving writer in the version, and release the
 * entry when the held callback fails.
 */
#include "config.h"
#include "directory/cm_dir.h"
#include "tests/unit/fake_rma.h"

#include <check.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define NPROCS 4
#define NPAGES 6
#define ITERS  600

/* Every rank's copy of the area: entries first, then the queue node. */
#define OFF_ENTRIES 0
#define OFF_QNODE   4096
#define AREA        8192

static fake_world_t *world;
static cm_dir_impl_t impl;

static void setup(void)
{
    world = fake_world_create(NPROCS, AREA);
}

static void teardown(void)
{
    fake_world_destroy(world);
}

static void dir_open(cm_dir_t *dir, int r)
{
    cm_dir_seg_t seg = {
        .base     = fake_base(world, r),
        .entries  = OFF_ENTRIES,
        .per_proc = (NPAGES + NPROCS - 1) / NPROCS,
        .qnode    = OFF_QNODE,
    };

    ck_assert_int_eq(cm_dir_init(dir, fake_rma(world, r), impl, &seg, 2), CM_OK);
}

/* Every rank's directory in the add form, first touch on or off. */
static void dirs_open_add(cm_dir_t *d, bool first_touch)
{
    impl = CM_DIR_IMPL_ADD;
    for (int r = 0; r < NPROCS; r++) {
        dir_open(&d[r], r);
        d[r].first_touch = first_touch;
    }
}

static void dirs_close(cm_dir_t *d)
{
    for (int r = 0; r < NPROCS; r++) {
        cm_dir_fini(&d[r]);
    }
}

/* ---- contention ------------------------------------------------------------------ */

static struct {
    int      inside[NPAGES];     /* held callbacks running on the page */
    int      overlaps;
    uint64_t held_calls;
    uint64_t writer_leaves[NPAGES];
} ct;

static cm_status_t held_count(uint64_t page, const cm_dir_effects_t *fx, void *arg)
{
    (void)fx, (void)arg;
    if (__atomic_fetch_add(&ct.inside[page], 1, __ATOMIC_SEQ_CST) != 0) {
        __atomic_fetch_add(&ct.overlaps, 1, __ATOMIC_SEQ_CST);
    }
    sched_yield(); /* someone else tries the entry meanwhile */
    __atomic_fetch_sub(&ct.inside[page], 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&ct.held_calls, 1, __ATOMIC_SEQ_CST);
    return CM_OK;
}

static void contention_rank(int r, void *arg)
{
    cm_dir_t dir;
    cm_dir_entry_t e;
    cm_dir_effects_t fx;

    (void)arg;
    dir_open(&dir, r);
    for (int i = 0; i < ITERS; i++) {
        uint64_t p = (uint64_t)(i * 5 + r) % NPAGES;
        bool write = ((i + r) % 3) != 0;

        ck_assert_int_eq(cm_dir_update(&dir, p, CM_DIR_JOIN, held_count, NULL, &e, &fx), CM_OK);
        ck_assert(e.sharers & (1ull << r));
        if (write) {
            ck_assert_int_eq(cm_dir_update(&dir, p, CM_DIR_WRITE, held_count, NULL, &e, &fx),
                             CM_OK);
            ck_assert(e.writers & (1ull << r));
        }
        if (i % 4 == 0) {
            sched_yield();
        }
        ck_assert_int_eq(cm_dir_update(&dir, p, CM_DIR_LEAVE, held_count, NULL, &e, &fx), CM_OK);
        ck_assert(!(e.sharers & (1ull << r)));
        if (write) {
            __atomic_fetch_add(&ct.writer_leaves[p], 1, __ATOMIC_SEQ_CST);
        }
    }
    cm_dir_fini(&dir);
}

static void check_contention(void)
{
    cm_dir_t dir;

    memset(&ct, 0, sizeof(ct));
    fake_run(world, contention_rank, NULL);
    ck_assert_int_eq(ct.overlaps, 0);
    ck_assert_uint_gt(ct.held_calls, 0); /* notices were due: the callback ran */
    dir_open(&dir, 0);
    for (uint64_t p = 0; p < NPAGES; p++) {
        cm_dir_entry_t e;
        uint64_t version;

        ck_assert_int_eq(cm_dir_read(&dir, p, &e, &version), CM_OK);
        /* Every join was matched by a leave: an update lost to a race would leave a bit. */
        ck_assert_uint_eq(e.sharers, 0);
        ck_assert_uint_eq(e.writers, 0);
        ck_assert_uint_eq(version, ct.writer_leaves[p]);
    }
    cm_dir_fini(&dir);
}

START_TEST(test_dir_mcs_contention)
{
    impl = CM_DIR_IMPL_MCS;
    check_contention();
}
END_TEST

START_TEST(test_dir_cas_contention)
{
    impl = CM_DIR_IMPL_CAS;
    check_contention();
}
END_TEST

/*
 * The add form: the same joins, writes and leaves as adds. Nothing is held (the callback runs
 * only for a claim), so what is checked is the word: no update lost (every bit back to 0), the
 * tag counting every writer's leave, each WRITE naming as sharers to notify only processes
 * that had joined and not yet left, and each JOIN naming only writers in the word it found.
 */
static struct {
    uint64_t member[NPAGES];     /* bit r: r has joined the page and not left */
    int      bad_notify;
} ad;

static void add_rank(int r, void *arg)
{
    cm_dir_t dir;
    cm_dir_entry_t e;
    cm_dir_effects_t fx;
    uint64_t bit = 1ull << r;

    (void)arg;
    dir_open(&dir, r);
    for (int i = 0; i < ITERS; i++) {
        uint64_t p = (uint64_t)(i * 5 + r) % NPAGES;
        bool write = ((i + r) % 3) != 0;

        ck_assert_int_eq(cm_dir_update(&dir, p, CM_DIR_JOIN, held_count, NULL, &e, &fx), CM_OK);
        ck_assert(e.sharers & bit);
        /* A join notifies nobody; it names the other writers it found, and notices itself. */
        ck_assert(fx.notify == 0);
        ck_assert((fx.writers_found & ~(e.writers & ~bit)) == 0);
        ck_assert(fx.writers_found == 0 || fx.self_notice);
        __atomic_fetch_or(&ad.member[p], bit, __ATOMIC_SEQ_CST);
        if (write) {
            ck_assert_int_eq(cm_dir_update(&dir, p, CM_DIR_WRITE, held_count, NULL, &e, &fx),
                             CM_OK);
            ck_assert(e.writers & bit);
            /* Whom it notifies had joined: they are members, or left just now (a leave is
             * issued after its member bit is cleared: a race that only errs towards more). */
            if (fx.notify & bit) {
                __atomic_fetch_add(&ad.bad_notify, 1, __ATOMIC_SEQ_CST);
            }
        }
        if (i % 4 == 0) {
            sched_yield();
        }
        __atomic_fetch_and(&ad.member[p], ~bit, __ATOMIC_SEQ_CST);
        ck_assert_int_eq(cm_dir_update(&dir, p, CM_DIR_LEAVE, held_count, NULL, &e, &fx), CM_OK);
        ck_assert(!(e.sharers & bit));
        if (write) {
            __atomic_fetch_add(&ct.writer_leaves[p], 1, __ATOMIC_SEQ_CST);
        }
    }
    cm_dir_fini(&dir);
}

START_TEST(test_dir_add_contention)
{
    cm_dir_t dir;

    impl = CM_DIR_IMPL_ADD;
    memset(&ct, 0, sizeof(ct));
    memset(&ad, 0, sizeof(ad));
    fake_run(world, add_rank, NULL);
    ck_assert_int_eq(ad.bad_notify, 0);
    ck_assert_uint_eq(ct.held_calls, 0); /* nothing held: no claim without first touch */
    dir_open(&dir, 0);
    for (uint64_t p = 0; p < NPAGES; p++) {
        cm_dir_entry_t e;
        uint64_t version;

        ck_assert_int_eq(cm_dir_read(&dir, p, &e, &version), CM_OK);
        ck_assert_uint_eq(e.sharers, 0);
        ck_assert_uint_eq(e.writers, 0);
        ck_assert_uint_eq(version, ct.writer_leaves[p] & CM_DIR_LEAVES_MASK);
    }
    cm_dir_fini(&dir);
}
END_TEST

/* First touch in the add form: every rank joins every page at once after initialization; one
 * claims each page (copying it in while the entry is BUSY, if it came from elsewhere), the
 * others' adds wait the claim out, and all end as sharers with the claimer as home. */
static struct {
    int claims[NPAGES];
    int copies[NPAGES];
    int busy_seen;
} ft;

static cm_status_t held_claim(uint64_t page, const cm_dir_effects_t *fx, void *arg)
{
    (void)arg;
    ck_assert(fx->claimed_home);
    __atomic_fetch_add(&ft.copies[page], 1, __ATOMIC_SEQ_CST);
    sched_yield(); /* the others' adds arrive while BUSY */
    return CM_OK;
}

static void first_touch_rank(int r, void *arg)
{
    cm_dir_t dir;
    cm_dir_entry_t e;
    cm_dir_effects_t fx;

    (void)arg;
    dir_open(&dir, r);
    cm_dir_reset_local(&dir);
    dir.first_touch = true;
    for (uint64_t p = 0; p < NPAGES; p++) {
        uint64_t q = (p + (uint64_t)r) % NPAGES;
        ck_assert_int_eq(cm_dir_update(&dir, q, CM_DIR_JOIN, held_claim, NULL, &e, &fx), CM_OK);
        ck_assert(e.sharers & (1ull << r));
        ck_assert(e.flags & CM_DIR_HOME_FIXED);
        ck_assert(!(e.flags & CM_DIR_BUSY));
        if (fx.claimed_home) {
            ck_assert_uint_eq(e.home, (uint32_t)r);
            __atomic_fetch_add(&ft.claims[q], 1, __ATOMIC_SEQ_CST);
        }
    }
    cm_dir_fini(&dir);
}

START_TEST(test_dir_add_first_touch)
{
    cm_dir_t dir;

    impl = CM_DIR_IMPL_ADD;
    memset(&ft, 0, sizeof(ft));
    fake_run(world, first_touch_rank, NULL);
    dir_open(&dir, 0);
    cm_dir_reset_local(&dir);
    for (uint64_t p = 0; p < NPAGES; p++) {
        cm_dir_entry_t e;
        uint64_t version;

        ck_assert_int_eq(ft.claims[p], 1);
        ck_assert_int_le(ft.copies[p], 1); /* none where the claimer was the old home */
        ck_assert_int_eq(cm_dir_read(&dir, p, &e, &version), CM_OK);
        ck_assert_uint_eq(e.sharers, (1ull << NPROCS) - 1);
        ck_assert(!(e.flags & CM_DIR_BUSY));
    }
    cm_dir_fini(&dir);
}
END_TEST

/* ---- the add form's ordered join (a fault's copy behind its add) ------------------------- */

static cm_status_t held_none(uint64_t page, const cm_dir_effects_t *fx, void *arg)
{
    (void)page, (void)fx, (void)arg;
    return CM_OK;
}

/* Rank 0 faults on page 1 (directory and round-robin home: rank 1) without a word of it: a
 * peek, then the add issued and fenced. A writer (rank 2) that joined, wrote and left since the
 * peek moved the tag: a copy got before the add would not hold (the unordered rule), one got
 * behind it does. Where the page's data lives elsewhere (a first touch moved it to rank 3)
 * nothing is issued: the fault's own update does it. */
START_TEST(test_dir_add_ordered_join)
{
    cm_dir_t d[NPROCS];
    cm_dir_entry_t e;
    cm_dir_effects_t fx;
    cm_dir_join_t j;
    fake_counts_t c0, c1;
    uint64_t seen;
    int home = -1;

    dirs_open_add(d, false);
    ck_assert(!cm_dir_seen_word(&d[0], 1, &seen));
    ck_assert_int_eq(cm_dir_add_join_issue(&d[0], 1, &j, &home), CM_OK);
    ck_assert(!j.issued); /* no word: the add would not know what it lands on */
    ck_assert_int_eq(cm_dir_add_peek(&d[0], 1), CM_OK);
    ck_assert(cm_dir_seen_word(&d[0], 1, &seen));
    /* Rank 2 joins, writes and leaves meanwhile: the tag moves. */
    ck_assert_int_eq(cm_dir_update(&d[2], 1, CM_DIR_JOIN, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_update(&d[2], 1, CM_DIR_WRITE, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_update(&d[2], 1, CM_DIR_LEAVE, held_none, NULL, &e, &fx), CM_OK);
    fake_counts(world, &c0);
    ck_assert_int_eq(cm_dir_add_join_issue(&d[0], 1, &j, &home), CM_OK);
    fake_counts(world, &c1);
    ck_assert(j.issued);
    ck_assert_int_eq(home, 1);
    ck_assert_uint_eq(c1.atomics - c0.atomics, 1);
    ck_assert_uint_ge(c1.fences - c0.fences, 1); /* what follows lands behind the add */
    ck_assert_int_eq(cm_dir_add_join_wait(&d[0], 1, &j, &e, &fx), CM_OK);
    ck_assert(fx.as_seen);
    ck_assert_uint_eq(e.sharers, 1ull << 0);
    /* The unordered rule on the same history: rank 3 with the word from before the leave. */
    ck_assert(cm_dir_seen_word(&d[0], 1, &seen));
    ck_assert_int_eq(cm_dir_add_peek(&d[3], 1), CM_OK);
    ck_assert(cm_dir_seen_word(&d[3], 1, &seen));
    ck_assert_int_eq(cm_dir_update(&d[2], 1, CM_DIR_JOIN, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_update(&d[2], 1, CM_DIR_WRITE, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_update(&d[2], 1, CM_DIR_LEAVE, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_update_seen(&d[3], 1, CM_DIR_JOIN, held_none, NULL, seen, &e, &fx),
                     CM_OK);
    ck_assert(!fx.as_seen);
    /* Page 2 (directory home rank 2) first touched by rank 3: its data is not where its word
     * is, so no ordered join. */
    for (int r = 0; r < NPROCS; r++) {
        d[r].first_touch = true;
    }
    ck_assert_int_eq(cm_dir_update(&d[3], 2, CM_DIR_JOIN, held_none, NULL, &e, &fx), CM_OK);
    ck_assert(fx.claimed_home);
    ck_assert_int_eq(cm_dir_add_peek(&d[0], 2), CM_OK);
    ck_assert_int_eq(cm_dir_add_join_issue(&d[0], 2, &j, &home), CM_OK);
    ck_assert(!j.issued);
    ck_assert_int_eq(home, 3);
    /* There the unordered rule: nobody left since the word was seen, so a copy got after it
     * holds (an add form that dropped every such copy paid a second round trip each). */
    ck_assert(cm_dir_seen_word(&d[0], 2, &seen));
    ck_assert_int_eq(cm_dir_update_seen(&d[0], 2, CM_DIR_JOIN, held_none, NULL, seen, &e, &fx),
                     CM_OK);
    ck_assert(fx.as_seen);
    ck_assert_uint_eq(e.home, 3);
    dirs_close(d);
}
END_TEST

/* The home's join (add form): an add not waited for, no self-notice, fenced behind a leave. */
START_TEST(test_dir_add_home_join)
{
    cm_dir_t d[NPROCS];
    cm_dir_entry_t e;
    cm_dir_effects_t fx;
    fake_counts_t c0, c1;
    uint64_t w;
    bool joined;

    dirs_open_add(d, true);
    /* Page 2 (directory home rank 2) claimed by rank 3; rank 0 joins it and writes. */
    ck_assert_int_eq(cm_dir_update(&d[3], 2, CM_DIR_JOIN, held_none, NULL, &e, &fx), CM_OK);
    ck_assert(fx.claimed_home);
    ck_assert_int_eq(cm_dir_update(&d[0], 2, CM_DIR_JOIN, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_update(&d[0], 2, CM_DIR_WRITE, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_add_home_join(&d[0], 2, &joined, &e, &fx), CM_OK);
    ck_assert(!joined); /* not rank 0's data */
    /* Rank 3 leaves (a notice) and faults again: a join of its own page. */
    ck_assert_int_eq(cm_dir_add_peek(&d[3], 2), CM_OK); /* the word seen shows the writer */
    ck_assert_int_eq(cm_dir_update(&d[3], 2, CM_DIR_LEAVE, held_none, NULL, &e, &fx), CM_OK);
    fake_counts(world, &c0);
    ck_assert_int_eq(cm_dir_add_home_join(&d[3], 2, &joined, &e, &fx), CM_OK);
    fake_counts(world, &c1);
    ck_assert(joined);
    ck_assert_uint_eq(c1.atomics - c0.atomics, 1);
    ck_assert_uint_eq(c1.gets - c0.gets, 0);     /* nothing read back */
    ck_assert_uint_ge(c1.fences - c0.fences, 1); /* behind the leave */
    ck_assert(!fx.self_notice);                  /* rank 0 writes, but our copy is the master */
    ck_assert(!fx.claimed_home);
    ck_assert_uint_eq(e.home, 3);
    ck_assert(e.sharers & (1ull << 3));
    ck_assert_int_eq(cm_dir_add_peek(&d[1], 2), CM_OK);
    ck_assert(cm_dir_seen_word(&d[1], 2, &w));
    cm_dir_peek_entry(&d[1], 2, w, &e);
    ck_assert_uint_eq(e.sharers, (1ull << 0) | (1ull << 3));
    /* In the set already: no second add. */
    ck_assert_int_eq(cm_dir_add_home_join(&d[3], 2, &joined, &e, &fx), CM_OK);
    ck_assert(!joined);
    /* Its WRITE, fenced behind the join, notifies the writer there. */
    ck_assert_int_eq(cm_dir_update(&d[3], 2, CM_DIR_WRITE, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_uint_eq(fx.notify, 1ull << 0);
    dirs_close(d);
}
END_TEST

/* A release's WRITE behind our own home's join: no fence; where it overtook the join, the
 * rule applies to the word with both. */
START_TEST(test_dir_add_write_behind_join)
{
    cm_dir_t d[NPROCS];
    cm_dir_entry_t e;
    cm_dir_effects_t fx;
    fake_counts_t c0, c1;
    uint64_t old, w;
    bool joined, issued;

    dirs_open_add(d, true);
    /* Page 2 claimed by rank 3, joined and written by rank 0; rank 3 leaves and faults again. */
    ck_assert_int_eq(cm_dir_update(&d[3], 2, CM_DIR_JOIN, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_update(&d[0], 2, CM_DIR_JOIN, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_update(&d[0], 2, CM_DIR_WRITE, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_add_peek(&d[3], 2), CM_OK);
    ck_assert_int_eq(cm_dir_update(&d[3], 2, CM_DIR_LEAVE, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_add_home_join(&d[3], 2, &joined, &e, &fx), CM_OK);
    ck_assert(joined);
    fake_counts(world, &c0);
    ck_assert_int_eq(cm_dir_add_write_nbi(&d[3], 2, &old, &issued), CM_OK);
    fake_counts(world, &c1);
    ck_assert(issued);
    ck_assert_uint_eq(c1.fences - c0.fences, 0);
    ck_assert_int_eq(cm_rma_flush_all(fake_rma(world, 3)), CM_OK);
    /* The fake lands the join first; a WRITE that overtook it returns the word without it. */
    ck_assert(old & (1ull << 3));
    ck_assert_int_eq(cm_dir_add_write_done(&d[3], 2, old - (1ull << 3), &e, &fx), CM_OK);
    ck_assert_uint_eq(fx.notify, 1ull << 0);
    ck_assert_uint_eq(e.sharers, (1ull << 0) | (1ull << 3));
    ck_assert_uint_eq(e.writers, (1ull << 0) | (1ull << 3));
    ck_assert(cm_dir_seen_word(&d[3], 2, &w));
    ck_assert_int_eq(cm_dir_add_peek(&d[1], 2), CM_OK);
    ck_assert(cm_dir_seen_word(&d[1], 2, &old));
    ck_assert_uint_eq(w, old); /* seen as it stands */
    /* A leave, the rejoin fenced behind it, a WRITE: nothing more to fence. */
    ck_assert_int_eq(cm_dir_update(&d[0], 2, CM_DIR_LEAVE, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_update(&d[0], 2, CM_DIR_JOIN, held_none, NULL, &e, &fx), CM_OK);
    fake_counts(world, &c0);
    ck_assert_int_eq(cm_dir_add_write_nbi(&d[0], 2, &old, &issued), CM_OK);
    fake_counts(world, &c1);
    ck_assert(issued);
    ck_assert_uint_eq(c1.fences - c0.fences, 0); /* the join was waited for: ordered */
    dirs_close(d);
}
END_TEST

/* An add not waited for is fenced before the next update of its page only, and not at all
 * where a flush of all came between. */
START_TEST(test_dir_add_fence_per_page)
{
    cm_dir_t d[NPROCS];
    cm_dir_entry_t e;
    cm_dir_effects_t fx;
    fake_counts_t c0, c1;

    dirs_open_add(d, false);
    for (uint64_t p = 1; p <= 3; p++) {
        ck_assert_int_eq(cm_dir_update(&d[0], p, CM_DIR_JOIN, held_none, NULL, &e, &fx), CM_OK);
    }
    fake_counts(world, &c0);
    ck_assert_int_eq(cm_dir_update(&d[0], 1, CM_DIR_LEAVE, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_dir_update(&d[0], 2, CM_DIR_WRITE, held_none, NULL, &e, &fx), CM_OK);
    fake_counts(world, &c1);
    ck_assert_uint_eq(c1.fences - c0.fences, 0); /* another page's update: not behind it */
    ck_assert_int_eq(cm_dir_update(&d[0], 1, CM_DIR_JOIN, held_none, NULL, &e, &fx), CM_OK);
    fake_counts(world, &c0);
    ck_assert_uint_eq(c0.fences - c1.fences, 1); /* its own page's: behind it */
    ck_assert(e.sharers & 1ull);
    /* A leave, a flush of all (a release), the page's next update: ordered already. */
    ck_assert_int_eq(cm_dir_update(&d[0], 3, CM_DIR_LEAVE, held_none, NULL, &e, &fx), CM_OK);
    ck_assert_int_eq(cm_rma_flush_all(fake_rma(world, 0)), CM_OK);
    fake_counts(world, &c0);
    ck_assert_int_eq(cm_dir_update(&d[0], 3, CM_DIR_JOIN, held_none, NULL, &e, &fx), CM_OK);
    fake_counts(world, &c1);
    ck_assert_uint_eq(c1.fences - c0.fences, 0);
    dirs_close(d);
}
END_TEST

/* ---- a failing held callback ------------------------------------------------------ */

static cm_status_t held_fail(uint64_t page, const cm_dir_effects_t *fx, void *arg)
{
    (void)page, (void)fx, (void)arg;
    return CM_ERR_INVALID;
}

static cm_status_t held_ok(uint64_t page, const cm_dir_effects_t *fx, void *arg)
{
    (void)page, (void)fx;
    (*(int *)arg)++;
    return CM_OK;
}

/* Rank 0 joins page 1 first after initialization: it claims the page's home (held runs to copy
 * the page in), and the callback fails. The update reports the failure, leaves the entry as it
 * was, and does not keep it: rank 1's update of the same page goes through. */
static void held_fail_rank(int r, void *arg)
{
    cm_dir_t dir;
    cm_dir_entry_t e;
    cm_dir_effects_t fx;
    int *calls = arg;

    if (r > 1) {
        return;
    }
    dir_open(&dir, r);
    dir.first_touch = true;
    if (r == 0) {
        ck_assert_int_eq(cm_dir_update(&dir, 1, CM_DIR_JOIN, held_fail, NULL, &e, &fx),
                         CM_ERR_INVALID);
        ck_assert(fx.claimed_home);
        __atomic_store_n(&calls[1], 1, __ATOMIC_SEQ_CST);
    } else {
        while (__atomic_load_n(&calls[1], __ATOMIC_SEQ_CST) == 0) {
            sched_yield();
        }
        /* As if nobody had touched it: rank 1 claims it now. */
        ck_assert_int_eq(cm_dir_update(&dir, 1, CM_DIR_JOIN, held_ok, &calls[0], &e, &fx), CM_OK);
        ck_assert(fx.claimed_home);
        ck_assert_uint_eq(e.sharers, 1ull << 1);
        ck_assert_uint_eq(e.home, 1);
    }
    cm_dir_fini(&dir);
}

static void check_held_fail(void)
{
    int calls[2] = {0, 0};

    fake_run(world, held_fail_rank, calls);
    ck_assert_int_eq(calls[0], 0); /* page 1's home is rank 1: nothing to copy, no callback */
}

START_TEST(test_dir_mcs_held_fails)
{
    impl = CM_DIR_IMPL_MCS;
    check_held_fail();
    /* The entry lock is free again at the page's home. */
    ck_assert_uint_eq(*(uint64_t *)(void *)(fake_base(world, 1) + OFF_ENTRIES), 0);
}
END_TEST

START_TEST(test_dir_cas_held_fails)
{
    impl = CM_DIR_IMPL_CAS;
    check_held_fail();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("directory");
    TCase *tc = tcase_create("fake-rma");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_dir_mcs_contention);
    tcase_add_test(tc, test_dir_cas_contention);
    tcase_add_test(tc, test_dir_mcs_held_fails);
    tcase_add_test(tc, test_dir_cas_held_fails);
    tcase_add_test(tc, test_dir_add_contention);
    tcase_add_test(tc, test_dir_add_first_touch);
    tcase_add_test(tc, test_dir_add_ordered_join);
    tcase_add_test(tc, test_dir_add_home_join);
    tcase_add_test(tc, test_dir_add_fence_per_page);
    tcase_add_test(tc, test_dir_add_write_behind_join);
    /* Four threads on two cores, yielding: seconds under load; a hang still fails. */
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
