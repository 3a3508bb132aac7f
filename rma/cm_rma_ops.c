/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Data movement of the one-sided layer: put and get (through UCX, or as
 * copies where a peer's memory is directly mapped), atomics, fence, flush and
 * barrier; the completion of UCX requests; the realization of injected delays
 * (cm_rma_delay.h); the operands non-blocking operations leave with UCX; and
 * the counters. See cm_rma.h for the contract.
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_rma_int.h"
#include "util/cm_log.h"
#include "util/cm_time.h"

#include <sched.h>
#include <stdatomic.h>
#include <string.h>

/* ---- completion -------------------------------------------------------- */

cm_status_t cm_rma_req_wait(cm_rma_t *rma, ucs_status_ptr_t req, const char *op, int pe)
{
    ucs_status_t st;
    unsigned idle = 0;

    if (req == NULL) {
        return CM_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        st = UCS_PTR_STATUS(req);
        goto err;
    }
    if ((st = ucp_request_check_status(req)) != UCS_INPROGRESS) {
        goto done;
    }
    cm_rma_thread_waits++;
    cm_rma_why_push(rma, CM_RMA_WHY("the completion of %s", op, 0, 0, pe));
    cm_rma_poll_begin(rma);
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        if (ucp_worker_progress(rma->worker) != 0) {
            idle = 0;
        } else {
            cm_rma_idle(&idle);
        }
    }
    cm_rma_poll_end(rma);
    cm_rma_why_pop(rma);
done:
    ucp_request_free(req);
    if (st == UCS_OK) {
        return CM_OK;
    }
err:
    return cm_rma_failed(rma, op, pe, st);
}

cm_status_t cm_rma_failed(cm_rma_t *rma, const char *op, int pe, ucs_status_t st)
{
    char what[256];

    if (pe < 0) {
        cm_error("%s failed: %s", op, ucs_status_string(st));
        return CM_ERR_TRANSPORT;
    }
    switch (st) {
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_TIMED_OUT:
        /* The peer is gone: say so in the heartbeats' words, once, and end the job here. */
        snprintf(what, sizeof(what), "%s to it failed (%s)", op, ucs_status_string(st));
        cm_heartbeat_lost_peer(rma->heartbeat, pe, what);
    default:
        cm_error("%s to rank %d failed: %s", op, pe, ucs_status_string(st));
        return CM_ERR_TRANSPORT;
    }
}

/* Non-blocking-implicit: the request completes by the next flush. */
cm_status_t cm_rma_req_release(cm_rma_t *rma, ucs_status_ptr_t req, const char *op, int pe)
{
    if (UCS_PTR_IS_ERR(req)) {
        return cm_rma_failed(rma, op, pe, UCS_PTR_STATUS(req));
    }
    if (req != NULL) {
        ucp_request_free(req);
    }
    return CM_OK;
}

/* ---- delay injection ---------------------------------------------------- */

/* (cm_rma_delay_begin and cm_rma_delay_defer, on every operation's path, are inline in
 * cm_rma_int.h.) */

void cm_rma_delay_pause(cm_rma_t *rma, bool pause)
{
    rma->delay.enabled = !pause && cm_rma_delay_any(&rma->delay);
}

uint64_t cm_rma_delay_expect(cm_rma_t *rma, int pe, cm_rma_delay_kind_t kind, size_t bytes)
{
    const cm_rma_delay_t *d = &rma->delay;
    uint64_t one = d->overhead_ns + cm_rma_delay_wire(d, bytes);

    switch (kind) {
    case CM_RMA_DELAY_OP:
        return one + d->latency_ns + rma->irq_ns[pe];
    case CM_RMA_DELAY_ROUND_TRIP:
        return 2 * one + 2 * (d->latency_ns / 2) + d->interrupt_ns;
    }
    return 0;
}

