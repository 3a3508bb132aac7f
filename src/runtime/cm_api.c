/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The synchronization and allocation half of cm.h: thin wrappers over the
 * active protocol and the shared heap. A failure here means the DSM cannot
 * go on: one line, and the whole job ends.
 */
#include "config.h"
#include "src/runtime/cm_heap.h"
#include "util/cm_trace.h"
#include "util/cm_log.h"
#include "src/protocols/cm_protocol.h"
#include "src/access/cm_replica_heap.h"
#include "src/runtime/cm_region.h"
#include "src/runtime/cm_runtime.h"
#include "src/access/cm_hooks_api.h"
#include "util/cm_variant.h"

#include <errno.h>
#include <time.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

static void cm_api_require(const char *fn)
{
    if (!cm_rt.initialized) {
        cm_fatal(1, "%s called before cm_init", fn);
    }
}

static void cm_api_check(cm_status_t status, const char *fn)
{
    if (status != CM_OK) {
        cm_fatal(1, "%s failed: %s", fn, cm_status_string(status));
    }
}

/* "48m", "1g": a size as CM_SHARED_SIZE takes it, rounded up to whole MiB. */
static void cm_api_size_setting(uint64_t bytes, char *buf, size_t len)
{
    uint64_t mib = (bytes + (1u << 20) - 1) >> 20;

    if (mib % 1024 == 0) {
        snprintf(buf, len, "%" PRIu64 "g", mib / 1024);
    } else {
        snprintf(buf, len, "%" PRIu64 "m", mib);
    }
}

/* How long a rank waits, silent, for rank 0 to end the job over a failure they all share. */
#define CM_API_QUIET_WAIT_S 10

/*
 * The one line a researcher needs: what the collective heap holds and why (the region
 * less the part CM_LOCAL_HEAP sets aside), and a CM_SHARED_SIZE that fits this request
 * on top of what is in use (a page of slack for alignment). Once per job: cm_malloc is
 * collective and deterministic, so every rank runs out at the same call; rank 0 says it and
 * ends the job, the others wait for that, silent, and speak only if it does not come (a
 * program whose ranks allocate differently).
 */
__attribute__((noreturn)) static void cm_api_heap_exhausted(size_t size)
{
    uint64_t page = cm_rt.page_size, heap = cm_rt.local_base;
    uint64_t need = cm_rt.heap.in_use + (size + page - 1) / page * page + page;
    uint64_t local = cm_rt.shared_size - heap, fit;
    char have[32], set_aside[48], fits[32];

    if (cm_rt.rank != 0 && cm_rt.nprocs > 1) {
        struct timespec ts = {.tv_sec = CM_API_QUIET_WAIT_S};
        nanosleep(&ts, NULL);
    }

    if (cm_rt.config.local_heap != 0) {
        fit = need + cm_rt.config.local_heap;
        snprintf(set_aside, sizeof(set_aside), "CM_LOCAL_HEAP");
    } else {
        fit = (need * 4 + 2) / 3; /* a quarter of the region goes to cm_malloc_local */
        snprintf(set_aside, sizeof(set_aside), "a quarter, CM_LOCAL_HEAP's default");
    }
    cm_api_size_setting(cm_rt.shared_size, have, sizeof(have));
    cm_api_size_setting(fit, fits, sizeof(fits));
    cm_fatal(1, "cm_malloc(%zu): the shared heap is exhausted: %" PRIu64 " of its %" PRIu64
             " bytes in use (CM_SHARED_SIZE=%s less %" PRIu64 " bytes for cm_malloc_local, %s); "
             "CM_SHARED_SIZE=%s would fit this request", size, cm_rt.heap.in_use, heap, have,
             local, set_aside, fits);
}

/* CM_TRACE: a block of the region and who asked for it (the report names pages by it). */
static void cm_api_trace_alloc(uint64_t off, size_t size, const void *caller)
{
    if (__builtin_expect(cm_trace_on, 0)) {
        cm_trace_emit(CM_TRACE_ALLOC, cm_trace_now(), (uint64_t)(uintptr_t)caller, off, -1,
                      (size > UINT32_MAX) ? UINT32_MAX : (uint32_t)size, 0);
    }
}

void *cm_malloc(size_t size)
{
    uint64_t off;
    cm_status_t status;

    cm_api_require("cm_malloc");
    if (size == 0) {
        return NULL;
    }
    CM_RT_ENTER();
    status = cm_heap_alloc(&cm_rt.heap, size, &off);
    CM_RT_LEAVE();
    if (status == CM_ERR_NO_MEMORY) {
        cm_api_heap_exhausted(size);
    }
    cm_api_check(status, "cm_malloc");
    cm_api_trace_alloc(off, size, __builtin_return_address(0));
    return (char *)cm_rt.shared_base + off;
}

