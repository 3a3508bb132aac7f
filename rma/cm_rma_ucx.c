/*
 * UCX (ucp) backend of the one-sided layer. See cm_rma.h for the contract.
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_rma.h"
#include "rma/cm_rma_delay.h"
#include "src/util/cm_log.h"
#include "src/util/cm_time.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rma/cm_rma_int.h"

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
static cm_status_t cm_rma_boot_sync(cm_rma_t *rma, bool exchange)
{
    cm_status_t status;

    cm_rma_poll_begin(rma);
    status = exchange ? cm_boot_exchange(rma->boot, cm_rma_progress_cb, rma)
                      : cm_boot_fence(rma->boot, cm_rma_progress_cb, rma);
    cm_rma_poll_end(rma);
    return status;
}

/* ---- completion -------------------------------------------------------- */

static cm_status_t cm_rma_req_wait(cm_rma_t *rma, ucs_status_ptr_t req, const char *op, int pe)
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
    cm_rma_poll_begin(rma);
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        if (ucp_worker_progress(rma->worker) != 0) {
            idle = 0;
        } else {
            cm_rma_idle(&idle);
        }
    }
    cm_rma_poll_end(rma);
    ucp_request_free(req);
    if (st == UCS_OK) {
        return CM_OK;
    }
err:
    if (pe >= 0) {
        cm_error("%s to rank %d failed: %s", op, pe, ucs_status_string(st));
    } else {
        cm_error("%s failed: %s", op, ucs_status_string(st));
    }
    return CM_ERR_TRANSPORT;
}

/* Non-blocking-implicit: the request completes by the next flush. */
static cm_status_t cm_rma_req_release(ucs_status_ptr_t req, const char *op, int pe)
{
    if (UCS_PTR_IS_ERR(req)) {
        cm_error("%s to rank %d failed: %s", op, pe, ucs_status_string(UCS_PTR_STATUS(req)));
        return CM_ERR_TRANSPORT;
    }
    if (req != NULL) {
        ucp_request_free(req);
    }
    return CM_OK;
}

/* ---- delay injection ---------------------------------------------------- */

/* Charges an operation to pe; returns when it may complete (0: no delay). */
static inline uint64_t cm_rma_delay_begin(cm_rma_t *rma, int pe, size_t bytes)
{
    uint64_t now, ready, cpu_until;

    if (!rma->delay.enabled || pe == rma->rank) {
        return 0;
    }
    now   = cm_time_ns();
    ready = cm_rma_delay_charge(&rma->delay, now, bytes, &cpu_until);
    /* The overhead is CPU time of the issuer: burn it, do not sleep. */
    while (cm_time_ns() < cpu_until) {
        cm_rma_cpu_relax();
    }
    rma->stats.delay_ns += cpu_until - now;
    return ready;
}

static void cm_rma_delay_until(cm_rma_t *rma, uint64_t ready)
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
    rma->stats.delay_ns += now - start;
}

static inline void cm_rma_delay_defer(cm_rma_t *rma, int pe, uint64_t ready)
{
    if (ready > rma->pending_ns[pe]) {
        rma->pending_ns[pe] = ready;
    }
    if (ready > rma->pending_all_ns) {
        rma->pending_all_ns = ready;
    }
}

/*
 * Keeps an operand alive until the next flush_all (which empties the stash;
 * a full stash flushes first).
 */
