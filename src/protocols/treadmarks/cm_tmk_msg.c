/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TreadMarks messages: posting them (counted by type), keeping one for the application
 * thread, the ones that carry intervals; waiting in the library with the protocol mutex let
 * go; and the dispatch of every message, from UCX progress or from the queue that the
 * mutex's holder serves (see "Concurrency" in cm_treadmarks.c).
 */
#define _GNU_SOURCE
#include "config.h"
#include "util/cm_log.h"
#include "util/cm_time.h"
#include "src/protocols/treadmarks/cm_tmk_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- messages ---------------------------------------------------------------- */

/* CM_TRACE: a message's type and its first word (the page or lock it is about). */
static uint64_t cm_tmk_trace_obj(int type, const void *data, size_t len)
{
    uint32_t w = 0;

    if (len >= sizeof(w)) {
        memcpy(&w, data, sizeof(w));
    }
    return ((uint64_t)w << 8) | (uint64_t)(type & 0xff);
}

cm_status_t cm_tmk_post(int pe, int type, const void *data, size_t len)
{
    cm_tmk.st.msgs++;
    cm_tmk.st.msg_bytes += len;
    switch (type) {
    case TM_LOCK_REQ: cm_tmk.st.msgs_lock_req++; break;
    case TM_LOCK_FWD: cm_tmk.st.msgs_lock_fwd++; break;
    case TM_LOCK_GRANT: cm_tmk.st.msgs_lock_grant++; cm_tmk.st.msg_bytes_grant += len; break;
    case TM_BAR_ARRIVE: cm_tmk.st.msgs_bar_arrive++; cm_tmk.st.msg_bytes_barrier += len; break;
    case TM_BAR_DEPART: cm_tmk.st.msgs_bar_depart++; cm_tmk.st.msg_bytes_barrier += len; break;
    case TM_DIFF_REQ: cm_tmk.st.msgs_diff_req++; break;
    case TM_DIFF_REPLY: cm_tmk.st.msgs_diff_reply++; cm_tmk.st.msg_bytes_diff += len; break;
    case TM_PAGE_REQ: cm_tmk.st.msgs_page_req++; break;
    case TM_PAGE_REPLY: cm_tmk.st.msgs_page_reply++; cm_tmk.st.msg_bytes_page += len; break;
    default: break;
    }
    {
        uint32_t seq = atomic_fetch_add_explicit(&cm_tmk.tr_sent[pe], 1, memory_order_relaxed) + 1;
        if (__builtin_expect(cm_trace_on, 0)) {
            cm_trace_emit(CM_TRACE_MSG_SEND, cm_trace_now(), 0, cm_tmk_trace_obj(type, data, len), pe,
                          (uint32_t)len, seq);
        }
    }
    return cm_rma_am_post(cm_tmk.rma, pe, (unsigned)type, data, len);
}

/* Keeps a message: the queued one itself when there is one (*q then belongs to b), else a copy
 * of the transport's buffer, which is gone once the handler returns. */
static void tm_keep(cm_tmk_buf_t *b, const void *data, size_t len, cm_tmk_msg_t **q)
{
    if (*q != NULL) {
        b->mem  = *q;
        b->data = (*q)->data;
        *q = NULL;
    } else {
        b->mem = malloc(len ? len : 1);
        if (b->mem == NULL) {
            cm_fatal(1, "treadmarks: out of memory for a %zu-byte message", len);
        }
        memcpy(b->mem, data, len);
        b->data = b->mem;
    }
    b->len = len;
}

void cm_tmk_drop(cm_tmk_buf_t *b)
{
    free(b->mem);
    b->mem  = NULL;
    b->data = NULL;
    b->len  = 0;
}

/* ---- messages that carry intervals ------------------------------------------------------ */

/* A message being built: a header, then packed intervals. */
typedef struct {
    char   *buf;
    size_t len, cap;
    uint32_t count;
} tm_pack_t;

static cm_status_t tm_pack_one(const cm_tmk_interval_t *iv, void *arg)
{
    tm_pack_t *pk = arg;
    size_t need = cm_tmk_iv_wire_size(iv, cm_tmk.np);
    if (pk->len + need > pk->cap) {
        size_t cap = 2 * (pk->len + need);
        char *n = realloc(pk->buf, cap);
        if (n == NULL) {
            return CM_ERR_NO_MEMORY;
        }
        pk->buf = n;
        pk->cap = cap;
    }
    pk->len += cm_tmk_iv_pack(iv, cm_tmk.np, pk->buf + pk->len);
    pk->count++;
    return CM_OK;
}

/*
 * Messages that carry intervals (lock grant, barrier arrival and departure):
 * {id, count, flag, vt[nprocs]}, then the intervals not covered by vt_a.
 */
static size_t tm_ivmsg_hdr(void)
{
    return (3 + (size_t)cm_tmk.np) * sizeof(uint32_t);
}

