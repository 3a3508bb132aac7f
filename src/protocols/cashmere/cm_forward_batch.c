/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Batched write-through (CM_FORWARD=batch; auto picks it for homes reached over TCP): the
 * runs the software doubling forwards to a home are gathered into one active message per home
 * instead of one put each. Where the transport emulates RMA in software (TCP), every put is a
 * message the home's CPU must take in, and a fault's get waits behind all of them in the
 * connection: appbt across two hosts forwarded 0.7-1.6 M puts of 26-58 bytes and its faults
 * took 0.4-1 ms each. A batch leaves when it fills (CM_FORWARD_BATCH bytes), overlapping the
 * computation as the puts did; the home copies each run into its master copy as a put would
 * land (each byte once, aligned words whole).
 *
 * Completion: an active message is done at the sender when UCX has sent it, not when the home
 * has applied it, so the flush of a release or acquire (cm_fwdb_complete) ends every home's
 * last batch with a request for an acknowledgement and waits for them all: the writes are in
 * the homes' copies before any notice, lock or barrier can make the release visible, as
 * cm_cm_complete's flush makes puts. A home applies a sender's batches in the order they were
 * sent (one endpoint, one connection), so the acknowledgement of the last covers the others.
 *
 * Only where pages are filled whole at a fault (CH*): a line fill (NS*) copies a line over
 * the local copy between releases, which would bring back a home's bytes older than ours still
 * waiting in a batch.
 */
#include "config.h"
#include "src/protocols/cashmere/cm_cm_int.h"
#include "src/protocols/cashmere/cm_forward_batch.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* A run in a batch: where in the region (offset of the network view), how long, the bytes,
 * padded to 8. */
typedef struct {
    uint64_t off;
    uint32_t len;
    uint32_t pad;
} cm_fwdb_run_t;

/* Before the runs: whether the home must acknowledge this batch. */
typedef struct {
    uint32_t ack;
    uint32_t pad;
} cm_fwdb_hdr_t;

typedef struct {
    char   *buf;   /* header, then runs */
    size_t used;   /* 0: nothing gathered */
    bool   sent;   /* a batch left since the last acknowledged one */
} cm_fwdb_home_t;

static struct {
    cm_fwdb_home_t   *home;    /* per rank */
    bool             *on;      /* per rank: its runs are batched */
    size_t           cap;      /* bytes of a batch */
    uint64_t         asked;    /* acknowledgements requested */
    _Atomic uint64_t acked;    /* acknowledgements received (handler) */
    bool             any;
} cm_fwdb;

/* At the home: copies each run into its master copy (our network view), as a put lands. */
static void cm_fwdb_on_batch(void *arg, int src, const void *data, size_t len)
{
    const char *p = (const char *)data + sizeof(cm_fwdb_hdr_t), *end = (const char *)data + len;
    cm_fwdb_hdr_t hdr;

    (void)arg;
    memcpy(&hdr, data, sizeof(hdr));
    while (p + sizeof(cm_fwdb_run_t) <= end) {
        cm_fwdb_run_t r;
        memcpy(&r, p, sizeof(r));
        p += sizeof(r);
        if (r.off + r.len > (cm_cm.npages << cm_cm.shift) || p + r.len > end) {
            cm_fatal(1, "write-through batch from rank %d: a run beyond the region", src);
        }
        cm_rma_copy_once(cm_cm.net + r.off, p, r.len);
        p += (r.len + 7u) & ~(size_t)7u;
    }
    if (hdr.ack) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the copies before the acknowledgement */
        if (cm_rma_am_post(cm_cm.rma, src, CM_FWDB_AM_ACK, NULL, 0) != CM_OK) {
            cm_fatal(1, "cannot acknowledge a write-through batch to rank %d", src);
        }
    }
}

static void cm_fwdb_on_ack(void *arg, int src, const void *data, size_t len)
{
    (void)arg;
    (void)src;
    (void)data;
    (void)len;
    atomic_fetch_add_explicit(&cm_fwdb.acked, 1, memory_order_release);
}