void cm_rma_delay_until(cm_rma_t *rma, uint64_t ready)
{
    uint64_t now, start;

    if (ready == 0) {
        return; /* no delay injected: do not even read the clock */
    }
    now = start = cm_time_ns();
    cm_rma_poll_begin(rma);
    while (now < ready) {
        /* Keep serving peers while the injected latency elapses. */
        ucp_worker_progress(rma->worker);
        if (ready - now > 20000) {
            sched_yield();
        }
        now = cm_time_ns();
    }
    cm_rma_poll_end(rma);
    CM_RMA_COUNT(rma->stats.delay_ns, now - start);
}

/*
 * Keeps an operand (or a reply nobody reads) alive until a flush has completed
 * the operation: a ring, flushed before it comes round if no flush has since.
 */
static uint64_t *cm_rma_stash(cm_rma_t *rma, uint64_t value, cm_status_t *status)
{
    *status = CM_OK;
    if (rma->stash_used == CM_RMA_STASH) {
        /* Round again once what read the operands is complete: flushed since, or now. (Not
         * sooner: the reply slot of the operation being issued may be the last one taken.) */
        if (!cm_rma_ucx_flushed_to(rma, rma->stash_seq)) {
            *status = cm_rma_flush_all(rma);
        }
        rma->stash_used = 0;
    }
    rma->stash[rma->stash_used] = value;
    return &rma->stash[rma->stash_used++];
}

/* ---- data movement ------------------------------------------------------ */

/*
 * Completes every operation issued through UCX (so every stashed operand has
 * been read): flush_all, and the first direct copy after a fence. A copy to or
 * from directly mapped memory happens when it is issued, while UCX may still
 * hold an earlier operation (e.g. an early atomic between two processes, until
 * the target progresses). A directory get fenced behind the entry lock's swap
 * once read the entry before the swap had taken the lock, and the update of
 * the holder was lost.
 */
cm_status_t cm_rma_ucx_complete(cm_rma_t *rma, const char *what)
{
    ucp_request_param_t param = {0};
    uint64_t upto = __atomic_load_n(&rma->ucx_issued, __ATOMIC_SEQ_CST);
    cm_status_t status;

    status = cm_rma_req_wait(rma, ucp_worker_flush_nbx(rma->worker, &param), what, -1);
    if (status == CM_OK) {
        cm_rma_seq_raise(&rma->ucx_flushed, upto);
    }
    return status;
}

/*
 * Before an operation: what a fence asked for. A direct copy always waits for the UCX
 * operations issued before the fence; a UCX operation only where UCX's own fence does not
 * order the lanes (strong_fence).
 */
static inline cm_status_t cm_rma_fence_settle(cm_rma_t *rma, bool direct)
{
    if ((direct || rma->strong_fence) &&
        !cm_rma_ucx_flushed_to(rma, __atomic_load_n(&rma->ucx_fenced, __ATOMIC_SEQ_CST))) {
        return cm_rma_ucx_complete(rma, "fence");
    }
    return CM_OK;
}

/*
 * Put or get, blocking or non-blocking-implicit. The injected delay of a get
 * is waited for before it returns; that of a put is due at the flush that
 * makes it visible, as is that of any *_nbi operation.
 */
