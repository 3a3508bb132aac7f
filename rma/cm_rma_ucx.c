/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UCX (ucp) backend of the one-sided layer: its lifecycle. See cm_rma.h for
 * the contract. Context and worker, the exchange of worker addresses through
 * the process manager, endpoints to every rank, their close and the teardown;
 * and the queries about them (rank, endpoints, transports).
 *
 * The rest of the backend: segments (cm_rma_seg.c), put/get/atomics and their
 * completion (cm_rma_ops.c), active messages (cm_rma_am.c), waits and the
 * progress thread (cm_rma_wait.c).
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_rma_int.h"
#include "util/cm_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void cm_rma_poll_enter(cm_rma_t *rma)
{
    cm_rma_poll_begin(rma);
}

void cm_rma_poll_leave(cm_rma_t *rma)
{
    cm_rma_poll_end(rma);
}

static unsigned cm_rma_progress_cb(void *arg)
{
    return cm_rma_progress(arg);
}

/*
 * A collective through the process manager. Waiting here, this thread serves
 * peers itself (a sleeping progress thread would add a wake-up to every
 * request that arrives meanwhile).
 */
cm_status_t cm_rma_boot_sync(cm_rma_t *rma, bool exchange)
{
    cm_status_t status;

    cm_rma_why_push(rma, CM_RMA_WHY("every rank at a fence of the job through the process "
                                    "manager (PMIx)", NULL, 0, 0, -1));
    cm_rma_poll_begin(rma);
    status = exchange ? cm_boot_exchange(rma->boot, cm_rma_progress_cb, rma)
                      : cm_boot_fence(rma->boot, cm_rma_progress_cb, rma);
    cm_rma_poll_end(rma);
    cm_rma_why_pop(rma);
    return status;
}

/* ---- init / finalize ---------------------------------------------------- */