cm_status_t cm_tmk_send_intervals(int pe, int type, uint32_t id, uint32_t flag,
                                  const uint32_t *vt_a)
{
    tm_pack_t pk = {.cap = tm_ivmsg_hdr() + 4096, .len = tm_ivmsg_hdr(), .count = 0};
    cm_status_t status;
    uint32_t *h;

    pk.buf = malloc(pk.cap);
    if (pk.buf == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    status = cm_tmk_store_send_set(&cm_tmk.store, vt_a, tm_pack_one, &pk);
    if (status != CM_OK) {
        goto out_free;
    }
    h    = (uint32_t *)pk.buf;
    h[0] = id;
    h[1] = pk.count;
    h[2] = flag;
    memcpy(h + 3, cm_tmk.store.vt, (size_t)cm_tmk.np * sizeof(uint32_t));
    status = cm_tmk_post(pe, type, pk.buf, pk.len);
out_free:
    free(pk.buf);
    return status;
}

/* Takes in the intervals of a kept interval-carrying message. */
cm_status_t cm_tmk_take_intervals(const cm_tmk_buf_t *b)
{
    return cm_tmk_incorporate((const char *)b->data + tm_ivmsg_hdr(), b->len - tm_ivmsg_hdr(),
                              cm_tmk_ivmsg_header(b)[1]);
}

/* ---- waiting (the application thread, never holding the mutex) ------------------- */

static void tm_handle(int type, int src, const char *data, size_t len, cm_tmk_msg_t **q,
                      uint32_t seq, uint64_t t_arrived);

/* Serves queued messages if the mutex is free; its holder serves them otherwise. */
static void tm_drain(void)
{
    for (;;) {
        cm_tmk_msg_t *m;
        pthread_mutex_lock(&cm_tmk.qmu);
        bool empty = (cm_tmk.qhead == NULL);
        pthread_mutex_unlock(&cm_tmk.qmu);
        if (empty || pthread_mutex_trylock(&cm_tmk.mu) != 0) {
            return;
        }
        for (;;) {
            pthread_mutex_lock(&cm_tmk.qmu);
            m = cm_tmk.qhead;
            if (m != NULL) {
                cm_tmk.qhead = m->next;
                if (cm_tmk.qhead == NULL) {
                    cm_tmk.qtail = NULL;
                }
            }
            pthread_mutex_unlock(&cm_tmk.qmu);
            if (m == NULL) {
                break;
            }
            tm_handle(m->type, m->src, m->data, m->len, &m, m->seq, m->t_arrived);
            free(m); /* NULL if tm_handle kept it */
        }
        pthread_mutex_unlock(&cm_tmk.mu);
    }
}

void cm_tmk_mu_lock(void)
{
    pthread_mutex_lock(&cm_tmk.mu);
}

void cm_tmk_mu_unlock(void)
{
    pthread_mutex_unlock(&cm_tmk.mu);
    tm_drain();
}

typedef struct {
    atomic_int *v;
    int        target;
    bool       down;
} tm_wait_t;

/* Serves what was queued meanwhile; the counters change in handlers (cm_rma_wait_until). */
static bool tm_wait_ready(void *arg)
{
    tm_wait_t *w = arg;

    tm_drain();
    return w->down ? atomic_load(w->v) <= w->target : atomic_load(w->v) >= w->target;
}

/* Releases the mutex and waits until *v >= target (or, for cm_tmk_wait_zero, *v <= 0). */
static void tm_wait(atomic_int *v, int target, bool down, const cm_rma_why_t *why)
{
    tm_wait_t w = {v, target, down};

    cm_tmk_mu_unlock();
    cm_rma_wait_events(cm_tmk.rma, tm_wait_ready, &w, why);
    cm_tmk_mu_lock();
}

void cm_tmk_wait_ge(atomic_int *v, int target, const cm_rma_why_t *why)
{
    tm_wait(v, target, false, why);
}

void cm_tmk_wait_zero(atomic_int *v, const cm_rma_why_t *why)
{
    tm_wait(v, 0, true, why);
}

/* ---- request handling ------------------------------------------------------------------ */

/* q: the queued message data is in, or NULL when data is the transport's buffer. */
static void tm_handle(int type, int src, const char *data, size_t len, cm_tmk_msg_t **q,
                      uint32_t seq, uint64_t t_arrived)
{
    const uint64_t t0 = cm_trace_begin(), what = t0 ? cm_tmk_trace_obj(type, data, len) : 0;
    const uint32_t *d = (const uint32_t *)data;
    bool interrupt = !pthread_equal(pthread_self(), cm_tmk.app_thread);
    /* Served by the progress thread while the application computed: an interrupt. Served by
     * the application thread, it is part of the wait it was in. */
    uint64_t *outer = interrupt ? cm_stats_phase_enter(&cm_tmk.st.handler_ns) : NULL, *copy;
    const cm_tmk_geom_t geom = {cm_tmk.np, cm_tmk.nlocks, cm_tmk.npages, cm_tmk.ps};
    cm_status_t status;

    if (cm_tmk.closed) {
        /* Every request is answered before the barrier in tm_fini ends: none may come after. */
        cm_fatal(1, "treadmarks: a message (type %d, %zu bytes) from rank %d after finalize", type,
                 len, src);
    }
    if (cm_tmk_wire_check(&geom, type, data, len) != CM_OK) {
        /* Nothing acts on it: a peer depends on the answer, so the job ends here. */
        cm_fatal(1, "treadmarks: a malformed message (type %d, %zu bytes) from rank %d", type,
                 len, src);
    }
    /* The form is checked: every handler below may index with the message's numbers. */
    status = CM_OK;
    switch (type) {
    case TM_LOCK_REQ:
        status = cm_tmk_lock_manage(d[0], d[1], d + 2, data, len);
        break;
    case TM_LOCK_FWD:
        status = cm_tmk_lock_request_here(d[0], d[1], d + 2);
        break;
    case TM_LOCK_GRANT:
        tm_keep(&cm_tmk.grant, data, len, q);
        atomic_store(&cm_tmk.granted, 1);
        break;
    case TM_BAR_ARRIVE:
        tm_keep(&cm_tmk.arrivals[src], data, len, q);
        atomic_fetch_add(&cm_tmk.narrived, 1);
        break;
    case TM_BAR_DEPART:
        tm_keep(&cm_tmk.depart, data, len, q);
        atomic_store(&cm_tmk.departed, 1);
        break;
    case TM_DIFF_REQ:
        status = cm_tmk_serve_diffs(src, d);
        break;
    case TM_DIFF_REPLY:
        status = cm_tmk_take_diffs(d);
        atomic_fetch_sub(&cm_tmk.pending, 1);
        break;
    case TM_PAGE_REQ:
        status = cm_tmk_serve_page(src, d);
        break;
    case TM_PAGE_REPLY:
        copy = cm_stats_phase_enter(&cm_tmk.st.page_copy_ns);
        memcpy(cm_tmk_net(d[0]), data + 2 * sizeof(uint32_t), cm_tmk.ps);
        cm_stats_phase_leave(copy);
        atomic_fetch_sub(&cm_tmk.pending, 1);
        break;
    case TM_GC_DONE:
        atomic_fetch_add(&cm_tmk.gc_done, 1);
        break;
    case TM_GC_GO:
        atomic_store(&cm_tmk.gc_go, 1);
        break;
    }
    if (status != CM_OK) {
        /* A peer depends on the answer: end the job rather than leave it waiting. */
        cm_fatal(1, "treadmarks: message type %d from rank %d (%zu bytes): %s", type, src, len,
                 cm_status_string(status));
    }
    if (interrupt) {
        cm_tmk.st.interrupts++;
        cm_stats_phase_leave(outer);
    }
    if (t0 != 0) {
        /* Queued behind the protocol's mutex, then served: both from this side. */
        if (t_arrived != 0 && t_arrived < t0) {
            cm_trace_emit(CM_TRACE_MSG_QUEUE, t_arrived, t0 - t_arrived, what, src, (uint32_t)len,
                          seq);
        }
        cm_trace_emit(CM_TRACE_MSG_SERVE, t0, cm_trace_now() - t0, what, src, (uint32_t)len, seq);
    }
}

/*
 * UCX active-message callback. With nothing queued and the mutex free, the message is served
 * from the transport's buffer; otherwise a copy is queued for the mutex holder (callbacks run
 * one at a time, so nothing can be queued behind our back and overtaken).
 */
void cm_tmk_am_recv(void *arg, int src, const void *data, size_t len)
{
    cm_tmk_msg_t *m, *none = NULL;
    const uint64_t t_arrived = cm_trace_begin();
    /* Callbacks run one at a time: this is the order in which src's messages arrived. */
    const uint32_t seq = ++cm_tmk.tr_recv[src];
    bool empty;

    pthread_mutex_lock(&cm_tmk.qmu);
    empty = (cm_tmk.qhead == NULL);
    pthread_mutex_unlock(&cm_tmk.qmu);
    if (empty && pthread_mutex_trylock(&cm_tmk.mu) == 0) {
        tm_handle((int)(intptr_t)arg, src, data, len, &none, seq, 0);
        cm_tmk_mu_unlock();
        return;
    }
    m = malloc(sizeof(*m) + len);

    if (m == NULL) {
        cm_fatal(1, "treadmarks: out of memory for an incoming message");
    }
    m->next = NULL;
    m->type = (int)(intptr_t)arg;
    m->src  = src;
    m->len  = len;
    m->seq  = seq;
    m->t_arrived = t_arrived;
    memcpy(m->data, data, len);
    pthread_mutex_lock(&cm_tmk.qmu);
    if (cm_tmk.qtail != NULL) {
        cm_tmk.qtail->next = m;
    } else {
        cm_tmk.qhead = m;
    }
    cm_tmk.qtail = m;
    pthread_mutex_unlock(&cm_tmk.qmu);
    tm_drain();
}