static uint64_t *cm_rma_stash(cm_rma_t *rma, uint64_t value, cm_status_t *status)
{
    *status = CM_OK;
    if (rma->stash_used == CM_RMA_STASH) {
        *status = cm_rma_flush_all(rma);
    }
    rma->stash[rma->stash_used] = value;
    return &rma->stash[rma->stash_used++];
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
    cm_rma_delay_init(&rma->delay, params->latency_ns, params->bandwidth, params->overhead_ns);
    rma->eps        = calloc((size_t)rma->nprocs, sizeof(*rma->eps));
    rma->pending_ns = calloc((size_t)rma->nprocs, sizeof(*rma->pending_ns));
    rma->shm_peer   = calloc((size_t)rma->nprocs, sizeof(*rma->shm_peer));
    if (rma->eps == NULL || rma->pending_ns == NULL || rma->shm_peer == NULL) {
        cm_error("rma: out of memory");
        status = CM_ERR_NO_MEMORY;
        goto err_free;
    }

    st = ucp_config_read(NULL, NULL, &ucp_config);
    if (st != UCS_OK) {
        cm_error("UCX configuration: %s", ucs_status_string(st));
        status = CM_ERR_TRANSPORT;
        goto err_free;
    }
    ucp_params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    ucp_params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM;
    if (rma->progress_mode != CM_PROGRESS_OFF) {
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
    wparams.thread_mode = (rma->progress_mode == CM_PROGRESS_OFF) ? UCS_THREAD_MODE_SINGLE
                                                                   : UCS_THREAD_MODE_MULTI;
    if (rma->progress_mode != CM_PROGRESS_OFF) {
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
    status = cm_rma_boot_sync(rma, true);
    if (status != CM_OK) {
        goto err_worker;
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

    if (rma->progress_mode == CM_PROGRESS_ON && rma->nprocs > 1) {
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
err_worker:
    ucp_worker_destroy(rma->worker);
err_cleanup:
    ucp_cleanup(rma->context);
err_free:
    free(rma->shm_peer);
    free(rma->pending_ns);
    free(rma->eps);
    free(rma);
    return status;
}

static void cm_rma_seg_free(cm_rma_t *rma, cm_rma_seg_t *seg)
{
    for (int pe = 0; pe < rma->nprocs; pe++) {
        if (seg->rkeys != NULL && seg->rkeys[pe] != NULL) {
            ucp_rkey_destroy(seg->rkeys[pe]);
        }
        /* Our own mappings of peers' memfds (rkey_ptr mappings belong to UCX). */
        if (seg->kind == CM_RMA_SEG_FD && seg->rbase != NULL && seg->rbase[pe] != NULL &&
            pe != rma->rank) {
            munmap(seg->rbase[pe], seg->len);
        }
    }
    if (seg->memh != NULL) {
        ucp_mem_unmap(rma->context, seg->memh);
    }
    if (seg->own_mmap) {
        munmap((void *)seg->base, seg->len);
    }
    if (seg->fd >= 0) {
        close(seg->fd);
    }
    free(seg->rkeys);
    free(seg->rbase);
    free(seg);
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
            cm_rma_poll_begin(rma);
            while (ucp_request_check_status(req) == UCS_INPROGRESS) {
                if (ucp_worker_progress(rma->worker) == 0) {
                    cm_rma_idle(&idle);
                }
            }
            cm_rma_poll_end(rma);
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
    cm_rma_thread_stop(rma);
    for (int i = rma->nsegs - 1; i >= 0; i--) {
        cm_rma_seg_free(rma, rma->segs[i]);
    }
    ucp_worker_destroy(rma->worker);
    ucp_cleanup(rma->context);
    if (rma->self_fd >= 0) {
        close(rma->self_fd);
    }
    free(rma->wait_peer);
    free(rma->shm_peer);
    free(rma->pending_ns);
    free(rma->eps);
    free(rma);
    return status;
}

/* ---- segments ----------------------------------------------------------- */

/* Is [addr, addr+len) unmapped here? UCX's fixed mapping would silently replace what is there. */
static cm_status_t cm_rma_range_check(void *addr, size_t len, const char *name)
{
    void *p = mmap(addr, len, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) {
        if (errno == EEXIST) {
            cm_error("%s: address range %p-%p is already in use in this process; choose another "
                     "with CM_SHARED_BASE", name, addr, (char *)addr + len);
            return CM_ERR_ADDR_IN_USE;
        }
        cm_error("%s: cannot reserve %zu bytes at %p: %s", name, len, addr, strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    munmap(p, len);
    if (p != addr) { /* kernels before 4.17 treat NOREPLACE as a hint */
        cm_error("%s: address range %p-%p is already in use in this process", name, addr,
                 (char *)addr + len);
        return CM_ERR_ADDR_IN_USE;
    }
    return CM_OK;
}

/*
 * Maps the segment's memory. ATOMIC: UCX-allocated (shared-memory capable)
 * where it can, else mapped here and registered. FD: a memfd mapped here and
 * registered.
 */
static cm_status_t cm_rma_seg_alloc(cm_rma_t *rma, cm_rma_seg_t *seg)
{
    ucp_mem_map_params_t mp = {0};
    ucp_mem_attr_t attr = {0};
    ucs_status_t st = UCS_ERR_UNSUPPORTED;
    int fd = -1;
    void *p;

    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.address    = (void *)seg->base;
    mp.length     = seg->len;
    mp.flags      = UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_FIXED;
    if (seg->kind == CM_RMA_SEG_FD) {
        fd = memfd_create(seg->name, MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)seg->len) != 0) {
            cm_error("%s: cannot create a %zu-byte memory file: %s", seg->name, seg->len,
                     strerror(errno));
            if (fd >= 0) {
                close(fd);
            }
            return CM_ERR_NO_MEMORY;
        }
        seg->fd = fd;
        goto map_here;
    }
    st = ucp_mem_map(rma->context, &mp, &seg->memh);
    if (st == UCS_OK) {
        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
        st = ucp_mem_query(seg->memh, &attr);
        if (st == UCS_OK && (uintptr_t)attr.address == seg->base && attr.length >= seg->len) {
            return CM_OK;
        }
        ucp_mem_unmap(rma->context, seg->memh);
        seg->memh = NULL;
    }
    cm_debug("%s: UCX cannot allocate at %p (%s); mapping it here and registering it",
             seg->name, (void *)seg->base, ucs_status_string(st));

map_here:
    p = mmap((void *)seg->base, seg->len, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_NORESERVE | MAP_FIXED_NOREPLACE | ((fd < 0) ? MAP_ANONYMOUS : 0),
             fd, 0);
    if (p != (void *)seg->base) {
        cm_error("%s: cannot map %zu bytes at %p: %s", seg->name, seg->len, (void *)seg->base,
                 (p == MAP_FAILED) ? strerror(errno) : "placed elsewhere");
        if (p != MAP_FAILED) {
            munmap(p, seg->len);
        }
        return CM_ERR_NO_MEMORY;
    }
    seg->own_mmap = true;
    mp.flags = 0;
    st = ucp_mem_map(rma->context, &mp, &seg->memh);
    if (st != UCS_OK) {
        cm_error("%s: cannot register %zu bytes at %p with UCX: %s", seg->name, seg->len,
                 (void *)seg->base, ucs_status_string(st));
        seg->memh = NULL;
        return CM_ERR_TRANSPORT;
    }
    return CM_OK;
}

/* Maps a node-local peer's memfd here, through /proc (as UCX's own posix transport does). */
static char *cm_rma_seg_map_peer_fd(cm_rma_seg_t *seg, int pe, const cm_rma_fd_info_t *info)
{
    char path[64];
    void *p;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)info->pid, (int)info->fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        cm_warn("%s: cannot map rank %d's memory directly (%s: %s); using the network path",
                seg->name, pe, path, strerror(errno));
        return NULL;
    }
    p = mmap(NULL, seg->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        cm_warn("%s: cannot map rank %d's memory directly: %s; using the network path",
                seg->name, pe, strerror(errno));
        return NULL;
    }
    return p;
}

cm_status_t cm_rma_seg_map(cm_rma_t *rma, void *addr, size_t len, cm_rma_seg_kind_t kind,
                           const char *name, cm_rma_seg_t **seg_p)
{
    long page = sysconf(_SC_PAGESIZE);
    char key[64], fd_key[64];
    void *packed = NULL;
    size_t packed_len;
    cm_rma_fd_info_t fd_info;
    cm_rma_seg_t *seg;
    cm_status_t status;
    ucs_status_t st;

    if (rma->nsegs == CM_RMA_MAX_SEGS) {
        cm_error("%s: too many RMA segments (at most %d)", name, CM_RMA_MAX_SEGS);
        return CM_ERR_NO_MEMORY;
    }
    if ((uintptr_t)addr % (uintptr_t)page != 0 || len == 0 || len % (size_t)page != 0) {
        cm_error("%s: address %p and size %zu must be non-zero multiples of the page size (%ld)",
                 name, addr, len, page);
        return CM_ERR_INVALID;
    }
    for (int i = 0; i < rma->nsegs; i++) {
        uintptr_t b = rma->segs[i]->base, e = b + rma->segs[i]->len;
        if ((uintptr_t)addr < e && (uintptr_t)addr + len > b) {
            cm_error("%s: overlaps segment %s", name, rma->segs[i]->name);
            return CM_ERR_ADDR_IN_USE;
        }
    }
    status = cm_rma_range_check(addr, len, name);
    if (status != CM_OK) {
        return status;
    }

    seg = calloc(1, sizeof(*seg));
    if (seg == NULL) {
        cm_error("rma: out of memory");
        return CM_ERR_NO_MEMORY;
    }
    seg->base  = (uintptr_t)addr;
    seg->len   = len;
    seg->kind  = kind;
    seg->fd    = -1;
    snprintf(seg->name, sizeof(seg->name), "%s", name);
    seg->rkeys = calloc((size_t)rma->nprocs, sizeof(*seg->rkeys));
    seg->rbase = calloc((size_t)rma->nprocs, sizeof(*seg->rbase));
    if (seg->rkeys == NULL || seg->rbase == NULL) {
        cm_error("rma: out of memory");
        status = CM_ERR_NO_MEMORY;
        goto err_free;
    }
    status = cm_rma_seg_alloc(rma, seg);
    if (status != CM_OK) {
        goto err_free;
    }

    st = ucp_rkey_pack(rma->context, seg->memh, &packed, &packed_len);
    if (st != UCS_OK) {
        cm_error("%s: ucp_rkey_pack: %s", name, ucs_status_string(st));
        status = CM_ERR_TRANSPORT;
        goto err_free;
    }
    snprintf(key, sizeof(key), "cm.rma.seg%d.rkey", rma->nsegs);
    status = cm_boot_put(rma->boot, key, packed, packed_len);
    ucp_rkey_buffer_release(packed);
    if (status != CM_OK) {
        goto err_free;
    }
    snprintf(fd_key, sizeof(fd_key), "cm.rma.seg%d.fd", rma->nsegs);
    if (kind == CM_RMA_SEG_FD) {
        fd_info.pid = (int32_t)getpid();
        fd_info.fd  = seg->fd;
        status = cm_boot_put(rma->boot, fd_key, &fd_info, sizeof(fd_info));
        if (status != CM_OK) {
            goto err_free;
        }
    }
    status = cm_rma_boot_sync(rma, true);
    if (status != CM_OK) {
        goto err_free;
    }

    for (int pe = 0; pe < rma->nprocs; pe++) {
        void *rkey_buf, *ptr;
        size_t rkey_len;

        status = cm_boot_get(rma->boot, pe, key, &rkey_buf, &rkey_len);
        if (status != CM_OK) {
            goto err_free;
        }
        st = ucp_ep_rkey_unpack(rma->eps[pe], rkey_buf, &seg->rkeys[pe]);
        free(rkey_buf);
        if (st != UCS_OK) {
            cm_error("%s: cannot use rank %d's memory key: %s", name, pe, ucs_status_string(st));
            status = CM_ERR_TRANSPORT;
            goto err_free;
        }
        if (pe == rma->rank) {
            seg->rbase[pe] = (char *)seg->base;
        } else if (kind == CM_RMA_SEG_ATOMIC) {
            seg->rbase[pe] = (ucp_rkey_ptr(seg->rkeys[pe], seg->base, &ptr) == UCS_OK) ? ptr : NULL;
        } else if (rma->shm_known && rma->shm_peer[pe]) {
            /* Only where UCX itself uses shared memory: UCX_TLS=tcp keeps every peer remote. */
            void *info;
            size_t info_len;
            status = cm_boot_get(rma->boot, pe, fd_key, &info, &info_len);
            if (status != CM_OK) {
                goto err_free;
            }
            seg->rbase[pe] = (info_len == sizeof(cm_rma_fd_info_t))
                                 ? cm_rma_seg_map_peer_fd(seg, pe, info) : NULL;
            free(info);
        }
        if (seg->rbase[pe] == NULL) {
            rma->all_mapped = false;
        }
    }
    if (kind == CM_RMA_SEG_ATOMIC && !rma->shm_known) {
        for (int pe = 0; pe < rma->nprocs; pe++) {
            rma->shm_peer[pe] = (seg->rbase[pe] != NULL);
        }
        rma->shm_known = true;
    }

    rma->segs[rma->nsegs++] = seg;
    cm_debug("%s: %zu bytes at %p (%s)", name, len, addr,
             (kind == CM_RMA_SEG_FD) ? "memfd, registered"
                                     : seg->own_mmap ? "registered" : "allocated by UCX");

    if (rma->progress_mode == CM_PROGRESS_AUTO && !rma->all_mapped && !rma->thread_running) {
        status = cm_rma_thread_start(rma);
        if (status != CM_OK) {
            return status; /* the segment stays mapped; finalize frees it */
        }
    }
    *seg_p = seg;
    return CM_OK;

err_free:
    cm_rma_seg_free(rma, seg);
    return status;
}

/* ---- queries ------------------------------------------------------------ */

int cm_rma_seg_fd(const cm_rma_seg_t *seg)
{
    return seg->fd;
}

cm_status_t cm_rma_seg_map_view(cm_rma_seg_t *seg, void *addr, int prot, const char *name)
{
    cm_status_t status;
    void *p;

    if (seg->fd < 0) {
        cm_error("%s: %s has no memory file to map again", name, seg->name);
        return CM_ERR_INVALID;
    }
    status = cm_rma_range_check(addr, seg->len, name);
    if (status != CM_OK) {
        return status;
    }
    p = mmap(addr, seg->len, prot, MAP_SHARED | MAP_NORESERVE | MAP_FIXED_NOREPLACE, seg->fd, 0);
    if (p != addr) {
        cm_error("%s: cannot map %zu bytes at %p: %s", name, seg->len, addr,
                 (p == MAP_FAILED) ? strerror(errno) : "placed elsewhere");
        if (p != MAP_FAILED) {
            munmap(p, seg->len);
        }
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

int cm_rma_rank(const cm_rma_t *rma)   { return rma->rank; }
int cm_rma_nprocs(const cm_rma_t *rma) { return rma->nprocs; }
bool cm_rma_all_mapped(const cm_rma_t *rma) { return rma->all_mapped; }
bool cm_rma_progress_thread_running(const cm_rma_t *rma) { return rma->thread_running; }

static inline cm_rma_seg_t *cm_rma_seg_find(cm_rma_t *rma, const void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr;

    for (int i = 0; i < rma->nsegs; i++) {
        cm_rma_seg_t *seg = rma->segs[i];
        if (a >= seg->base && a + len <= seg->base + seg->len && a + len >= a) {
            return seg;
        }
    }
    cm_error("address range %p+%zu is not inside a registered RMA segment", addr, len);
    return NULL;
}

void *cm_rma_ptr(cm_rma_t *rma, int pe, const void *addr)
{
    cm_rma_seg_t *seg = cm_rma_seg_find(rma, addr, 1);

    if (seg == NULL || seg->rbase[pe] == NULL) {
        return NULL;
    }
    return seg->rbase[pe] + ((uintptr_t)addr - seg->base);
}

void *cm_rma_store_ptr(cm_rma_t *rma, int pe, const void *addr)
{
    /* A modeled network charges every put: stores that bypass it would not be charged. */
    return rma->delay.enabled ? NULL : cm_rma_ptr(rma, pe, addr);
}

void cm_rma_describe_peer(cm_rma_t *rma, int pe, char *buf, size_t len)
{
    char *text = NULL, *line, *save = NULL;
    size_t text_len = 0, used = 0;
    FILE *f = open_memstream(&text, &text_len);

    buf[0] = '\0';
    if (f == NULL) {
        return;
    }
    /* UCX prints the endpoint's lanes as "lane[0]:  3:sysv/memory.0 md[2] ...". */
    ucp_ep_print_info(rma->eps[pe], f);
    fclose(f);
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *p = strstr(line, "lane["), *colon, *end;
        if (p == NULL || (p = strchr(p, ':')) == NULL) {
            continue;
        }
        p++;
        while (*p == ' ') {
            p++;
        }
        colon = strchr(p, ':');
        if (colon == NULL) {
            continue;
        }
        p   = colon + 1;
        end = strpbrk(p, " \t");
        if (end != NULL) {
            *end = '\0';
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
    stats->wait_blocks = atomic_load_explicit(&((cm_rma_t *)rma)->wait_blocks, memory_order_relaxed);
    stats->wait_missed = atomic_load_explicit(&((cm_rma_t *)rma)->wait_missed, memory_order_relaxed);
}

ucp_worker_h cm_rma_ucp_worker(cm_rma_t *rma) { return rma->worker; }
ucp_ep_h cm_rma_ucp_ep(cm_rma_t *rma, int pe) { return rma->eps[pe]; }

ucp_rkey_h cm_rma_ucp_rkey(cm_rma_t *rma, int pe, const void *addr)
{
    cm_rma_seg_t *seg = cm_rma_seg_find(rma, addr, 1);
    return (seg != NULL) ? seg->rkeys[pe] : NULL;
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
static cm_status_t cm_rma_ucx_complete(cm_rma_t *rma, const char *what)
{
    ucp_request_param_t param = {0};
    cm_status_t status;

    status = cm_rma_req_wait(rma, ucp_worker_flush_nbx(rma->worker, &param), what, -1);
    if (status == CM_OK) {
        rma->ucx_pending   = false;
        rma->fence_pending = false;
        rma->stash_used    = 0;
    }
    return status;
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
        if (rma->fence_pending && (status = cm_rma_ucx_complete(rma, "fence")) != CM_OK) {
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
            rma->stats.puts++;
            rma->stats.bytes_put += len;
            cm_rma_copy_once(remote, local, len);
            rma->direct_pending = true;
            if (ready != 0) {
                cm_rma_delay_defer(rma, pe, ready);
            }
        } else {
            rma->stats.gets++;
            rma->stats.bytes_got += len;
            memcpy(local, remote, len);
            if (blocking) {
                cm_rma_delay_until(rma, ready);
            } else if (ready != 0) {
                cm_rma_delay_defer(rma, pe, ready);
            }
        }
        return CM_OK;
    }
    /* A put completes only locally here, a get_nbi not at all: both need a flush. */
    rma->ucx_pending |= put || !blocking;
    if (put) {
        rma->stats.puts++;
        rma->stats.bytes_put += len;
        req = ucp_put_nbx(rma->eps[pe], local, len, (uint64_t)(uintptr_t)addr, seg->rkeys[pe],
                          &param);
    } else {
        rma->stats.gets++;
        rma->stats.bytes_got += len;
        req = ucp_get_nbx(rma->eps[pe], local, len, (uint64_t)(uintptr_t)addr, seg->rkeys[pe],
                          &param);
    }
    if (!blocking) {
        if (ready != 0) {
            cm_rma_delay_defer(rma, pe, ready);
        }
        return cm_rma_req_release(req, what, pe);
    }
    status = cm_rma_req_wait(rma, req, what, pe);
    if (put && ready != 0) {
        cm_rma_delay_defer(rma, pe, ready);
    } else {
        cm_rma_delay_until(rma, ready);
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
    rma->stats.puts++;
    rma->stats.bytes_put += sizeof(uint64_t);
    if (rma->fence_pending && (status = cm_rma_ucx_complete(rma, "fence")) != CM_OK) {
        return status;
    }
    __atomic_store_n((uint64_t *)(void *)(seg->rbase[pe] + ((uintptr_t)addr - seg->base)), value,
                     __ATOMIC_RELAXED);
    rma->direct_pending = true;
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
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    param.reply_buffer = result;
    ready  = cm_rma_delay_begin(rma, pe, sizeof(uint64_t));
    status = cm_rma_req_wait(rma, ucp_atomic_op_nbx(rma->eps[pe], op, &value, 1,
                                                    (uint64_t)(uintptr_t)addr, seg->rkeys[pe],
                                                    &param), what, pe);
    rma->stats.atomics++;
    cm_rma_delay_until(rma, ready);
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

cm_status_t cm_rma_swap_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old)
{
    ucp_request_param_t param = {0};
    cm_rma_seg_t *seg = cm_rma_seg_find(rma, addr, sizeof(uint64_t));
    uint64_t ready, *operand;
    cm_status_t status;

    if (seg == NULL) {
        return CM_ERR_INVALID;
    }
    if (seg->kind != CM_RMA_SEG_ATOMIC) {
        cm_error("atomic swap on %s: atomics need a CM_RMA_SEG_ATOMIC segment", seg->name);
        return CM_ERR_UNSUPPORTED;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    param.reply_buffer = old;
    operand = cm_rma_stash(rma, value, &status);
    if (status != CM_OK) {
        return status;
    }
    ready = cm_rma_delay_begin(rma, pe, sizeof(uint64_t));
    if (ready != 0) {
        cm_rma_delay_defer(rma, pe, ready);
    }
    rma->stats.atomics++;
    rma->ucx_pending = true;
    return cm_rma_req_release(ucp_atomic_op_nbx(rma->eps[pe], UCP_ATOMIC_OP_SWAP, operand, 1,
                                                (uint64_t)(uintptr_t)addr, seg->rkeys[pe], &param),
                              "atomic swap", pe);
}

cm_status_t cm_rma_fence(cm_rma_t *rma)
{
    ucs_status_t st;

    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    /* Copies issued before are done; UCX operations issued before are not, necessarily. */
    rma->fence_pending = rma->ucx_pending;
    st = ucp_worker_fence(rma->worker);
    if (st != UCS_OK) {
        cm_error("fence failed: %s", ucs_status_string(st));
        return CM_ERR_TRANSPORT;
    }
    return CM_OK;
}

cm_status_t cm_rma_add_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value)
{
    ucp_request_param_t param = {0};
    cm_rma_seg_t *seg = cm_rma_seg_find(rma, addr, sizeof(uint64_t));
    uint64_t ready, *operand;
    cm_status_t status;

    if (seg == NULL) {
        return CM_ERR_INVALID;
    }
    if (seg->kind != CM_RMA_SEG_ATOMIC) {
        cm_error("atomic add on %s: atomics need a CM_RMA_SEG_ATOMIC segment", seg->name);
        return CM_ERR_UNSUPPORTED;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    operand = cm_rma_stash(rma, value, &status);
    if (status != CM_OK) {
        return status;
    }
    ready = cm_rma_delay_begin(rma, pe, sizeof(uint64_t));
    if (ready != 0) {
        cm_rma_delay_defer(rma, pe, ready);
    }
    rma->stats.atomics++;
    rma->ucx_pending = true;
    return cm_rma_req_release(ucp_atomic_op_nbx(rma->eps[pe], UCP_ATOMIC_OP_ADD, operand, 1,
                                                (uint64_t)(uintptr_t)addr, seg->rkeys[pe], &param),
                              "atomic add", pe);
}

cm_status_t cm_rma_flush(cm_rma_t *rma, int pe)
{
    ucp_request_param_t param = {0};
    cm_status_t status;

    /* Copies into directly mapped memory are ordered before what follows. */
    if (rma->direct_pending) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        rma->direct_pending = false;
    }

    if (rma->ucx_pending) {
        status = cm_rma_req_wait(rma, ucp_ep_flush_nbx(rma->eps[pe], &param), "flush", pe);
        rma->stats.flushes++;
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

    if (rma->direct_pending) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        rma->direct_pending = false;
    }

    /* The protocol flushes at every acquire and release, mostly with nothing in flight. */
    if (rma->ucx_pending) {
        status = cm_rma_ucx_complete(rma, "flush of all ranks");
        rma->stats.flushes++;
    } else {
        status          = CM_OK;
        rma->stash_used = 0; /* nothing in UCX reads an operand */
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

/* ---- active messages ------------------------------------------------------ */

/* The wire header: who sent it (UCX does not say without a reply endpoint). */
typedef struct {
    uint32_t src;
} cm_rma_am_hdr_t;

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
    atomic_fetch_add_explicit(&am->rma->am_received, 1, memory_order_relaxed);
    am->fn(am->arg, (int)hdr.src, data, length);
    return UCS_OK;
}

cm_status_t cm_rma_am_set_handler(cm_rma_t *rma, unsigned id, cm_rma_am_handler_t fn, void *arg)
{
    ucp_am_handler_param_t hp = {0};
    ucs_status_t st;

    if (id >= CM_RMA_AM_MAX_ID) {
        return CM_ERR_INVALID;
    }
    rma->am[id].rma = rma;
    rma->am[id].fn  = fn;
    rma->am[id].arg = arg;
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

static void cm_rma_am_count(cm_rma_t *rma, size_t len)
{
    atomic_fetch_add_explicit(&rma->am_sent, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&rma->am_bytes_sent, len, memory_order_relaxed);
}

cm_status_t cm_rma_am_send(cm_rma_t *rma, int pe, unsigned id, const void *data, size_t len)
{
    ucp_request_param_t param = {0};
    cm_rma_am_hdr_t hdr = {.src = (uint32_t)rma->rank};
    uint64_t ready;
    cm_status_t status;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_AM_SEND_FLAG_EAGER;
    ready = cm_rma_delay_begin(rma, pe, len);
    cm_rma_am_count(rma, len);
    status = cm_rma_req_wait(rma, ucp_am_send_nbx(rma->eps[pe], id, &hdr, sizeof(hdr), data, len,
                                                  &param), "active message", pe);
    cm_rma_delay_until(rma, ready);
    return status;
}

/* A posted message: header and data live here until UCX is done with them. */
typedef struct {
    cm_rma_am_hdr_t hdr;
    char            data[];
} cm_rma_am_block_t;

static void cm_rma_am_post_done(void *request, ucs_status_t status, void *user_data)
{
    if (status != UCS_OK) {
        cm_error("posted active message failed: %s", ucs_status_string(status));
    }
    free(user_data);
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
    b->hdr.src = (uint32_t)rma->rank;
    memcpy(b->data, data, len);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.flags        = UCP_AM_SEND_FLAG_EAGER;
    param.cb.send      = cm_rma_am_post_done;
    param.user_data    = b;
    cm_rma_am_count(rma, len);
    req = ucp_am_send_nbx(rma->eps[pe], id, &b->hdr, sizeof(b->hdr), b->data, len, &param);
    if (UCS_PTR_IS_ERR(req)) {
        cm_error("active message to rank %d failed: %s", pe, ucs_status_string(UCS_PTR_STATUS(req)));
        free(b);
        return CM_ERR_TRANSPORT;
    }
    if (req == NULL) {
        free(b); /* completed at once; the callback is not called */
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