static inline cm_status_t cm_rma_xfer(cm_rma_t *rma, int pe, void *local, const void *addr,
                                      size_t len, bool put, bool blocking)
{
    ucp_request_param_t param = {0};
    cm_rma_seg_t *seg = cm_rma_seg_find(rma, addr, len);
    const char *what = put ? "put" : "get";
    ucs_status_ptr_t req;
    uint64_t ready;
    cm_status_t status;

    if (seg == NULL) {
        return CM_ERR_INVALID;
    }
    ready = cm_rma_delay_begin(rma, pe, len);
    if (seg->rbase[pe] != NULL) {
        if ((status = cm_rma_fence_settle(rma, true)) != CM_OK) {
            return status;
        }
        /*
         * Directly mapped node-local memory (our memfd mapping, or UCX's rkey_ptr
         * of an atomic segment): the copy is the transfer. Newer UCX serves
         * node-local gets through cma (a system call, 1.5 us per 4 KiB on a
         * 16-core host) even where the memory is mappable. Atomics stay with UCX,
         * which performs them with CPU atomics on the same mapping.
         */
        char *remote = seg->rbase[pe] + ((uintptr_t)addr - seg->base);
        if (put) {
            CM_RMA_COUNT(rma->stats.puts, 1);
            cm_rma_count_off(rma, pe, len);
            CM_RMA_COUNT(rma->stats.bytes_put, len);
            cm_rma_copy_once(remote, local, len);
            if (ready != 0) {
                cm_rma_delay_defer(rma, pe, ready);
            }
        } else {
            CM_RMA_COUNT(rma->stats.gets, 1);
            cm_rma_count_off(rma, pe, len);
            CM_RMA_COUNT(rma->stats.bytes_got, len);
            memcpy(local, remote, len);
            if (blocking) {
                cm_rma_delay_until(rma, ready);
            } else if (ready != 0) {
                cm_rma_delay_defer(rma, pe, ready);
            }
        }
        return CM_OK;
    }
    if ((status = cm_rma_fence_settle(rma, false)) != CM_OK) {
        return status;
    }
    if (put) {
        CM_RMA_COUNT(rma->stats.puts, 1);
        cm_rma_count_off(rma, pe, len);
        CM_RMA_COUNT(rma->stats.bytes_put, len);
        req = ucp_put_nbx(rma->eps[pe], local, len, (uint64_t)(uintptr_t)addr, seg->rkeys[pe],
                          &param);
    } else {
        CM_RMA_COUNT(rma->stats.gets, 1);
        cm_rma_count_off(rma, pe, len);
        CM_RMA_COUNT(rma->stats.bytes_got, len);
        req = ucp_get_nbx(rma->eps[pe], local, len, (uint64_t)(uintptr_t)addr, seg->rkeys[pe],
                          &param);
    }
    if (!blocking) {
        cm_rma_ucx_count(rma); /* non-blocking: complete at a flush */
        if (ready != 0) {
            cm_rma_delay_defer(rma, pe, ready);
        }
        return cm_rma_req_release(rma, req, what, pe);
    }
    status = cm_rma_req_wait(rma, req, what, pe);
    if (put) {
        cm_rma_ucx_count(rma); /* a put completes only locally here: at the target at a flush */
    }
    if (put && ready != 0) {
        cm_rma_delay_defer(rma, pe, ready);
    } else {
        cm_rma_delay_until(rma, cm_rma_delay_done(rma, pe, ready));
    }
    return status;
}

cm_status_t cm_rma_put(cm_rma_t *rma, int pe, void *addr, const void *src, size_t len)
{
    return cm_rma_xfer(rma, pe, (void *)src, addr, len, true, true);
}

cm_status_t cm_rma_put_nbi(cm_rma_t *rma, int pe, void *addr, const void *src, size_t len)
{
    return cm_rma_xfer(rma, pe, (void *)src, addr, len, true, false);
}

cm_status_t cm_rma_put_u64_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value)
{
    cm_rma_seg_t *seg = cm_rma_seg_find(rma, addr, sizeof(uint64_t));
    uint64_t ready, *reply;
    cm_status_t status;

    if (seg == NULL || ((uintptr_t)addr & 7) != 0) {
        return CM_ERR_INVALID;
    }
    if (seg->rbase[pe] == NULL) {
        /*
         * Through UCX the target applies a put with memcpy, possibly in its
         * progress thread while its application thread polls the word: the
         * double store of cm_rma_copy_once's comment again. An atomic swap
         * lands as one store.
         */
        reply = cm_rma_stash(rma, 0, &status);
        if (status != CM_OK) {
            return status;
        }
        return cm_rma_swap_nbi(rma, pe, addr, value, reply);
    }
    ready = cm_rma_delay_begin(rma, pe, sizeof(uint64_t));
    if (ready != 0) {
        cm_rma_delay_defer(rma, pe, ready);
    }
    CM_RMA_COUNT(rma->stats.puts, 1);
    cm_rma_count_off(rma, pe, sizeof(uint64_t));
    CM_RMA_COUNT(rma->stats.bytes_put, sizeof(uint64_t));
    if ((status = cm_rma_fence_settle(rma, true)) != CM_OK) {
        return status;
    }
    __atomic_store_n((uint64_t *)(void *)(seg->rbase[pe] + ((uintptr_t)addr - seg->base)), value,
                     __ATOMIC_RELAXED);
    cm_rma_wake_peer(rma, pe); /* it may sleep on this word */
    return CM_OK;
}

