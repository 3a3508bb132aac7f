/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The directory's entry updates under contention, apart from the rest of the
 * protocol: every rank joins, writes and leaves the same few pages (homed on
 * different ranks) as fast as it can, in both directory forms. A private
 * directory lives in the metadata scratch area, so the protocol's own is not
 * touched.
 *
 * What must hold, each checked:
 *   - no update is lost: when everyone has left, every entry is empty, and
 *     each rank's own bit was where it put it after each of its updates;
 *   - held sections of one page exclude each other: each one does a plain
 *     get/+1/put of a per-page counter at the page's home, and the counters
 *     add up to the number of held sections run;
 *   - nobody waits for ever (the test's timeout).
 *
 *   mp_dir [--iters K] [--dir mcs|cas]
 */
#include "mp_common.h"
#include "directory/cm_dir.h"

#define NPAGES 3
/* Words of the scratch area (each area on its own cache lines). */
#define W_DIR      0                        /* NPAGES / np entries of CM_DIR_ENTRY_BYTES */
#define W_QNODE    (W_DIR + NPAGES * 8)     /* CM_DIR_QNODE_BYTES */
#define W_COUNTERS (W_QNODE + 8)            /* per page, at its home */
#define W_HELD     (W_COUNTERS + NPAGES)    /* rank r's held-section count, gathered at rank 0 */
#define W_START    (W_HELD + 64)            /* at rank 0: ranks ready to start */
#define W_SEEN     (W_START + 8)            /* at rank 0: held sections published so far */
#define MIN_HELD   50                       /* keep going until this many were checked */

static cm_rma_t *rma;
static int me, np;
static uint64_t held_runs;

static uint64_t *word(int i)
{
    return (uint64_t *)cm_rt.scratch + i;
}

/* Non-atomic on purpose: only the entry's exclusion keeps the counter right. */
static cm_status_t held_count(uint64_t page, const cm_dir_effects_t *fx, void *arg)
{
    int home = (int)(page % (uint64_t)np);
    uint64_t v;

    (void)fx;
    (void)arg;
    MP_OK(cm_rma_get(rma, home, &v, word(W_COUNTERS + (int)page), sizeof(v)));
    v++;
    MP_OK(cm_rma_put(rma, home, word(W_COUNTERS + (int)page), &v, sizeof(v)));
    MP_OK(cm_rma_flush(rma, home));
    held_runs++;
    return CM_OK;
}

static void check_mine(const cm_dir_entry_t *e, cm_dir_op_t op, uint64_t page, int i)
{
    uint64_t bit = 1ull << me;
    bool share = (e->sharers & bit) != 0, write = (e->writers & bit) != 0;
    bool ok = (op == CM_DIR_LEAVE) ? (!share && !write)
            : (op == CM_DIR_JOIN)  ? share
                                   : (share && write);
    MP_CHECK(ok, "iteration %d, page %" PRIu64 ": after op %d the entry shows sharers %#" PRIx64
             " writers %#" PRIx64, i, page, (int)op, e->sharers, e->writers);
}

int main(int argc, char **argv)
{
    const char *form = "mcs";
    int iters = 2000;
    cm_dir_seg_t seg;
    cm_dir_t dir;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--iters") == 0) {
            iters = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "--dir") == 0) {
            form = argv[i + 1];
        }
    }
    cm_init(&argc, &argv);
    rma = cm_rt.rma;
    me  = cm_rank();
    np  = cm_nprocs();

    /* Directory areas are in the scratch area. */
    seg.base     = (char *)cm_rt.meta_base;
    seg.per_proc = (NPAGES + (uint64_t)np - 1) / (uint64_t)np;
    seg.entries  = (size_t)((char *)word(W_DIR) - (char *)cm_rt.meta_base);
    seg.qnode    = (size_t)((char *)word(W_QNODE) - (char *)cm_rt.meta_base);
    memset(word(0), 0, (size_t)(W_SEEN + 1) * sizeof(uint64_t));
    MP_OK(cm_dir_init(&dir, rma, strcmp(form, "cas") == 0 ? CM_DIR_IMPL_CAS : CM_DIR_IMPL_MCS,
                      &seg, 64));
    MP_OK(cm_rma_barrier(rma));
    /* A barrier lets ranks go milliseconds apart, longer than a short run: start together. */
    {
        uint64_t ready;
        MP_OK(cm_rma_fadd(rma, 0, word(W_START), 1, &ready));
        while (ready < (uint64_t)np) {
            cm_rma_progress(rma);
            MP_OK(cm_rma_get(rma, 0, &ready, word(W_START), sizeof(ready)));
        }
    }

    /* Join, write and leave a page picked at random, so that the queues mix; at least iters
     * updates each, and on until MIN_HELD held sections ran in all (the ranks may not overlap
     * at first on a loaded machine). */
    uint64_t pick = 0, rnd = 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1), published = 0, seen = 0;
    for (int i = 0; i < iters || seen < MIN_HELD || i % 3 != 0; i++) {
        cm_dir_op_t op = (cm_dir_op_t)(i % 3); /* JOIN, WRITE, LEAVE */
        cm_dir_entry_t e;
        cm_dir_effects_t fx;
        if (op == CM_DIR_JOIN) {
            rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
            pick = rnd % NPAGES;
        }
        MP_OK(cm_dir_update(&dir, pick, op, held_count, NULL, &e, &fx));
        check_mine(&e, op, pick, i);
        if ((i & 63) == 0) {
            MP_OK(cm_rma_flush_all(rma)); /* as release and acquire do: empties the stash */
            MP_OK(cm_rma_fadd(rma, 0, word(W_SEEN), held_runs - published, &seen));
            seen += held_runs - published;
            published = held_runs;
        }
    }
    /* Leave whatever the last round left joined. */
    for (uint64_t page = 0; page < NPAGES; page++) {
        cm_dir_entry_t e;
        cm_dir_effects_t fx;
        MP_OK(cm_dir_update(&dir, page, CM_DIR_LEAVE, held_count, NULL, &e, &fx));
    }
    MP_OK(cm_rma_put(rma, 0, word(W_HELD + me), &held_runs, sizeof(held_runs)));
    MP_OK(cm_rma_flush_all(rma));
    MP_OK(cm_rma_barrier(rma));

    if (me == 0) {
        uint64_t counted = 0, ran = 0;
        for (uint64_t page = 0; page < NPAGES; page++) {
            cm_dir_entry_t e;
            uint64_t c;
            MP_OK(cm_dir_read(&dir, page, &e, NULL));
            MP_CHECK(e.sharers == 0 && e.writers == 0,
                     "page %" PRIu64 " left with sharers %#" PRIx64 " writers %#" PRIx64, page,
                     e.sharers, e.writers);
            MP_OK(cm_rma_get(rma, (int)(page % (uint64_t)np), &c, word(W_COUNTERS + (int)page),
                             sizeof(c)));
            counted += c;
        }
        for (int r = 0; r < np; r++) {
            ran += *word(W_HELD + r);
        }
        MP_CHECK(ran > 0, "no update needed a held section: nothing was checked");
        MP_CHECK(counted == ran, "held sections ran %" PRIu64 " times, counters say %" PRIu64,
                 ran, counted);
        printf("mp_dir: %d ranks, %s form, %d updates or more each, %" PRIu64
               " held sections, OK\n", np, form, iters, ran);
    }
    MP_OK(cm_rma_barrier(rma));
    cm_dir_fini(&dir);
    cm_finalize();
    return 0;
}