void cm_free(void *ptr)
{
    uintptr_t a = (uintptr_t)ptr, base = (uintptr_t)cm_rt.shared_base;

    cm_api_require("cm_free");
    if (ptr == NULL) {
        return;
    }
    CM_RT_ENTER();
    if (a < base || a >= base + cm_rt.shared_size ||
        cm_heap_free(&cm_rt.heap, a - base) != CM_OK) {
        cm_fatal(1, "cm_free(%p): not a block returned by cm_malloc", ptr);
    }
    CM_RT_LEAVE();
}

void *cm_malloc_local(size_t size)
{
    uint64_t off;
    cm_status_t status;

    cm_api_require("cm_malloc_local");
    if (size == 0) {
        return NULL;
    }
    CM_RT_ENTER();
    status = cm_heap_alloc(&cm_rt.local_heap, size, &off);
    CM_RT_LEAVE();
    if (status == CM_ERR_NO_MEMORY) {
        cm_fatal(1, "cm_malloc_local(%zu): this process's part of the shared region is exhausted "
                 "(%" PRIu64 " of %" PRIu64 " bytes in use); raise CM_LOCAL_HEAP or CM_SHARED_SIZE",
                 size, cm_rt.local_heap.in_use, cm_rt.local_arena);
    }
    cm_api_check(status, "cm_malloc_local");
    cm_api_trace_alloc(cm_rt_local_arena() - (uintptr_t)cm_rt.shared_base + off, size,
                       __builtin_return_address(0));
    return (void *)(cm_rt_local_arena() + off);
}

void cm_free_local(void *ptr)
{
    uintptr_t mine = cm_rt_local_arena(), a = (uintptr_t)ptr;

    cm_api_require("cm_free_local");
    if (ptr == NULL) {
        return;
    }
    CM_RT_ENTER();
    if (a < mine || a >= mine + cm_rt.local_arena ||
        cm_heap_free(&cm_rt.local_heap, a - mine) != CM_OK) {
        cm_fatal(1, "cm_free_local(%p): not a block this process got from cm_malloc_local", ptr);
    }
    CM_RT_LEAVE();
}

/* A lock id of the job (0..CM_LOCKS-1), checked here once for every protocol. */
static void cm_api_lock_id(int id, const char *fn)
{
    if (id < 0) {
        cm_fatal(1, "%s(%d): lock ids are not negative", fn, id);
    }
    if ((unsigned)id >= cm_rt.meta.nlocks) {
        cm_fatal(1, "lock id %d is out of range: CM_LOCKS=%u allows 0..%u", id, cm_rt.meta.nlocks,
                 cm_rt.meta.nlocks - 1);
    }
}

/* The call as the outermost frame of whatever it waits for (CM_STUCK_REPORT). */
void cm_lock_acquire(int id)
{
    uint64_t t0;

    cm_api_require("cm_lock_acquire");
    cm_api_lock_id(id, "cm_lock_acquire");
    CM_RT_ENTER();
    cm_rma_why_push(cm_rt.rma, CM_RMA_WHY("cm_lock_acquire(%a)", NULL, (uint64_t)id, 0, -1));
    t0 = cm_trace_begin();
    cm_api_check(cm_rt.proto->lock_acquire((unsigned)id), "cm_lock_acquire");
    if (t0 != 0 && cm_rt.trace_grant != NULL) {
        cm_rt.trace_grant[id] = cm_trace_now();
        cm_trace_emit(CM_TRACE_LOCK_WAIT, t0, cm_rt.trace_grant[id] - t0, (uint64_t)id, -1, 0, 0);
    }
    cm_rma_why_pop(cm_rt.rma);
    CM_RT_LEAVE();
}

void cm_lock_release(int id)
{
    cm_api_require("cm_lock_release");
    cm_api_lock_id(id, "cm_lock_release");
    CM_RT_ENTER();
    cm_rma_why_push(cm_rt.rma, CM_RMA_WHY("cm_lock_release(%a)", NULL, (uint64_t)id, 0, -1));
    if (__builtin_expect(cm_trace_on, 0) && cm_rt.trace_grant != NULL &&
        cm_rt.trace_grant[id] != 0) {
        cm_trace_emit(CM_TRACE_LOCK_HOLD, cm_rt.trace_grant[id],
                      cm_trace_now() - cm_rt.trace_grant[id], (uint64_t)id, -1, 0, 0);
        cm_rt.trace_grant[id] = 0;
    }
    cm_api_check(cm_rt.proto->lock_release((unsigned)id), "cm_lock_release");
    cm_rma_why_pop(cm_rt.rma);
    CM_RT_LEAVE();
}

void cm_barrier(void)
{
    uint64_t t0;

    cm_api_require("cm_barrier");
    CM_RT_ENTER();
    cm_rma_why_push(cm_rt.rma, CM_RMA_WHY("cm_barrier", NULL, 0, 0, -1));
    t0 = cm_trace_begin();
    cm_api_check(cm_rt.proto->barrier(), "cm_barrier");
    cm_trace_end(CM_TRACE_BARRIER, t0, cm_rt.trace_barriers++, -1, 0);
    cm_rma_why_pop(cm_rt.rma);
    CM_RT_LEAVE();
}