cm_status_t cm_rma_get(cm_rma_t *rma, int pe, void *dst, const void *addr, size_t len)
{
    return cm_rma_xfer(rma, pe, dst, addr, len, false, true);
}

cm_status_t cm_rma_get_nbi(cm_rma_t *rma, int pe, void *dst, const void *addr, size_t len)
{
    return cm_rma_xfer(rma, pe, dst, addr, len, false, false);
}

/*
 * An atomic on our own word where every atomic on it is a CPU atomic (self_amo_cpu): done
 * here, at once, like a copy to directly mapped memory. Through UCX it goes to the self
 * endpoint, which with UCX's device atomics (UCX_ATOMIC_MODE=device, soft-RoCE) emulates it
 * with a message to ourselves: 2-5 times the cost (cm_bench --target 0). Where a NIC
 * executes atomics, ours go through it like everyone's (cm_rma_ucx_cpu_atomics).
 */
static inline bool cm_rma_atomic_here(cm_rma_t *rma, int pe)
{
    return pe == rma->rank && rma->self_amo_cpu;
}

/* UCX's operations (ucp.h, "Atomic Operations Semantic") as CPU atomics, after what a fence
 * asked for; CSWAP stores `swap` where the word equals `operand`. The old value to *old. */
static cm_status_t cm_rma_atomic_cpu(cm_rma_t *rma, ucp_atomic_op_t op, uint64_t *addr,
                                     uint64_t operand, uint64_t swap, uint64_t *old)
{
    uint64_t expected = operand;
    cm_status_t status = cm_rma_fence_settle(rma, true);

    if (status != CM_OK) {
        return status;
    }
    if (!rma->thread_running) {
        /* Through UCX this waited and so served peers; without a progress thread a process
         * that only polls its own lock word (a lock's home) would otherwise never serve the
         * peers queued behind it (litmus msgpass hung at 4 on TCP, CM_PROGRESS_THREAD=off). */
        ucp_worker_progress(rma->worker);
    }
    CM_RMA_COUNT(rma->stats.atomics, 1);
    switch (op) {
    case UCP_ATOMIC_OP_SWAP:
        *old = __atomic_exchange_n(addr, operand, __ATOMIC_SEQ_CST);
        break;
    case UCP_ATOMIC_OP_CSWAP:
        __atomic_compare_exchange_n(addr, &expected, swap, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        *old = expected;
        break;
    default: /* the only others issued: ADD */
        *old = __atomic_fetch_add(addr, operand, __ATOMIC_SEQ_CST);
        break;
    }
    return CM_OK;
}

/*
 * A fetching atomic: operand in `value`, old value out in *result. For CSWAP,
 * UCX takes the compare value as the operand and the new value in the reply
 * buffer (ucp.h, "Atomic Operations Semantic").
 */
static cm_status_t cm_rma_atomic_fetch(cm_rma_t *rma, ucp_atomic_op_t op, const char *what, int pe,
                                       uint64_t *addr, uint64_t value, uint64_t *result)
{
    ucp_request_param_t param = {0};
    cm_rma_seg_t *seg = cm_rma_seg_find(rma, addr, sizeof(uint64_t));
    uint64_t ready;
    cm_status_t status;

    if (seg == NULL) {
        return CM_ERR_INVALID;
    }
    if (seg->kind != CM_RMA_SEG_ATOMIC) {
        cm_error("%s on %s: atomics need a CM_RMA_SEG_ATOMIC segment", what, seg->name);
        return CM_ERR_UNSUPPORTED;
    }
    if (cm_rma_atomic_here(rma, pe)) {
        return cm_rma_atomic_cpu(rma, op, addr, value, *result, result);
    }
    if ((status = cm_rma_fence_settle(rma, false)) != CM_OK) {
        return status;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    param.reply_buffer = result;
    ready  = cm_rma_delay_begin(rma, pe, sizeof(uint64_t));
    status = cm_rma_req_wait(rma, ucp_atomic_op_nbx(rma->eps[pe], op, &value, 1,
                                                    (uint64_t)(uintptr_t)addr, seg->rkeys[pe],
                                                    &param), what, pe);
    CM_RMA_COUNT(rma->stats.atomics, 1);
    cm_rma_count_off(rma, pe, sizeof(uint64_t));
    cm_rma_delay_until(rma, cm_rma_delay_done(rma, pe, ready));
    return status;
}

cm_status_t cm_rma_swap(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old)
{
    return cm_rma_atomic_fetch(rma, UCP_ATOMIC_OP_SWAP, "atomic swap", pe, addr, value, old);
}

cm_status_t cm_rma_cswap(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t compare, uint64_t value,
                         uint64_t *old)
{
    *old = value;
    return cm_rma_atomic_fetch(rma, UCP_ATOMIC_OP_CSWAP, "atomic compare-and-swap", pe, addr,
                               compare, old);
}

cm_status_t cm_rma_fadd(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old)
{
    return cm_rma_atomic_fetch(rma, UCP_ATOMIC_OP_ADD, "atomic fetch-and-add", pe, addr, value, old);
}

/* A non-fetching or implicitly completed atomic: done by the next flush; old (if not NULL) is
 * written by then. The operand stays with UCX in the stash until that flush. */
static cm_status_t cm_rma_atomic_nbi(cm_rma_t *rma, ucp_atomic_op_t op, const char *what, int pe,
                                     uint64_t *addr, uint64_t value, uint64_t *old)
{
    ucp_request_param_t param = {0};
    cm_rma_seg_t *seg = cm_rma_seg_find(rma, addr, sizeof(uint64_t));
    uint64_t ready, *operand;
    cm_status_t status;

    if (seg == NULL) {
        return CM_ERR_INVALID;
    }
    if (seg->kind != CM_RMA_SEG_ATOMIC) {
        cm_error("%s on %s: atomics need a CM_RMA_SEG_ATOMIC segment", what, seg->name);
        return CM_ERR_UNSUPPORTED;
    }
    if (cm_rma_atomic_here(rma, pe)) {
        uint64_t was;
        /* CSWAP: *old holds the value to store (cm_rma_cswap_nbi). */
        return cm_rma_atomic_cpu(rma, op, addr, value, (old != NULL) ? *old : 0,
                                 (old != NULL) ? old : &was);
    }
    if ((status = cm_rma_fence_settle(rma, false)) != CM_OK) {
        return status;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    if (old != NULL) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.reply_buffer  = old;
    }
    operand = cm_rma_stash(rma, value, &status);
    if (status != CM_OK) {
        return status;
    }
    ready = cm_rma_delay_begin(rma, pe, sizeof(uint64_t));
    if (ready != 0) {
        cm_rma_delay_defer(rma, pe, ready);
    }
    CM_RMA_COUNT(rma->stats.atomics, 1);
    cm_rma_count_off(rma, pe, sizeof(uint64_t));
    status = cm_rma_req_release(rma, ucp_atomic_op_nbx(rma->eps[pe], op, operand, 1,
                                                  (uint64_t)(uintptr_t)addr, seg->rkeys[pe],
                                                  &param),
                                what, pe);
    rma->stash_seq = cm_rma_ucx_count(rma);
    return status;
}

cm_status_t cm_rma_fadd_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old)
{
    return cm_rma_atomic_nbi(rma, UCP_ATOMIC_OP_ADD, "fetch-and-add", pe, addr, value, old);
}

cm_status_t cm_rma_swap_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old)
{
    return cm_rma_atomic_nbi(rma, UCP_ATOMIC_OP_SWAP, "atomic swap", pe, addr, value, old);
}

