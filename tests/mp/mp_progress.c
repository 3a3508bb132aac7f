/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Target progress: rank 0 performs one-sided operations on every other rank
 * while those ranks are not calling the library, or are inside it waiting.
 * Where the transport emulates RMA in software (TCP), only target-side
 * progress completes them.
 *
 *   mp_progress FIFO_PATH [phase...]    phases: blocked wait barrier held finalize
 *
 * blocked:  targets sit in a blocking open()/read() of a FIFO (one each) that
 *           rank 0 writes only after its operations on them have completed. Without
 *           target progress the job deadlocks (and the test's timeout fails
 *           it): no timing is involved in the verdict.
 * wait:     targets spin in cm_rma_wait_u64 for a flag rank 0 sets last.
 * barrier:  targets enter the barrier at once; rank 0 works on them first.
 * finalize: targets enter cm_finalize at once; rank 0 works on them first.
 */
#include "mp_common.h"


#define OPS 50

static cm_rma_t *rma;
static int me, np;

/* Words in the metadata scratch area: puts, gets and atomics all apply. */
static uint64_t *word(int i)
{
    return (uint64_t *)cm_rt.scratch + i;
}

/* Rank 0's work on target pe: puts, gets, and fetch-and-adds whose results must count up. */
static void work_on(int pe, uint64_t tag)
{
    uint64_t v, old;

    for (int i = 0; i < OPS; i++) {
        v = tag * 1000 + (uint64_t)i;
        MP_OK(cm_rma_put(rma, pe, word(1), &v, sizeof(v)));
        MP_OK(cm_rma_flush(rma, pe));
        MP_OK(cm_rma_get(rma, pe, &old, word(1), sizeof(old)));
        MP_CHECK(old == v, "rank %d: get after put returned %" PRIu64 ", expected %" PRIu64, pe, old, v);
        MP_OK(cm_rma_fadd(rma, pe, word(2), 1, &old));
        MP_CHECK(old == (uint64_t)i, "rank %d: fetch-and-add returned %" PRIu64 ", expected %d", pe,
                 old, i);
    }
    v = tag;
    MP_OK(cm_rma_put(rma, pe, word(0), &v, sizeof(v)));
    MP_OK(cm_rma_flush(rma, pe));
}

/* What a target checks in its own memory after rank 0 worked on it. */
static void check_worked(uint64_t tag)
{
    MP_CHECK(*word(0) == tag, "phase tag %" PRIu64 ", expected %" PRIu64, *word(0), tag);
    MP_CHECK(*word(1) == tag * 1000 + OPS - 1, "last put %" PRIu64, *word(1));
    MP_CHECK(*word(2) == OPS, "fetch-and-add count %" PRIu64, *word(2));
}

static void reset(void)
{
    memset(word(0), 0, 4 * sizeof(uint64_t));
    MP_OK(cm_rma_barrier(rma));
}

static void phase_blocked(const char *fifo)
{
    const uint64_t tag = 11;

    reset();
    if (me == 0) {
        mp_fifo_make(fifo, np);
    }
    MP_OK(cm_rma_barrier(rma));
    if (me == 0) {
        for (int pe = 1; pe < np; pe++) {
            work_on(pe, tag);
        }
        /* Only now release each target from its blocking open()/read(). */
        mp_fifo_release(fifo, np);
        printf("mp_progress: blocked: %d targets served while blocked in read()\n", np - 1);
    } else {
        mp_fifo_block(fifo, me);
        check_worked(tag);
    }
    MP_OK(cm_rma_barrier(rma));
    if (me == 0) {
        mp_fifo_remove(fifo, np);
    }
}

/* Rank 0's work on every target, each then told through the word it waits on (cm_rma.h). */
static void work_and_tell(uint64_t tag)
{
    for (int pe = 1; pe < np; pe++) {
        work_on(pe, tag);
        MP_OK(cm_rma_put_u64_nbi(rma, pe, word(3), 1));
        MP_OK(cm_rma_flush(rma, pe));
    }
}

static void phase_wait(void)
{
    const uint64_t tag = 22;

    reset();
    if (me == 0) {
        work_and_tell(tag);
        printf("mp_progress: wait: %d targets served while in cm_rma_wait_u64\n", np - 1);
    } else {
        cm_rma_wait_u64(rma, word(3), CM_CMP_EQ, 1, NULL);
        check_worked(tag);
    }
    MP_OK(cm_rma_barrier(rma));
}

/* Targets wait inside a hold of the worker (cm_rma_hold_begin): a wait that blocks hands the
 * worker back to the progress thread while it sleeps, or nobody serves rank 0. */
static void phase_held(void)
{
    const uint64_t tag = 55;

    reset();
    if (me == 0) {
        work_and_tell(tag);
        printf("mp_progress: held: %d targets served while waiting in a hold\n", np - 1);
    } else {
        cm_rma_hold_begin(rma);
        cm_rma_wait_u64(rma, word(3), CM_CMP_EQ, 1, NULL);
        cm_rma_hold_end(rma);
        check_worked(tag);
    }
    MP_OK(cm_rma_barrier(rma));
}

static void phase_barrier(void)
{
    const uint64_t tag = 33;

    reset();
    if (me == 0) {
        for (int pe = 1; pe < np; pe++) {
            work_on(pe, tag);
        }
    }
    MP_OK(cm_rma_barrier(rma));
    if (me != 0) {
        check_worked(tag);
    } else {
        printf("mp_progress: barrier: %d targets served while in the barrier\n", np - 1);
    }
    MP_OK(cm_rma_barrier(rma));
}

/* Last: targets leave the library's normal life. Rank 0 checks through fetched values only. */
static void phase_finalize(void)
{
    reset();
    if (me == 0) {
        for (int pe = 1; pe < np; pe++) {
            work_on(pe, 44);
        }
        printf("mp_progress: finalize: %d targets served while in cm_finalize\n", np - 1);
    }
}

int main(int argc, char **argv)
{
    const char *fifo;
    bool finalize_phase = false;

    if (argc < 2) {
        fprintf(stderr, "usage: mp_progress FIFO_PATH [blocked|wait|barrier|held|finalize]...\n");
        return 2;
    }
    fifo = argv[1];
    cm_init(&argc, &argv);
    rma = cm_rt.rma;
    me  = cm_rank();
    np  = cm_nprocs();
    MP_CHECK(np >= 2, "needs at least 2 processes");

    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "blocked") == 0) {
            phase_blocked(fifo);
        } else if (strcmp(argv[i], "wait") == 0) {
            phase_wait();
        } else if (strcmp(argv[i], "barrier") == 0) {
            phase_barrier();
        } else if (strcmp(argv[i], "held") == 0) {
            phase_held();
        } else if (strcmp(argv[i], "finalize") == 0) {
            finalize_phase = true;
        } else {
            cm_abort(2, "unknown phase %s", argv[i]);
        }
    }
    if (finalize_phase) {
        phase_finalize();
    }
    mp_check_no_missed_wakes(rma);
    if (me == 0) {
        printf("mp_progress: OK (progress thread %s)\n",
               cm_rma_progress_thread_running(rma) ? "on" : "off");
    }
    cm_finalize();
    return 0;
}