cm_status_t cm_fwdb_init(bool every_home, size_t cap)
{
    int n = cm_cm.nprocs;

    memset(&cm_fwdb, 0, sizeof(cm_fwdb));
    cm_fwdb.cap  = cap;
    cm_fwdb.home = calloc((size_t)n, sizeof(*cm_fwdb.home));
    cm_fwdb.on   = calloc((size_t)n, sizeof(*cm_fwdb.on));
    if (cm_fwdb.home == NULL || cm_fwdb.on == NULL) {
        cm_error("cashmere: out of memory for the write-through batches");
        return CM_ERR_NO_MEMORY;
    }
    for (int pe = 0; pe < n; pe++) {
        char tl[128];
        /* Not ourselves, nor a home whose memory is mapped here (a forwarded store is a plain
         * store there). */
        cm_fwdb.on[pe] = pe != cm_cm.me && cm_cm.home_delta[pe] == 0 &&
                         (every_home || cm_rma_peer_tcp_only(cm_cm.rma, pe, tl, sizeof(tl)));
        cm_fwdb.any |= cm_fwdb.on[pe];
    }
    /* Every process registers (a home applies batches whatever it sends itself), and before
     * anyone sends: UCX drops a message whose id has no handler yet. The same decision on
     * every process: the settings are the job's. */
    CM_CHECK(cm_rma_am_set_handler(cm_cm.rma, CM_FWDB_AM_BATCH, cm_fwdb_on_batch, NULL,
                                   "a batch of forwarded writes"));
    CM_CHECK(cm_rma_am_set_request(cm_cm.rma, CM_FWDB_AM_BATCH)); /* the home's CPU applies it */
    CM_CHECK(cm_rma_am_set_handler(cm_cm.rma, CM_FWDB_AM_ACK, cm_fwdb_on_ack, NULL,
                                   "an acknowledgement of forwarded writes"));
    return cm_rma_barrier(cm_cm.rma);
}

bool cm_fwdb_active(void)
{
    return cm_fwdb.any;
}

void cm_fwdb_fini(void)
{
    if (cm_fwdb.home != NULL) {
        for (int pe = 0; pe < cm_cm.nprocs; pe++) {
            free(cm_fwdb.home[pe].buf);
        }
    }
    free(cm_fwdb.home);
    free(cm_fwdb.on);
    memset(&cm_fwdb, 0, sizeof(cm_fwdb));
}

bool cm_fwdb_batched(int home)
{
    return cm_fwdb.on != NULL && cm_fwdb.on[home];
}

static void cm_fwdb_send(int pe, bool ack)
{
    cm_fwdb_home_t *h = &cm_fwdb.home[pe];
    cm_fwdb_hdr_t hdr = {.ack = ack, .pad = 0};

    /* Called for a batch that exists: runs gathered, or one sent since the last acknowledged. */
    memcpy(h->buf, &hdr, sizeof(hdr));
    /* Posted: UCX copies it or keeps it until sent; the buffer is ours again at once. */
    if (cm_rma_am_post(cm_cm.rma, pe, CM_FWDB_AM_BATCH, h->buf, h->used) != CM_OK) {
        cm_fatal(1, "write-through batch of %zu bytes to rank %d failed", h->used, pe);
    }
    h->used = sizeof(hdr);
    h->sent = !ack;
    if (ack) {
        cm_fwdb.asked++;
    }
}

void cm_fwdb_append(int home, uintptr_t addr, size_t len)
{
    cm_fwdb_home_t *h = &cm_fwdb.home[home];
    uint64_t off = addr - (uintptr_t)cm_cm.app;

    while (len > 0) {
        size_t room, n;
        cm_fwdb_run_t r;

        if (h->buf == NULL) {
            h->buf = malloc(cm_fwdb.cap);
            if (h->buf == NULL) {
                cm_fatal(1, "cashmere: out of memory for a write-through batch");
            }
            h->used = sizeof(cm_fwdb_hdr_t);
        }
        room = cm_fwdb.cap - h->used;
        if (room < sizeof(r) + 64) {
            cm_fwdb_send(home, false);
            continue;
        }
        n = (room - sizeof(r)) & ~(size_t)7u; /* its padded length fits too */
        n = (len < n) ? len : n;
        r.off = off;
        r.len = (uint32_t)n;
        r.pad = 0;
        memcpy(h->buf + h->used, &r, sizeof(r));
        /* The bytes as they are now, from the network view (never protected). */
        memcpy(h->buf + h->used + sizeof(r), cm_cm.net + off, n);
        h->used += sizeof(r) + ((n + 7u) & ~(size_t)7u);
        off += n;
        len -= n;
    }
}

static bool cm_fwdb_all_acked(void *arg)
{
    (void)arg;
    return atomic_load_explicit(&cm_fwdb.acked, memory_order_acquire) >= cm_fwdb.asked;
}

void cm_fwdb_complete(void)
{
    bool waiting = false;

    if (!cm_fwdb.any) {
        return;
    }
    for (int pe = 0; pe < cm_cm.nprocs; pe++) {
        cm_fwdb_home_t *h = &cm_fwdb.home[pe];
        if (h->used > sizeof(cm_fwdb_hdr_t) || h->sent) {
            cm_fwdb_send(pe, true);
            waiting = true;
        }
    }
    if (waiting) {
        cm_rma_wait_events(cm_cm.rma, cm_fwdb_all_acked, NULL,
                           CM_RMA_WHY("the acknowledgements of writes forwarded in batches "
                                      "(%a asked)", NULL, cm_fwdb.asked, 0, -1));
    }
}