cm_status_t cm_rma_signal_u64(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value,
                              uint64_t buf[2])
{
    ucp_request_param_t param = {0};
    cm_rma_seg_t *seg = cm_rma_seg_find(rma, addr, sizeof(uint64_t));

    if (seg == NULL || ((uintptr_t)addr & 7) != 0) {
        return CM_ERR_INVALID;
    }
    if (seg->rbase[pe] != NULL || cm_rma_atomic_here(rma, pe) || seg->kind != CM_RMA_SEG_ATOMIC ||
        rma->delay.enabled) {
        /* A store complete when issued; or injected delays, due at a flush as before. */
        return cm_rma_put_u64_nbi(rma, pe, addr, value);
    }
    /* A swap lands as one store (cm_rma_put_u64_nbi); its operand and reply are the caller's,
     * so it is neither stashed nor counted: no flush of ours waits for it. No fence settles
     * first: nothing orders a signal after the operations issued before it. */
    CM_RMA_COUNT(rma->stats.atomics, 1);
    cm_rma_count_off(rma, pe, sizeof(uint64_t));
    buf[0]             = value;
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    param.reply_buffer = &buf[1];
    return cm_rma_req_release(rma, ucp_atomic_op_nbx(rma->eps[pe], UCP_ATOMIC_OP_SWAP, &buf[0], 1,
                                                (uint64_t)(uintptr_t)addr, seg->rkeys[pe], &param),
                              "atomic swap (signal)", pe);
}

