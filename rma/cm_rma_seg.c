/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Segments of the one-sided layer: memory at the same virtual address in
 * every process, mapped (by UCX, or here as a memfd) and registered, memory
 * keys exchanged through the process manager, and the direct mappings of
 * node-local peers' copies (ucp_rkey_ptr, or their memfd mapped here) behind
 * cm_rma_ptr, cm_rma_store_ptr and cm_rma_all_mapped. See cm_rma.h.
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_rma_int.h"
#include "util/cm_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

void cm_rma_seg_free(cm_rma_t *rma, cm_rma_seg_t *seg)
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
 * Unpacking a peer's key can start a connection handshake with it: UCX 1.13 resolves
 * a fallback for atomics the key's memory domain cannot do, which needs the peer's
 * endpoint id, and until the peer answers, every operation on that lane (the
 * atomics on shared memory among them) waits for the peer's CPU. That broke the
 * promise that node-local targets need not progress (test_progress's blocked phase
 * hung about once in 300 runs: a fetch-and-add queued behind a handshake the
 * target, blocked in open(), never answered). Finish every handshake here, while
 * all ranks are inside this collective call and progressing: a worker flush waits
 * for the handshakes (UCX queues it behind them), and the progressing fence keeps
 * each rank answering until every rank's flush is done.
 */
static cm_status_t cm_rma_seg_connect(cm_rma_t *rma)
{
    cm_status_t status = cm_rma_ucx_complete(rma, "completing the connections to the peers");

    if (status != CM_OK) {
        return status;
    }
    return cm_rma_boot_sync(rma, false);
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
    /* NONBLOCK: on-demand paging where the NIC has it, so a large region costs nothing
     * until used; elsewhere UCX pins, and cm_rma_pin_budget tells the caller first. */
    mp.flags      = UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_FIXED | UCP_MEM_MAP_NONBLOCK;
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
    mp.flags = UCP_MEM_MAP_NONBLOCK;
    st = ucp_mem_map(rma->context, &mp, &seg->memh);
    if (st != UCS_OK) {
        cm_error("%s: cannot register %zu bytes at %p with UCX: %s", seg->name, seg->len,
                 (void *)seg->base, ucs_status_string(st));
        seg->memh = NULL;
        return CM_ERR_TRANSPORT;
    }
    return CM_OK;
}

/* The value of a "Field:  value" line of /proc/self/status or /proc/meminfo, into line
 * (whose start it returns); NULL if absent. */
static const char *cm_rma_proc_field(const char *file, const char *field, char *line, size_t len)
{
    size_t flen = strlen(field);
    const char *value = NULL;
    FILE *f = fopen(file, "r");

    if (f == NULL) {
        return NULL;
    }
    while (fgets(line, (int)len, f) != NULL) {
        if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
            value = line + flen + 1;
            break;
        }
    }
    fclose(f);
    return value;
}

/* A /proc field in kB; -1 if absent. */
static long cm_rma_proc_kb(const char *file, const char *field)
{
    char line[256];
    const char *v = cm_rma_proc_field(file, field, line, sizeof(line));

    return (v != NULL) ? strtol(v, NULL, 10) : -1;
}

/* Does this process hold CAP_IPC_LOCK (pinning then ignores RLIMIT_MEMLOCK)? */
static bool cm_rma_can_lock(void)
{
    char line[256];
    const char *v = cm_rma_proc_field("/proc/self/status", "CapEff", line, sizeof(line));

    return (v != NULL) && ((strtoull(v, NULL, 16) >> 14) & 1); /* CAP_IPC_LOCK is 14 */
}