cm_status_t cm_rma_init(const cm_rma_params_t *params, cm_rma_t **rma_p)
{
    ucp_params_t ucp_params = {0};
    ucp_worker_params_t wparams = {0};
    ucp_config_t *ucp_config;
    ucp_address_t *address;
    size_t address_len;
    cm_rma_t *rma;
    cm_status_t status;
    ucs_status_t st;

    rma = calloc(1, sizeof(*rma));
    if (rma == NULL) {
        cm_error("rma: out of memory");
        return CM_ERR_NO_MEMORY;
    }
    rma->boot          = params->boot;
    rma->rank          = cm_boot_rank(params->boot);
    rma->nprocs        = cm_boot_size(params->boot);
    rma->progress_mode = params->progress;
    rma->handoff_ns    = params->handoff_ns ? params->handoff_ns : 1000;
    rma->wait_mode     = params->wait;
    rma->wait_spin_ns  = params->wait_spin_ns;
    rma->worker_fd     = -1;
    rma->self_fd       = -1;
    rma->all_mapped    = true;
    cm_rma_delay_init(&rma->delay, &params->delay);
    rma->eps        = calloc((size_t)rma->nprocs, sizeof(*rma->eps));
    rma->pending_ns = calloc((size_t)rma->nprocs, sizeof(*rma->pending_ns));
    rma->shm_peer   = calloc((size_t)rma->nprocs, sizeof(*rma->shm_peer));
    rma->same_host  = calloc((size_t)rma->nprocs, sizeof(*rma->same_host));
    rma->irq_ns     = calloc((size_t)rma->nprocs, sizeof(*rma->irq_ns));
    rma->am_last_ns = calloc((size_t)rma->nprocs, sizeof(*rma->am_last_ns));
    rma->am_last_id = calloc((size_t)rma->nprocs, sizeof(*rma->am_last_id));
    rma->watch_fd   = -1;
    rma->app_tid    = (int)syscall(SYS_gettid); /* the thread of cm_init: "the application" */
    if (rma->eps == NULL || rma->pending_ns == NULL || rma->shm_peer == NULL ||
        rma->same_host == NULL || rma->irq_ns == NULL || rma->am_last_ns == NULL || rma->am_last_id == NULL) {
        cm_error("rma: out of memory");
        status = CM_ERR_NO_MEMORY;
        goto err_free;
    }
    {
        /* Which peers share our host, for the counts of what crosses hosts (no exchange). */
        int *peers, npeers;
        status = cm_boot_local_peers(rma->boot, &peers, &npeers);
        if (status != CM_OK) {
            goto err_free;
        }
        for (int i = 0; i < npeers; i++) {
            rma->same_host[peers[i]] = true;
        }
        rma->same_host[rma->rank] = true;
        free(peers);
    }

    st = ucp_config_read(NULL, NULL, &ucp_config);
    if (st != UCS_OK) {
        cm_error("UCX configuration: %s", ucs_status_string(st));
        status = CM_ERR_TRANSPORT;
        goto err_free;
    }
    ucp_params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    ucp_params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM;
    if (rma->progress_mode != CM_RMA_PROGRESS_OFF) {
        ucp_params.features |= UCP_FEATURE_WAKEUP;
    }
    ucp_params.mt_workers_shared = 0;
    st = ucp_init(&ucp_params, ucp_config, &rma->context);
    ucp_config_release(ucp_config);
    if (st != UCS_OK) {
        cm_error("ucp_init: %s", ucs_status_string(st));
        status = CM_ERR_TRANSPORT;
        goto err_free;
    }

    /* A worker shared with the progress thread needs UCX's own locking. */
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = (rma->progress_mode == CM_RMA_PROGRESS_OFF) ? UCS_THREAD_MODE_SINGLE
                                                                   : UCS_THREAD_MODE_MULTI;
    if (rma->progress_mode != CM_RMA_PROGRESS_OFF) {
        wparams.field_mask |= UCP_WORKER_PARAM_FIELD_EVENTS;
        /* RX: peers' requests. TX: makes ucp_worker_arm refuse while a send
           is queued for lack of room at the peer; with RX alone the thread
           slept on such a send forever (issue 10). Over shared memory and TCP
           TX adds no wake-ups (mm sends complete at once; TCP's arm does
           nothing, its event fd is a level-triggered epoll of its sockets);
           over IB it also wakes the thread for our own send completions. */
        wparams.events      = UCP_WAKEUP_RX | UCP_WAKEUP_TX;
    }
    st = ucp_worker_create(rma->context, &wparams, &rma->worker);
    if (st != UCS_OK) {
        cm_error("ucp_worker_create: %s", ucs_status_string(st));
        status = CM_ERR_TRANSPORT;
        goto err_cleanup;
    }

    st = ucp_worker_get_address(rma->worker, &address, &address_len);
    if (st != UCS_OK) {
        cm_error("ucp_worker_get_address: %s", ucs_status_string(st));
        status = CM_ERR_TRANSPORT;
        goto err_worker;
    }
    status = cm_boot_put(rma->boot, "cm.rma.address", address, address_len);
    ucp_worker_release_address(rma->worker, address);
    if (status != CM_OK) {
        goto err_worker;
    }
    status = cm_rma_bell_publish(rma);
    if (status != CM_OK) {
        goto err_worker;
    }
    /* Before the first fence of the job: a rank that never comes is a stuck wait too. */
    status = cm_rma_watch_start(rma, params->stuck_ns);
    if (status != CM_OK) {
        goto err_worker;
    }
    status = cm_heartbeat_publish(rma->boot, &params->heartbeat, &rma->heartbeat);
    if (status != CM_OK) {
        goto err_worker;
    }
    status = cm_rma_boot_sync(rma, true);
    if (status != CM_OK) {
        goto err_heartbeat;
    }
    status = cm_heartbeat_start(rma->heartbeat);
    if (status != CM_OK) {
        goto err_heartbeat;
    }

    for (int pe = 0; pe < rma->nprocs; pe++) {
        ucp_ep_params_t ep_params = {0};
        void *peer_address;
        size_t len;

        status = cm_boot_get(rma->boot, pe, "cm.rma.address", &peer_address, &len);
        if (status != CM_OK) {
            goto err_eps;
        }
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address    = peer_address;
        st = ucp_ep_create(rma->worker, &ep_params, &rma->eps[pe]);
        free(peer_address);
        if (st != UCS_OK) {
            cm_error("cannot reach rank %d: ucp_ep_create: %s", pe, ucs_status_string(st));
            status = CM_ERR_TRANSPORT;
            goto err_eps;
        }
    }

    if (rma->progress_mode == CM_RMA_PROGRESS_ON && rma->nprocs > 1) {
        status = cm_rma_thread_start(rma);
        if (status != CM_OK) {
            goto err_eps;
        }
    }
    *rma_p = rma;
    return CM_OK;

err_eps:
    for (int pe = 0; pe < rma->nprocs; pe++) {
        if (rma->eps[pe] != NULL) {
            ucp_ep_destroy(rma->eps[pe]);
        }
    }
err_heartbeat:
    cm_heartbeat_stop(rma->heartbeat);
err_worker:
    cm_rma_watch_stop(rma);
    ucp_worker_destroy(rma->worker);
err_cleanup:
    ucp_cleanup(rma->context);
err_free:
    free(rma->am_last_ns);
    free(rma->am_last_id);
    free(rma->shm_peer);
    free(rma->same_host);
    free(rma->irq_ns);
    free(rma->pending_ns);
    free(rma->eps);
    free(rma);
    return status;
}

