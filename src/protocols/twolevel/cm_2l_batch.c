/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Outgoing diffs to homes reached over TCP, gathered into one active message per home instead
 * of a put per run (as Cashmere's write-through batches, src/protocols/cashmere/
 * cm_forward_batch.c). A diff's runs are byte-exact (other hosts may write the bytes between
 * them), so a float that changed in some of its bytes is a run of one to three: over TCP, where
 * every put is a message the home's CPU takes in, SOR's first phases put 216,544 runs of 3.4
 * bytes on average for 743 KB and took 1.4-1.9 s against one level's 0.046 s (2 hosts x 2).
 *
 * A batch: a header, then per page its number and run count, then each run as its offset in
 * the page and length (two bytes each) and its bytes, unpadded (a run of three bytes costs
 * seven). The home's handler copies each run into its host's copy (its network view) as a put
 * would land. The release ends each home's last batch with a request for an acknowledgement and
 * waits for them before it posts a notice: the diffs are at the homes before anyone can see
 * the release, as a flush makes puts (one endpoint, one connection: a home applies a sender's
 * batches in order, so the last acknowledgement covers the others).
 */
#include "config.h"
#include "src/protocols/twolevel/cm_2l_int.h"
#include "util/cm_error.h"
#include "util/cm_log.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CM_2L_AM_DIFF 20 /* ids in use elsewhere: TreadMarks 1-11, a sleeper's wake 24, Cashmere 26-27 */
#define CM_2L_AM_ACK  21
#define CM_2L_BATCH   (16 * 1024)

/* A page's record: then nruns runs of (uint16_t off, uint16_t len, len bytes). */
typedef struct {
    uint32_t page;
    uint16_t nruns;
} __attribute__((packed)) cm_2l_prec_t;

typedef struct {
    uint32_t ack;
    uint32_t pad;
} cm_2l_bhdr_t;

static struct {
    char             **buf;   /* per rank: header, then runs */
    size_t           *used;
    bool             *sent;   /* a batch left since the last acknowledged one */
    bool             *on;     /* per rank: its runs are batched */
    size_t           *prec;   /* per rank: where the open page record is in its batch (0: none) */
    uint64_t         *ppage;  /* per rank: its page */
    uint64_t         asked;
    _Atomic uint64_t acked;
} cm_2lb;

static void cm_2l_on_diff(void *arg, int src, const void *data, size_t len)
{
    const char *p = (const char *)data + sizeof(cm_2l_bhdr_t), *end = (const char *)data + len;
    cm_2l_bhdr_t hdr;

    (void)arg;
    memcpy(&hdr, data, sizeof(hdr));
    while (p + sizeof(cm_2l_prec_t) <= end) {
        cm_2l_prec_t pr;
        char *page;

        memcpy(&pr, p, sizeof(pr));
        p += sizeof(pr);
        if (pr.page >= cm_2l.npages) {
            cm_fatal(1, "twolevel: a diff from rank %d names page %u beyond the region", src,
                     pr.page);
        }
        page = cm_2l.net + ((uint64_t)pr.page << cm_2l.shift);
        for (unsigned i = 0; i < pr.nruns; i++) {
            uint16_t r[2];
            memcpy(r, p, sizeof(r));
            p += sizeof(r);
            if ((size_t)r[0] + r[1] > cm_2l.page_size || p + r[1] > end) {
                cm_fatal(1, "twolevel: a diff from rank %d runs beyond its page", src);
            }
            cm_rma_copy_once(page + r[0], p, r[1]);
            p += r[1];
        }
    }
    if (hdr.ack) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the copies before the acknowledgement */
        if (cm_rma_am_post(cm_2l.rma, src, CM_2L_AM_ACK, NULL, 0) != CM_OK) {
            cm_fatal(1, "twolevel: cannot acknowledge a diff to rank %d", src);
        }
    }
}

static void cm_2l_on_ack(void *arg, int src, const void *data, size_t len)
{
    (void)arg;
    (void)src;
    (void)data;
    (void)len;
    atomic_fetch_add_explicit(&cm_2lb.acked, 1, memory_order_release);
}

cm_status_t cm_2l_batch_init(void)
{
    int n = cm_2l.nprocs;

    memset(&cm_2lb, 0, sizeof(cm_2lb));
    cm_2lb.buf  = calloc((size_t)n, sizeof(*cm_2lb.buf));
    cm_2lb.used = calloc((size_t)n, sizeof(*cm_2lb.used));
    cm_2lb.sent = calloc((size_t)n, sizeof(*cm_2lb.sent));
    cm_2lb.on   = calloc((size_t)n, sizeof(*cm_2lb.on));
    cm_2lb.prec = calloc((size_t)n, sizeof(*cm_2lb.prec));
    cm_2lb.ppage = calloc((size_t)n, sizeof(*cm_2lb.ppage));
    if (cm_2lb.buf == NULL || cm_2lb.used == NULL || cm_2lb.sent == NULL || cm_2lb.on == NULL ||
        cm_2lb.prec == NULL || cm_2lb.ppage == NULL) {
        cm_error("twolevel: out of memory for the diff batches");
        return CM_ERR_NO_MEMORY;
    }
    for (int h = 0; h < cm_2l.nhosts; h++) {
        int pe = cm_2l.hosts->leader[h];
        char tl[128];
        /* (Runs are told in 16 bits: pages up to 32 KiB; larger ones put their runs.) */
        cm_2lb.on[pe] = h != cm_2l.host && cm_2l.page_size <= 32768 &&
                        cm_rma_peer_tcp_only(cm_2l.rma, pe, tl, sizeof(tl));
    }
    /* Every process registers, before anyone sends (UCX drops a message it has no handler
     * for): a leader applies diffs whatever it sends itself. */
    CM_CHECK(cm_rma_am_set_handler(cm_2l.rma, CM_2L_AM_DIFF, cm_2l_on_diff, NULL,
                                   "a batch of outgoing diffs"));
    CM_CHECK(cm_rma_am_set_request(cm_2l.rma, CM_2L_AM_DIFF)); /* the home's CPU applies it */
    return cm_rma_am_set_handler(cm_2l.rma, CM_2L_AM_ACK, cm_2l_on_ack, NULL,
                                 "an acknowledgement of outgoing diffs");
}