cm_status_t cm_rma_cswap_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t compare,
                             uint64_t value, uint64_t *old)
{
    *old = value; /* UCX's CSWAP: the compare value is the operand, the new one in the reply */
    return cm_rma_atomic_nbi(rma, UCP_ATOMIC_OP_CSWAP, "atomic compare-and-swap", pe, addr,
                             compare, old);
}

/* ---- fetches waited for alone (cm_rma.h) ---------------------------------- */

static cm_status_t cm_rma_fetch_issued(cm_rma_t *rma, ucs_status_ptr_t req, uint64_t ready,
                                       const char *what, int pe, cm_rma_fetch_t *f)
{
    if (UCS_PTR_IS_ERR(req)) {
        return cm_rma_failed(rma, what, pe, UCS_PTR_STATUS(req));
    }
    /* Counted like any other: a fence after it must know it is there (strong_fence). */
    cm_rma_ucx_count(rma);
    f->req   = req;
    f->ready = ready;
    f->what  = what;
    f->pe    = pe;
    return CM_OK;
}

cm_status_t cm_rma_get_fetch(cm_rma_t *rma, int pe, void *dst, const void *addr, size_t len,
                             cm_rma_fetch_t *f)
{
    ucp_request_param_t param = {0};
    cm_rma_seg_t *seg = cm_rma_seg_find(rma, addr, len);
    cm_status_t status;
    uint64_t ready;

    f->req   = NULL;
    f->ready = 0;
    if (seg == NULL) {
        return CM_ERR_INVALID;
    }
    if (seg->rbase[pe] != NULL) {
        return cm_rma_get(rma, pe, dst, addr, len); /* a copy: complete when issued */
    }
    if ((status = cm_rma_fence_settle(rma, false)) != CM_OK) {
        return status;
    }
    ready = cm_rma_delay_begin(rma, pe, len);
    CM_RMA_COUNT(rma->stats.gets, 1);
    cm_rma_count_off(rma, pe, len);
    CM_RMA_COUNT(rma->stats.bytes_got, len);
    return cm_rma_fetch_issued(rma,
                               ucp_get_nbx(rma->eps[pe], dst, len, (uint64_t)(uintptr_t)addr,
                                           seg->rkeys[pe], &param),
                               ready, "get", pe, f);
}