/* Closes every endpoint, letting each close handshake finish (peers progress meanwhile). */
static void cm_rma_close_eps(cm_rma_t *rma)
{
    ucp_request_param_t param = {0};

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = 0; /* flush mode */
    for (int pe = 0; pe < rma->nprocs; pe++) {
        ucs_status_ptr_t req = ucp_ep_close_nbx(rma->eps[pe], &param);
        unsigned idle = 0;

        if (UCS_PTR_IS_PTR(req)) {
            cm_rma_why_push(rma, CM_RMA_WHY("the close of the connection to rank %a", NULL,
                                            (uint64_t)pe, 0, pe));
            cm_rma_poll_begin(rma);
            while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                if (ucp_worker_progress(rma->worker) == 0) {
                    cm_rma_idle(&idle);
                }
            }
            cm_rma_poll_end(rma);
            cm_rma_why_pop(rma);
            ucp_request_free(req);
        }
        rma->eps[pe] = NULL;
    }
}

cm_status_t cm_rma_finalize(cm_rma_t *rma)
{
    cm_status_t status;

    /* Nobody tears down while a peer may still reach its memory. */
    status = cm_rma_barrier(rma);
    if (status == CM_OK) {
        cm_rma_close_eps(rma);
        status = cm_rma_boot_sync(rma, false);
    }
    /* Every peer passed the last fence (or the job is failing): none waits for us now. */
    cm_rma_watch_stop(rma);
    cm_heartbeat_stop(rma->heartbeat);
    cm_rma_thread_stop(rma);
    cm_rma_bell_stop(rma);
    for (int i = rma->nsegs - 1; i >= 0; i--) {
        cm_rma_seg_free(rma, rma->segs[i]);
    }
    ucp_worker_destroy(rma->worker);
    ucp_cleanup(rma->context);
    if (rma->self_fd >= 0) {
        close(rma->self_fd);
    }
    free(rma->wait_peer);
    free(rma->am_last_ns);
    free(rma->am_last_id);
    free(rma->shm_peer);
    free(rma->same_host);
    free(rma->irq_ns);
    free(rma->pending_ns);
    free(rma->eps);
    free(rma);
    return status;
}

/* ---- queries ------------------------------------------------------------ */

int cm_rma_rank(const cm_rma_t *rma)   { return rma->rank; }
int cm_rma_nprocs(const cm_rma_t *rma) { return rma->nprocs; }
bool cm_rma_progress_thread_running(const cm_rma_t *rma) { return rma->thread_running; }

