/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Active messages, served asynchronously: rank 0 sends requests of sizes from
 * 8 B to 70 KB to every other rank (and one to itself); each request's
 * handler checks the payload and posts a reply from inside the handler. The
 * targets sit in a blocking read() of a FIFO that rank 0 writes only after
 * every reply has come back, so only the progress thread can serve them:
 * without it the job deadlocks and the test's watchdog fails it (no timing in
 * the verdict).
 *
 * Then the application threads post: each target, let out of a first FIFO,
 * posts messages to rank 0 (cm_rma_am_post, which returns at once) and blocks
 * in a second one until rank 0 has them all; a post that UCX queued goes out
 * only if the target's progress thread, asleep meanwhile, learns of it.
 *
 * Each target prints how many of its replies and posts UCX queued (rank 0's
 * FIFO was full): those go out only through the target's own progress.
 *
 *   mp_am FIFO_PATH [--count N]
 */
#include "mp_common.h"

#include <sched.h>
#include <stdatomic.h>

enum { AM_REQ = 0, AM_REPLY = 1, AM_NOTE = 2 };

typedef struct {
    uint32_t seq;
    uint32_t len;  /* payload bytes that follow */
} req_hdr_t;

typedef struct {
    uint32_t seq;
    uint32_t len;
    uint64_t sum;
} reply_t;

static cm_rma_t *rma;
static int me, np;
static atomic_uint served, replies, notes, bad;
static uint64_t *expect_sum; /* per seq, rank 0 */

static unsigned char pattern(uint32_t seq, size_t i)
{
    return (unsigned char)(seq * 7u + i * 13u + 1u);
}

/* Checks a header + payload message (length and pattern, counted in `bad`); *sum of the payload. */
static req_hdr_t check_message(const void *data, size_t len, uint64_t *sum)
{
    req_hdr_t h;
    const unsigned char *p = (const unsigned char *)data + sizeof(h);

    memcpy(&h, data, sizeof(h));
    *sum = 0;
    if (len != sizeof(h) + h.len) {
        atomic_fetch_add(&bad, 1);
    }
    for (size_t i = 0; i < h.len && sizeof(h) + i < len; i++) {
        if (p[i] != pattern(h.seq, i)) {
            atomic_fetch_add(&bad, 1);
            break;
        }
        *sum += p[i];
    }
    return h;
}

static void on_request(void *arg, int src, const void *data, size_t len)
{
    req_hdr_t h;
    reply_t r;

    (void)arg;
    h     = check_message(data, len, &r.sum);
    r.seq = h.seq;
    r.len = h.len;
    atomic_fetch_add(&served, 1);
    if (cm_rma_am_post(rma, src, AM_REPLY, &r, sizeof(r)) != CM_OK) {
        atomic_fetch_add(&bad, 1);
    }
}

static void on_reply(void *arg, int src, const void *data, size_t len)
{
    reply_t r;

    (void)arg;
    (void)src;
    memcpy(&r, data, sizeof(r));
    if (len != sizeof(r) || r.sum != expect_sum[r.seq]) {
        atomic_fetch_add(&bad, 1);
    }
    atomic_fetch_add(&replies, 1);
}

/* Rank 0: a message posted by a target's application thread. */
static void on_note(void *arg, int src, const void *data, size_t len)
{
    uint64_t sum;

    (void)arg;
    (void)src;
    check_message(data, len, &sum);
    atomic_fetch_add(&notes, 1);
}