static cm_status_t cm_rma_atomic_fetch_nb(cm_rma_t *rma, ucp_atomic_op_t op, const char *what,
                                          int pe, uint64_t *addr, uint64_t value, uint64_t *old,
                                          cm_rma_fetch_t *f)
{
    ucp_request_param_t param = {0};
    cm_rma_seg_t *seg = cm_rma_seg_find(rma, addr, sizeof(uint64_t));
    cm_status_t status;
    uint64_t ready;

    f->req   = NULL;
    f->ready = 0;
    if (seg == NULL) {
        return CM_ERR_INVALID;
    }
    if (seg->kind != CM_RMA_SEG_ATOMIC || cm_rma_atomic_here(rma, pe)) {
        /* Done at once, or its error. */
        return cm_rma_atomic_fetch(rma, op, what, pe, addr, value, old);
    }
    if ((status = cm_rma_fence_settle(rma, false)) != CM_OK) {
        return status;
    }
    f->operand         = value;
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    param.reply_buffer = old;
    ready = cm_rma_delay_begin(rma, pe, sizeof(uint64_t));
    CM_RMA_COUNT(rma->stats.atomics, 1);
    cm_rma_count_off(rma, pe, sizeof(uint64_t));
    return cm_rma_fetch_issued(rma,
                               ucp_atomic_op_nbx(rma->eps[pe], op, &f->operand, 1,
                                                 (uint64_t)(uintptr_t)addr, seg->rkeys[pe],
                                                 &param),
                               ready, what, pe, f);
}

cm_status_t cm_rma_swap_fetch(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value,
                              uint64_t *old, cm_rma_fetch_t *f)
{
    return cm_rma_atomic_fetch_nb(rma, UCP_ATOMIC_OP_SWAP, "atomic swap", pe, addr, value, old, f);
}

cm_status_t cm_rma_fadd_fetch(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value,
                              uint64_t *old, cm_rma_fetch_t *f)
{
    return cm_rma_atomic_fetch_nb(rma, UCP_ATOMIC_OP_ADD, "atomic fetch-and-add", pe, addr, value,
                                  old, f);
}

cm_status_t cm_rma_cswap_fetch(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t compare,
                               uint64_t value, uint64_t *old, cm_rma_fetch_t *f)
{
    *old = value; /* UCX's CSWAP: the compare value is the operand, the new one in the reply */
    return cm_rma_atomic_fetch_nb(rma, UCP_ATOMIC_OP_CSWAP, "atomic compare-and-swap", pe, addr,
                                  compare, old, f);
}

cm_status_t cm_rma_fetch_wait(cm_rma_t *rma, cm_rma_fetch_t *f)
{
    cm_status_t status = CM_OK;

    if (f->req != NULL) {
        status = cm_rma_req_wait(rma, f->req, f->what, f->pe);
        f->req = NULL;
    }
    cm_rma_delay_until(rma, f->ready);
    f->ready = 0;
    return status;
}

cm_status_t cm_rma_fence(cm_rma_t *rma)
{
    ucs_status_t st;

    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    /* Copies issued before are done; UCX operations issued before are not, necessarily. */
    cm_rma_seq_raise(&rma->ucx_fenced, __atomic_load_n(&rma->ucx_issued, __ATOMIC_SEQ_CST));
    st = ucp_worker_fence(rma->worker);
    if (st != UCS_OK) {
        cm_error("fence failed: %s", ucs_status_string(st));
        return CM_ERR_TRANSPORT;
    }
    return CM_OK;
}

uint64_t cm_rma_issued(cm_rma_t *rma)
{
    return __atomic_load_n(&rma->ucx_issued, __ATOMIC_SEQ_CST);
}

bool cm_rma_ordered(cm_rma_t *rma, uint64_t mark)
{
    /* Copies and CPU atomics are complete when issued and not counted in the mark. */
    return __atomic_load_n(&rma->ucx_fenced, __ATOMIC_SEQ_CST) >= mark ||
           cm_rma_ucx_flushed_to(rma, mark);
}