/* UCX's description of the endpoint to pe (ucp_ep_print_info), to free(); NULL if none. */
static char *cm_rma_ep_info(cm_rma_t *rma, int pe)
{
    char *text = NULL;
    size_t text_len = 0;
    FILE *f = open_memstream(&text, &text_len);

    if (f == NULL) {
        return NULL;
    }
    ucp_ep_print_info(rma->eps[pe], f);
    fclose(f);
    return text;
}

/*
 * The transport of a lane line, "lane[1]:  2:rc_verbs/rxe0:1.0 md[1] -> ... rma_bw#0 am",
 * cut in place after it ("rc_verbs/rxe0:1.0"); NULL for other lines. Read the line's roles
 * before: the cut ends the line.
 */
static char *cm_rma_lane_transport(char *line)
{
    char *p = strstr(line, "lane["), *end;

    if (p == NULL || (p = strchr(p, ':')) == NULL || (p = strchr(p + 1, ':')) == NULL) {
        return NULL;
    }
    p++;
    end = strpbrk(p, " \t");
    if (end != NULL) {
        *end = '\0';
    }
    return p;
}

void cm_rma_describe_peer(cm_rma_t *rma, int pe, char *buf, size_t len)
{
    char *text = cm_rma_ep_info(rma, pe), *line, *save = NULL, *p, *end;
    size_t used = 0;

    buf[0] = '\0';
    if (text == NULL) {
        return;
    }
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        if ((p = cm_rma_lane_transport(line)) == NULL) {
            continue;
        }
        if ((end = strrchr(p, '.')) != NULL && strchr(p, '/') < end) {
            *end = '\0'; /* drop the path index "memory.0" */
        }
        if (strstr(buf, p) == NULL && used + strlen(p) + 2 < len) {
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "+" : "", p);
        }
    }
    free(text);
}

bool cm_rma_peer_tcp_only(cm_rma_t *rma, int pe, char *buf, size_t len)
{
    char tl[128], *tok, *save = NULL;

    cm_rma_describe_peer(rma, pe, tl, sizeof(tl));
    for (tok = strtok_r(tl, "+", &save); tok != NULL; tok = strtok_r(NULL, "+", &save)) {
        if (strncmp(tok, "tcp/", 4) != 0) {
            snprintf(buf, len, "%s", tok);
            return false;
        }
    }
    return true;
}

bool cm_rma_peer_am_shm(cm_rma_t *rma, int pe, char *buf, size_t len)
{
    /* UCX's shared-memory FIFOs ("mm"): the transports that wake a receiver through its
       abstract socket (cm_rma_bell.c). */
    static const char *const mm_tl[] = {"posix/", "sysv/", "xpmem/"};
    char *text = cm_rma_ep_info(rma, pe), *line, *save = NULL, *tl;
    bool shm = false;

    buf[0] = '\0';
    if (text == NULL) {
        return false;
    }
    for (line = strtok_r(text, "\n", &save); line != NULL && !shm;
         line = strtok_r(NULL, "\n", &save)) {
        bool am_role = strstr(line, " am ") != NULL || strstr(line, " am_bw#") != NULL ||
                       (strlen(line) >= 3 && strcmp(line + strlen(line) - 3, " am") == 0);

        if (!am_role || (tl = cm_rma_lane_transport(line)) == NULL) {
            continue;
        }
        for (size_t i = 0; i < sizeof(mm_tl) / sizeof(mm_tl[0]); i++) {
            if (strncmp(tl, mm_tl[i], strlen(mm_tl[i])) == 0) {
                snprintf(buf, len, "%s", tl);
                shm = true;
            }
        }
    }
    free(text);
    return shm;
}

/*
 * Does ucp_worker_fence order what we issue to pe? UCX 1.13 fences each transport
 * interface (IBV_SEND_FENCE on the next work request of a queue pair): that orders
 * operations on one lane only. Two lanes carrying puts, gets and atomics (multi-rail,
 * rma_bw on another queue pair), or atomics emulated with messages (no amo lane: the
 * target's CPU executes them when it next progresses) beside RMA the NIC executes
 * (verbs), are not ordered by it: a get fenced behind a swap read the word before the
 * swap (soft-RoCE, tests/mp/mp_rma fence order). TCP's RMA is itself executed by the
 * target's CPU, in arrival order with the emulated atomics on the same connection.
 */