/* Progresses (yielding when idle) until *v reaches target. */
static void wait_count(atomic_uint *v, unsigned target)
{
    unsigned idle = 0;

    while (atomic_load(v) < target) {
        if (cm_rma_progress(rma) != 0) {
            idle = 0;
        } else if (++idle > 16) {
            sched_yield();
        }
    }
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {8, 100, 4000, 20000, 70000};
    unsigned count = 40;
    const char *fifo;
    char go[200], done[200]; /* room for mp_fifo_name's suffix */
    unsigned char *buf;
    uint64_t queued_replies = 0;

    cm_init(&argc, &argv);
    if (argc < 2) {
        cm_abort(2, "usage: mp_am FIFO_PATH [--count N]");
    }
    fifo = argv[1];
    if (argc >= 4 && strcmp(argv[2], "--count") == 0) {
        count = (unsigned)atoi(argv[3]);
    }
    MP_CHECK(strlen(fifo) < sizeof(go) - 8, "FIFO path too long: %s", fifo);
    snprintf(go, sizeof(go), "%s.go", fifo);
    snprintf(done, sizeof(done), "%s.done", fifo);
    rma = cm_rt.rma;
    me  = cm_rank();
    np  = cm_nprocs();
    MP_OK(cm_rma_am_set_handler(rma, AM_REQ, on_request, NULL, NULL));
    MP_OK(cm_rma_am_set_handler(rma, AM_REPLY, on_reply, NULL, NULL));
    MP_OK(cm_rma_am_set_handler(rma, AM_NOTE, on_note, NULL, NULL));
    MP_CHECK(cm_rma_am_set_handler(rma, CM_RMA_AM_MAX_ID, on_reply, NULL, NULL) == CM_ERR_INVALID,
             "an out-of-range handler id was accepted");
    if (me == 0) {
        mp_fifo_make(fifo, np);
        mp_fifo_make(go, np);
        mp_fifo_make(done, np);
    }
    MP_OK(cm_rma_barrier(rma)); /* handlers everywhere before the first message */

    if (me == 0) {
        const unsigned total = count * (unsigned)(np - 1) + 1;
        unsigned seq = 0;
        buf = malloc(sizeof(req_hdr_t) + sizes[4]);
        expect_sum = calloc(total, sizeof(*expect_sum));
        MP_CHECK(buf != NULL && expect_sum != NULL, "out of memory");
        for (int pe = 1; pe <= np; pe++) {
            int dst = pe % np; /* the others, then itself once */
            for (unsigned k = 0; k < (dst == 0 ? 1 : count); k++, seq++) {
                req_hdr_t h = {seq, (uint32_t)sizes[seq % 5]};
                memcpy(buf, &h, sizeof(h));
                for (size_t i = 0; i < h.len; i++) {
                    buf[sizeof(h) + i] = pattern(seq, i);
                    expect_sum[seq] += buf[sizeof(h) + i];
                }
                MP_OK(cm_rma_am_send(rma, dst, AM_REQ, buf, sizeof(h) + h.len));
            }
        }
        wait_count(&replies, total);
        MP_CHECK(atomic_load(&bad) == 0, "%u bad messages", atomic_load(&bad));
        mp_fifo_release(fifo, np);
        printf("mp_am: %u requests (8 B to 70 KB) to each of %d targets blocked in read(), "
               "and 1 to itself, all answered from handlers\n", count, np - 1);
    } else {
        mp_fifo_block(fifo, me); /* until rank 0 has all its replies */
        MP_CHECK(atomic_load(&served) == count, "served %u requests, expected %u",
                 atomic_load(&served), count);
        MP_CHECK(atomic_load(&bad) == 0, "%u bad requests", atomic_load(&bad));
        cm_rma_stats_t st;
        cm_rma_get_stats(rma, &st);
        queued_replies = st.am_queued;
    }
    MP_OK(cm_rma_barrier(rma));

    if (me == 0) {
        mp_fifo_release(go, np);
        wait_count(&notes, count * (unsigned)(np - 1));
        MP_CHECK(atomic_load(&bad) == 0, "%u bad messages", atomic_load(&bad));
        mp_fifo_release(done, np);
        printf("mp_am: %u messages posted by the application thread of each of %d targets, "
               "all arrived\n", count, np - 1);
    } else {
        cm_rma_stats_t st;
        unsigned char note[sizeof(req_hdr_t) + 4000];

        mp_fifo_block(go, me); /* meanwhile the progress thread goes to sleep */
        for (unsigned k = 0; k < count; k++) {
            req_hdr_t h = {k, (uint32_t)sizes[k % 3]}; /* up to 4000 B: one fragment */
            memcpy(note, &h, sizeof(h));
            for (size_t i = 0; i < h.len; i++) {
                note[sizeof(h) + i] = pattern(k, i);
            }
            MP_OK(cm_rma_am_post(rma, 0, AM_NOTE, note, sizeof(h) + h.len));
        }
        mp_fifo_block(done, me); /* until rank 0 has every message */
        cm_rma_get_stats(rma, &st);
        /* sends that found rank 0's FIFO full: the path test_am_load.sh forces */
        printf("mp_am: rank %d: %" PRIu64 " replies and %" PRIu64 " posts queued by UCX\n", me,
               queued_replies, st.am_queued - queued_replies);
    }
    MP_OK(cm_rma_barrier(rma));
    if (me == 0) {
        cm_rma_stats_t st;
        cm_rma_get_stats(rma, &st);
        /* its requests, and the reply to its own request */
        MP_CHECK(st.am_sent == count * (unsigned)(np - 1) + 2, "am_sent %" PRIu64, st.am_sent);
        mp_fifo_remove(fifo, np);
        mp_fifo_remove(go, np);
        mp_fifo_remove(done, np);
        printf("mp_am: OK (progress thread %s)\n",
               cm_rma_progress_thread_running(rma) ? "on" : "off");
    }
    cm_finalize();
    return 0;
}
