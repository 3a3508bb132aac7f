/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Active messages of the one-sided layer (two-sided; the TreadMarks
 * baseline's transport): handler registration and the receive callback,
 * blocking sends and posts that complete in the background. Handlers run
 * inside UCX progress; see cm_rma.h.
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_rma_int.h"
#include "util/cm_log.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The wire header: who sent it (UCX does not say without a reply endpoint), and with injected
 * delays (CM_NET_*) when it may be delivered: on the sender's CLOCK_MONOTONIC where the target
 * shares it (the same host), else as a duration from its arrival. */
typedef struct {
    uint32_t src;
    uint32_t flags;    /* CM_RMA_AM_* */
    uint64_t due;      /* 0: at once */
} cm_rma_am_hdr_t;
#define CM_RMA_AM_DELAYED  1u /* sent with injected delays: a request pays its interrupt */
#define CM_RMA_AM_RELATIVE 2u /* due is a duration from arrival, not a time */

static void cm_rma_am_stamp(cm_rma_t *rma, int pe, cm_rma_am_hdr_t *hdr, uint64_t due)
{
    bool relative = due != 0 && !rma->same_host[pe];
    uint64_t now  = relative ? cm_time_ns() : 0;

    hdr->src   = (uint32_t)rma->rank;
    hdr->flags = (due != 0 ? CM_RMA_AM_DELAYED : 0) | (relative ? CM_RMA_AM_RELATIVE : 0);
    /* (Due already, with the sender's overhead only: no wait at the target.) */
    hdr->due   = relative ? ((due > now) ? due - now : 0) : due;
}

/* The injected part of a message's way (CM_NET_LATENCY, _BANDWIDTH, _OCCUPANCY), then, for a
 * request, the interrupt that starts its handler (CM_NET_INTERRUPT): the target's CPU is busy
 * for it, as an interrupt's entry and exit are; the latency is only waited for. */
static void cm_rma_am_deliver_delay(struct cm_rma_am *am, const cm_rma_am_hdr_t *hdr)
{
    cm_rma_t *rma = am->rma;
    uint64_t now, start, due = hdr->due;

    if (!(hdr->flags & CM_RMA_AM_DELAYED)) {
        return; /* (the sender's delays decide: cm_bench pauses its own to compare) */
    }
    now = start = cm_time_ns();
    if (hdr->flags & CM_RMA_AM_RELATIVE) {
        due += now;
    }
    while (now < due) {
        if (due - now > 20000) {
            sched_yield();
        } else {
            cm_rma_cpu_relax();
        }
        now = cm_time_ns();
    }
    if (am->request && rma->delay.interrupt_ns != 0) {
        uint64_t end = now + rma->delay.interrupt_ns;

        while ((now = cm_time_ns()) < end) {
            cm_rma_cpu_relax();
        }
        atomic_fetch_add_explicit(&rma->interrupts, 1, memory_order_relaxed);
    }
    CM_RMA_COUNT(rma->stats.delay_ns, now - start);
}

static ucs_status_t cm_rma_am_recv(void *arg, const void *header, size_t header_length, void *data,
                                   size_t length, const ucp_am_recv_param_t *param)
{
    struct cm_rma_am *am = arg;
    cm_rma_am_hdr_t hdr;

    if (header_length != sizeof(hdr) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        /* Every send forces eager; anything else is a bug or a foreign sender. */
        cm_error("active message with an unexpected form (header %zu bytes, flags 0x%" PRIx64 ")",
                 header_length, (uint64_t)param->recv_attr);
        return UCS_OK;
    }
    memcpy(&hdr, header, sizeof(hdr));
    if (hdr.src >= (uint32_t)am->rma->nprocs) {
        cm_error("active message from rank %" PRIu32 " of a job of %d: ignored", hdr.src,
                 am->rma->nprocs);
        return UCS_OK;
    }
    atomic_fetch_add_explicit(&am->rma->am_received, 1, memory_order_relaxed);
    /* What a stuck wait reports as the sender's last word. */
    atomic_store_explicit(&am->rma->am_last_id[hdr.src], (unsigned)(am - am->rma->am),
                          memory_order_relaxed);
    atomic_store_explicit(&am->rma->am_last_ns[hdr.src], cm_time_ns(), memory_order_relaxed);
    cm_rma_am_deliver_delay(am, &hdr);
    if ((uintptr_t)data % 8 != 0) {
        /* Handlers read their words in place: a copy where UCX left the message unaligned
         * (TCP does), rather than a misaligned load in every handler. */
        void *copy = malloc(length ? length : 1);

        if (copy == NULL) {
            cm_fatal(1, "active message of %zu bytes: out of memory", length);
        }
        memcpy(copy, data, length);
        am->fn(am->arg, (int)hdr.src, copy, length);
        free(copy);
        return UCS_OK;
    }
    am->fn(am->arg, (int)hdr.src, data, length);
    return UCS_OK;
}

cm_status_t cm_rma_am_set_handler(cm_rma_t *rma, unsigned id, cm_rma_am_handler_t fn, void *arg,
                                  const char *name)
{
    ucp_am_handler_param_t hp = {0};
    ucs_status_t st;

    if (id >= CM_RMA_AM_MAX_ID) {
        return CM_ERR_INVALID;
    }
    rma->am[id].rma = rma;
    rma->am[id].fn  = fn;
    rma->am[id].arg = arg;
    rma->am[id].name = name;
    rma->am[id].request = false;
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    hp.id         = id;
    hp.cb         = cm_rma_am_recv;
    hp.arg        = &rma->am[id];
    hp.flags      = UCP_AM_FLAG_WHOLE_MSG;
    st = ucp_worker_set_am_recv_handler(rma->worker, &hp);
    if (st != UCS_OK) {
        cm_error("registering active message handler %u: %s", id, ucs_status_string(st));
        return CM_ERR_TRANSPORT;
    }
    return CM_OK;
}

cm_status_t cm_rma_am_set_request(cm_rma_t *rma, unsigned id)
{
    if (id >= CM_RMA_AM_MAX_ID || rma->am[id].fn == NULL) {
        return CM_ERR_INVALID;
    }
    rma->am[id].request = true;
    return CM_OK;
}

static void cm_rma_am_count(cm_rma_t *rma, int pe, size_t len)
{
    cm_rma_count_off(rma, pe, len);
    atomic_fetch_add_explicit(&rma->am_sent, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&rma->am_bytes_sent, len, memory_order_relaxed);
}

cm_status_t cm_rma_am_send(cm_rma_t *rma, int pe, unsigned id, const void *data, size_t len)
{
    ucp_request_param_t param = {0};
    cm_rma_am_hdr_t hdr;
    cm_status_t status;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_AM_SEND_FLAG_EAGER;
    /* The injected delays are the target's to wait for (its handler starts when the message is
     * due): the sender pays its overhead only, as with a posted message. */
    cm_rma_am_stamp(rma, pe, &hdr, cm_rma_delay_message_begin(rma, pe, len));
    cm_rma_am_count(rma, pe, len);
    status = cm_rma_req_wait(rma, ucp_am_send_nbx(rma->eps[pe], id, &hdr, sizeof(hdr), data, len,
                                                  &param), "active message", pe);
    cm_rma_bell_ring(rma, pe);
    return status;
}

/* A posted message: header and data live here until UCX is done with them. */
typedef struct {
    cm_rma_t        *rma;
    int             pe;
    cm_rma_am_hdr_t hdr;
    char            data[];
} cm_rma_am_block_t;

/* A queued message went out (in our progress, once the peer made room): its doorbell. */
static void cm_rma_am_post_done(void *request, ucs_status_t status, void *user_data)
{
    cm_rma_am_block_t *b = user_data;

    if (status != UCS_OK) {
        cm_error("posted active message failed: %s", ucs_status_string(status));
    } else {
        cm_rma_bell_ring(b->rma, b->pe);
    }
    free(b);
    ucp_request_free(request);
}

cm_status_t cm_rma_am_post(cm_rma_t *rma, int pe, unsigned id, const void *data, size_t len)
{
    ucp_request_param_t param = {0};
    cm_rma_am_block_t *b = malloc(sizeof(*b) + len);
    ucs_status_ptr_t req;
    ucs_status_t st;

    if (b == NULL) {
        cm_error("active message of %zu bytes: out of memory", len);
        return CM_ERR_NO_MEMORY;
    }
    b->rma     = rma;
    b->pe      = pe;
    cm_rma_am_stamp(rma, pe, &b->hdr, cm_rma_delay_message_begin(rma, pe, len));
    if (len != 0) {
        memcpy(b->data, data, len); /* data may be NULL then */
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.flags        = UCP_AM_SEND_FLAG_EAGER;
    param.cb.send      = cm_rma_am_post_done;
    param.user_data    = b;
    cm_rma_am_count(rma, pe, len);
    req = ucp_am_send_nbx(rma->eps[pe], id, &b->hdr, sizeof(b->hdr), b->data, len, &param);
    if (UCS_PTR_IS_ERR(req)) {
        free(b);
        return cm_rma_failed(rma, "an active message", pe, UCS_PTR_STATUS(req));
    }
    if (req == NULL) {
        free(b); /* completed at once; the callback is not called */
        cm_rma_bell_ring(rma, pe);
        return CM_OK;
    }
    atomic_fetch_add_explicit(&rma->am_queued, 1, memory_order_relaxed);
    if (rma->thread_running && !pthread_equal(pthread_self(), rma->thread)) {
        /* Queued (the peer's FIFO is full) while the progress thread may have
           armed already: wake it, or the message waits for the next message
           in or our next library call. Its next arm sees the queued send. */
        st = ucp_worker_signal(rma->worker);
        if (st != UCS_OK) {
            cm_warn("cannot wake the progress thread: %s", ucs_status_string(st));
        }
    }
    return CM_OK;
}