bool cm_rma_ucx_fence_orders(cm_rma_t *rma, int pe)
{
    char *text = cm_rma_ep_info(rma, pe), *line, *save = NULL, *tl, first[64] = "";
    bool amo = false, hw_rma = false, orders = true;

    if (text == NULL) {
        return false;
    }
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        bool rma_role = strstr(line, " rma#") != NULL || strstr(line, " rma_bw#") != NULL;
        bool amo_role = strstr(line, " amo#") != NULL;

        if ((!rma_role && !amo_role) || (tl = cm_rma_lane_transport(line)) == NULL) {
            continue;
        }
        if (first[0] == '\0') {
            snprintf(first, sizeof(first), "%s", tl);
        } else if (strcmp(first, tl) != 0) {
            orders = false; /* two lanes */
        }
        amo    |= amo_role;
        hw_rma |= rma_role && strncmp(tl, "tcp/", 4) != 0;
    }
    free(text);
    return orders && (amo || !hw_rma);
}

bool cm_rma_ucx_target_cpu(cm_rma_t *rma, int pe)
{
    char *text = cm_rma_ep_info(rma, pe), *line, *save = NULL, *tl;
    bool amo = false, cpu = false;

    if (text == NULL) {
        return false;
    }
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        bool rma_role = strstr(line, " rma#") != NULL || strstr(line, " rma_bw#") != NULL;

        amo |= strstr(line, " amo#") != NULL;
        if (rma_role && (tl = cm_rma_lane_transport(line)) != NULL) {
            cpu |= strncmp(tl, "tcp/", 4) == 0;
        }
    }
    free(text);
    return cpu || !amo;
}

bool cm_rma_ucx_amo_emulated(cm_rma_t *rma, int pe)
{
    char *text = cm_rma_ep_info(rma, pe);
    bool amo = text != NULL && strstr(text, " amo#") != NULL;

    free(text);
    return !amo;
}

/*
 * Are all atomics on our words executed by a CPU? True where no endpoint has an atomic lane
 * on a NIC: every atomic lane is shared memory or self (CPU atomics on the mapping), and
 * the rest are emulated (UCX's "amo_am": the target's progress runs a CPU atomic). Then an
 * atomic on our own word may be a CPU atomic here, at once. Not where a NIC executes
 * atomics: InfiniBand makes them atomic only among the NIC's own (IBV_ATOMIC_HCA), so ours
 * must go through it too.
 */
bool cm_rma_ucx_cpu_atomics(cm_rma_t *rma)
{
    static const char *const cpu_tl[] = {"self/", "posix/", "sysv/", "xpmem/"};
    bool cpu = true;

    for (int pe = 0; pe < rma->nprocs && cpu; pe++) {
        char *text = cm_rma_ep_info(rma, pe), *line, *save = NULL, *tl;

        if (text == NULL) {
            return false;
        }
        for (line = strtok_r(text, "\n", &save); line != NULL && cpu;
             line = strtok_r(NULL, "\n", &save)) {
            bool amo_role = strstr(line, " amo#") != NULL, known = false;

            if (!amo_role || (tl = cm_rma_lane_transport(line)) == NULL) {
                continue;
            }
            for (size_t i = 0; i < sizeof(cpu_tl) / sizeof(cpu_tl[0]); i++) {
                known |= strncmp(tl, cpu_tl[i], strlen(cpu_tl[i])) == 0;
            }
            cpu = known;
        }
        free(text);
    }
    return cpu;
}

ucp_worker_h cm_rma_ucp_worker(cm_rma_t *rma) { return rma->worker; }
ucp_ep_h cm_rma_ucp_ep(cm_rma_t *rma, int pe) { return rma->eps[pe]; }