cm_status_t cm_rma_pin_budget(cm_rma_t *rma, int local_procs, bool *pins, size_t *limit,
                              char *why, size_t why_len)
{
    const size_t probe_len = 64 * 4096;
    ucp_mem_map_params_t mp = {0};
    ucp_mem_h memh;
    long before, after, avail_kb;
    struct rlimit rl;
    ucs_status_t st;
    size_t share;
    void *p;

    *pins  = false;
    *limit = SIZE_MAX;
    snprintf(why, why_len, "no limit");
    p = mmap(NULL, probe_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        cm_error("rma: cannot map %zu bytes: %s", probe_len, strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.address    = p;
    mp.length     = probe_len;
    mp.flags      = UCP_MEM_MAP_NONBLOCK;
    before = cm_rma_proc_kb("/proc/self/status", "VmPin");
    st = ucp_mem_map(rma->context, &mp, &memh);
    if (st != UCS_OK) {
        munmap(p, probe_len);
        cm_error("rma: cannot register %zu bytes with UCX: %s", probe_len, ucs_status_string(st));
        return CM_ERR_TRANSPORT;
    }
    after = cm_rma_proc_kb("/proc/self/status", "VmPin");
    ucp_mem_unmap(rma->context, memh);
    munmap(p, probe_len);
    if (before < 0 || after <= before) {
        return CM_OK; /* nothing pinned (shared memory, TCP, on-demand paging) */
    }
    *pins = true;
    avail_kb = cm_rma_proc_kb("/proc/meminfo", "MemAvailable");
    /* Three quarters of what is available: the processes need unpinned memory too. */
    share = (avail_kb > 0) ? (size_t)avail_kb / 4 * 3 * 1024 / (size_t)(local_procs > 0 ? local_procs : 1)
                           : SIZE_MAX;
    *limit = share;
    snprintf(why, why_len, "%.1f GiB of memory available here, %d processes on this host",
             (double)avail_kb / (1 << 20), local_procs);
    if (!cm_rma_can_lock() && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < *limit) {
        *limit = rl.rlim_cur;
        snprintf(why, why_len, "ulimit -l is %lu KiB; raise it (memlock in limits.conf, or "
                 "the launcher's) to register more", (unsigned long)(rl.rlim_cur / 1024));
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
    status = cm_rma_seg_connect(rma);
    if (status != CM_OK) {
        goto err_free;
    }
    if (kind == CM_RMA_SEG_ATOMIC && !rma->shm_known) {
        for (int pe = 0; pe < rma->nprocs; pe++) {
            rma->shm_peer[pe] = (seg->rbase[pe] != NULL);
            /* The lanes are final now that every handshake is done. */
            rma->amo_emulated |= pe != rma->rank && cm_rma_ucx_amo_emulated(rma, pe);
            /* A peer mapped here is reached by our own loads and stores: no CPU of its runs. */
            rma->irq_ns[pe] = (pe != rma->rank && seg->rbase[pe] == NULL &&
                               cm_rma_ucx_target_cpu(rma, pe)) ? rma->delay.interrupt_ns : 0;
            if (pe != rma->rank && !cm_rma_ucx_fence_orders(rma, pe)) {
                if (!rma->strong_fence) {
                    cm_debug("rma: UCX's fence does not order the operations to rank %d: "
                             "a fence completes what was issued before it", pe);
                }
                rma->strong_fence = true;
            }
        }
        rma->self_amo_cpu = cm_rma_ucx_cpu_atomics(rma);
        cm_debug("rma: atomics on our own words: %s",
                 rma->self_amo_cpu ? "CPU atomics, here" : "through UCX (a NIC executes them)");
        rma->shm_known = true;
    }

    rma->segs[rma->nsegs++] = seg;
    cm_debug("%s: %zu bytes at %p (%s)", name, len, addr,
             (kind == CM_RMA_SEG_FD) ? "memfd, registered"
                                     : seg->own_mmap ? "registered" : "allocated by UCX");

    /* Peers whose memory is not mapped here reach it through UCX, which over TCP executes their
     * puts, gets and atomics in software here; so do emulated atomics, even between mapped
     * peers: without the thread, an atomic on a process computing or blocked outside the library
     * waited until it next entered it (150 ms in mp_rma; for ever in mp_progress's "blocked"). */
    if (rma->progress_mode == CM_RMA_PROGRESS_AUTO && (!rma->all_mapped || rma->amo_emulated) &&
        !rma->thread_running) {
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

bool cm_rma_all_mapped(const cm_rma_t *rma) { return rma->all_mapped; }

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

ucp_rkey_h cm_rma_ucp_rkey(cm_rma_t *rma, int pe, const void *addr)
{
    cm_rma_seg_t *seg = cm_rma_seg_find(rma, addr, 1);
    return (seg != NULL) ? seg->rkeys[pe] : NULL;
}