void cm_init_done(void)
{
    cm_api_require("cm_init_done");
    CM_RT_ENTER();
    cm_rma_why_push(cm_rt.rma, CM_RMA_WHY("cm_init_done", NULL, 0, 0, -1));
    cm_api_check(cm_rt.proto->init_done(), "cm_init_done");
    cm_rma_why_pop(cm_rt.rma);
    CM_RT_LEAVE();
}

const char *cm_protocol_name(void)
{
    cm_api_require("cm_protocol_name");
    return cm_rt.proto->name;
}

const char *cm_variant_name(void)
{
    cm_api_require("cm_variant_name");
    return (cm_rt.proto == &cm_protocol_cashmere) ? cm_variants[cm_rt.config.variant].name : NULL;
}

void cm_stats_reset(void)
{
    cm_api_require("cm_stats_reset");
    CM_RT_ENTER();
    cm_rt.proto->stats_reset();
    cm_rt.sleep_base[0] = cm_rt.sleep.sleeps;
    cm_rt.sleep_base[1] = cm_rt.sleep.wakes;
    cm_rt.stats_stopped = false;
    cm_trace_instant(CM_TRACE_REGION, 0, -1, 0); /* cm_trace --top's pages count from here */
    CM_RT_LEAVE();
}

void cm_stats_stop(void)
{
    cm_api_require("cm_stats_stop");
    CM_RT_ENTER();
    cm_rt_stats_take(&cm_rt.stats_at_stop);
    cm_rt.stats_stopped = true;
    cm_trace_instant(CM_TRACE_REGION, 1, -1, 0);
    CM_RT_LEAVE();
}

void cm_rt_stats_take(cm_stats_t *st)
{
    struct stat fs;

    cm_rt.proto->stats(st);
    /* The shared region's memory this process's file holds (the protocol adds what else of
     * the region it keeps where only it counts it, such as a host's twins). */
    if (fstat(cm_rma_seg_fd(cm_rt.shared_seg), &fs) == 0) {
        st->shared_resident_bytes += (uint64_t)fs.st_blocks * 512;
    }
    st->sleeps      = cm_rt.sleep.sleeps - cm_rt.sleep_base[0];
    st->sleep_wakes = cm_rt.sleep.wakes - cm_rt.sleep_base[1];
}

/* ---- compat/'s view of the runtime (cm_region.h) ------------------------------------------ */

void cm_region_wait_begin(const char *what, uint64_t a, uint64_t b)
{
    cm_rma_why_push(cm_rt.rma, &(const cm_rma_why_t){what, NULL, a, b, -1});
}

void cm_region_wait_end(void)
{
    cm_rma_why_pop(cm_rt.rma);
}

uint64_t cm_region_sleep_arm(int lock)
{
    uint64_t seen = 0;

    CM_RT_ENTER();
    cm_api_check(cm_sleep_arm(&cm_rt.sleep, (uint32_t)lock, &seen), "a wait of the compat layer");
    CM_RT_LEAVE();
    return seen;
}

void cm_region_sleep(uint64_t seen)
{
    CM_RT_ENTER();
    cm_sleep_wait(&cm_rt.sleep, seen,
                  CM_RMA_WHY("a wake from a process that changed the word", NULL, 0, 0, -1));
    CM_RT_LEAVE();
}

void cm_region_wake(int lock)
{
    CM_RT_ENTER();
    cm_api_check(cm_sleep_wake(&cm_rt.sleep, (uint32_t)lock), "a wake of the compat layer");
    CM_RT_LEAVE();
}

bool cm_region_get(cm_region_t *r)
{
    if (!cm_rt.initialized) {
        return false;
    }
    *r = (cm_region_t){
        .base       = cm_rt.shared_base,
        .size       = cm_rt.shared_size,
        .page_size  = cm_rt.page_size,
        .npages     = cm_rt.npages,
        .nlocks     = (unsigned)cm_rt.config.locks,
        .local      = (char *)cm_rt_local_arena(),
        .local_size = cm_rt.local_arena,
    };
    return true;
}

void cm_region_stand_in(void)
{
    void *p;

    cm_hooks_pause(1);
    p = mmap(cm_rt.shared_base, cm_rt.shared_size, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (p != cm_rt.shared_base) {
        cm_fatal(1, "PARMACS: cannot map a private stand-in of the shared region: %s",
                 strerror(errno));
    }
}

void cm_region_restore(void)
{
    if (cm_rt.proto->restore_view != NULL) {
        if (cm_rt.proto->restore_view() != CM_OK) {
            cm_fatal(1, "PARMACS: cannot map the shared region back");
        }
        cm_hooks_pause(0);
        return;
    }
    if (munmap(cm_rt.shared_base, cm_rt.shared_size) != 0 ||
        cm_rma_seg_map_view(cm_rt.shared_seg, cm_rt.shared_base, PROT_NONE, "shared region") !=
            CM_OK) {
        cm_fatal(1, "PARMACS: cannot map the shared region back");
    }
    cm_hooks_pause(0);
}