cm_status_t cm_rma_add_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value)
{
    return cm_rma_atomic_nbi(rma, UCP_ATOMIC_OP_ADD, "atomic add", pe, addr, value, NULL);
}

cm_status_t cm_rma_flush(cm_rma_t *rma, int pe)
{
    ucp_request_param_t param = {0};
    cm_status_t status;

    /* Copies into directly mapped memory are ordered before what follows (a flag saying
     * whether there were any would be another thread's to clear). */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (cm_rma_ucx_pending(rma)) {
        status = cm_rma_req_wait(rma, ucp_ep_flush_nbx(rma->eps[pe], &param), "flush", pe);
        CM_RMA_COUNT(rma->stats.flushes, 1);
    } else {
        status = CM_OK; /* nothing issued through UCX since the last flush of all */
    }
    if (rma->pending_ns[pe] != 0) {
        cm_rma_delay_until(rma, rma->pending_ns[pe]);
        rma->pending_ns[pe] = 0;
    }
    return status;
}

cm_status_t cm_rma_flush_all(cm_rma_t *rma)
{
    cm_status_t status;

    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    /* The protocol flushes at every acquire and release, mostly with nothing in flight. */
    if (cm_rma_ucx_pending(rma)) {
        status = cm_rma_ucx_complete(rma, "flush of all ranks");
        CM_RMA_COUNT(rma->stats.flushes, 1);
    } else {
        status = CM_OK;
    }
    if (rma->pending_all_ns != 0) {
        cm_rma_delay_until(rma, rma->pending_all_ns);
        rma->pending_all_ns = 0;
        memset(rma->pending_ns, 0, (size_t)rma->nprocs * sizeof(*rma->pending_ns));
    }
    return status;
}

cm_status_t cm_rma_barrier(cm_rma_t *rma)
{
    cm_status_t status = cm_rma_flush_all(rma);

    if (status != CM_OK) {
        return status;
    }
    return cm_rma_boot_sync(rma, false);
}

/* ---- counters ----------------------------------------------------------- */

void cm_rma_stats_since(cm_rma_stats_t *stats, const cm_rma_stats_t *base)
{
    uint64_t *s = (uint64_t *)stats;
    const uint64_t *b = (const uint64_t *)base;

    /* Every member is a uint64_t counter (cm_rma.h). */
    for (size_t i = 0; i < sizeof(*stats) / sizeof(uint64_t); i++) {
        s[i] -= b[i];
    }
}

void cm_rma_get_stats(const cm_rma_t *rma, cm_rma_stats_t *stats)
{
    *stats = rma->stats;
    stats->am_sent       = atomic_load_explicit(&((cm_rma_t *)rma)->am_sent, memory_order_relaxed);
    stats->am_bytes_sent = atomic_load_explicit(&((cm_rma_t *)rma)->am_bytes_sent,
                                                memory_order_relaxed);
    stats->am_received   = atomic_load_explicit(&((cm_rma_t *)rma)->am_received,
                                                memory_order_relaxed);
    stats->am_queued     = atomic_load_explicit(&((cm_rma_t *)rma)->am_queued,
                                                memory_order_relaxed);
    stats->progress_wakeups = atomic_load_explicit(&((cm_rma_t *)rma)->wakeups,
                                                   memory_order_relaxed);
    stats->interrupts = atomic_load_explicit(&((cm_rma_t *)rma)->interrupts, memory_order_relaxed);
    stats->wait_blocks = atomic_load_explicit(&((cm_rma_t *)rma)->wait_blocks, memory_order_relaxed);
    stats->wait_missed = atomic_load_explicit(&((cm_rma_t *)rma)->wait_missed, memory_order_relaxed);
    stats->wake_bells  = atomic_load_explicit(&((cm_rma_t *)rma)->bell_rings, memory_order_relaxed);
    stats->arm_caught  = atomic_load_explicit(&((cm_rma_t *)rma)->arm_caught, memory_order_relaxed);
    stats->waits       = cm_rma_thread_waits;
}