void cm_2l_batch_fini(void)
{
    if (cm_2lb.buf != NULL) {
        for (int pe = 0; pe < cm_2l.nprocs; pe++) {
            free(cm_2lb.buf[pe]);
        }
    }
    free(cm_2lb.buf);
    free(cm_2lb.used);
    free(cm_2lb.sent);
    free(cm_2lb.on);
    free(cm_2lb.prec);
    free(cm_2lb.ppage);
    memset(&cm_2lb, 0, sizeof(cm_2lb));
}

bool cm_2l_batched(int pe)
{
    return cm_2lb.on != NULL && cm_2lb.on[pe];
}

static cm_status_t cm_2l_batch_send(int pe, bool ack)
{
    cm_2l_bhdr_t hdr = {.ack = ack, .pad = 0};

    memcpy(cm_2lb.buf[pe], &hdr, sizeof(hdr));
    cm_debug("twolevel: a diff batch of %zu bytes to rank %d%s", cm_2lb.used[pe], pe,
             ack ? ", acknowledged" : "");
    /* Posted: UCX copies it or keeps it until sent; the buffer is ours again at once. */
    CM_CHECK(cm_rma_am_post(cm_2l.rma, pe, CM_2L_AM_DIFF, cm_2lb.buf[pe], cm_2lb.used[pe]));
    cm_2lb.used[pe] = sizeof(hdr);
    cm_2lb.prec[pe] = 0;
    cm_2lb.sent[pe] = !ack;
    cm_2lb.asked += ack;
    return CM_OK;
}

cm_status_t cm_2l_batch_append(int pe, uint64_t off, const char *src, size_t len)
{
    const uint64_t page = off >> cm_2l.shift;
    const size_t in = off & (cm_2l.page_size - 1);
    cm_2l_prec_t pr;
    uint16_t r[2];

    cm_assert(in + len <= cm_2l.page_size); /* a diff's runs stay in their page */
    if (cm_2lb.buf[pe] == NULL) {
        cm_2lb.buf[pe] = malloc(CM_2L_BATCH);
        if (cm_2lb.buf[pe] == NULL) {
            cm_error("twolevel: out of memory for a diff batch");
            return CM_ERR_NO_MEMORY;
        }
        cm_2lb.used[pe] = sizeof(cm_2l_bhdr_t);
        cm_2lb.prec[pe] = 0;
    }
    /* Room for a new page record and the run: else the batch leaves first. */
    if (cm_2lb.used[pe] + sizeof(pr) + sizeof(r) + len > CM_2L_BATCH) {
        CM_CHECK(cm_2l_batch_send(pe, false));
    }
    if (cm_2lb.prec[pe] == 0 || cm_2lb.ppage[pe] != page) {
        pr = (cm_2l_prec_t){.page = (uint32_t)page, .nruns = 0};
        cm_2lb.prec[pe]  = cm_2lb.used[pe];
        cm_2lb.ppage[pe] = page;
        memcpy(cm_2lb.buf[pe] + cm_2lb.used[pe], &pr, sizeof(pr));
        cm_2lb.used[pe] += sizeof(pr);
    }
    memcpy(&pr, cm_2lb.buf[pe] + cm_2lb.prec[pe], sizeof(pr));
    pr.nruns++;
    memcpy(cm_2lb.buf[pe] + cm_2lb.prec[pe], &pr, sizeof(pr));
    r[0] = (uint16_t)in;
    r[1] = (uint16_t)len;
    memcpy(cm_2lb.buf[pe] + cm_2lb.used[pe], r, sizeof(r));
    memcpy(cm_2lb.buf[pe] + cm_2lb.used[pe] + sizeof(r), src, len);
    cm_2lb.used[pe] += sizeof(r) + len;
    return CM_OK;
}

static bool cm_2l_batch_acked(void *arg)
{
    (void)arg;
    return atomic_load_explicit(&cm_2lb.acked, memory_order_acquire) >= cm_2lb.asked;
}

cm_status_t cm_2l_batch_complete(void)
{
    bool any = false;

    for (int pe = 0; pe < cm_2l.nprocs; pe++) {
        if (cm_2lb.on[pe] && (cm_2lb.used[pe] > sizeof(cm_2l_bhdr_t) || cm_2lb.sent[pe])) {
            CM_CHECK(cm_2l_batch_send(pe, true));
            any = true;
        }
    }
    if (any) {
        cm_rma_wait_events(cm_2l.rma, cm_2l_batch_acked, NULL,
                           CM_RMA_WHY("the acknowledgements of outgoing diffs", NULL, 0, 0, -1));
    }
    return CM_OK;
}
