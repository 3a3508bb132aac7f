/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The synchronization and allocation half of cm.h: thin wrappers over the
 * active protocol and the shared heap. A failure here means the DSM cannot
 * go on: one line, and the whole job ends.
 */
#include "config.h"
#include "src/cm_heap.h"
#include "src/util/cm_log.h"
#include "src/cm_protocol.h"
#include "src/cm_replica_heap.h"
#include "src/cm_runtime.h"
#include "src/cashmere/cm_variant.h"

#include <inttypes.h>

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
        cm_fatal(1, "cm_malloc(%zu): the shared heap is exhausted (%" PRIu64 " of %zu bytes in "
                 "use); raise CM_SHARED_SIZE", size, cm_rt.heap.in_use, (size_t)cm_rt.local_base);
    }
    cm_api_check(status, "cm_malloc");
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

void cm_lock_acquire(int id)
{
    cm_api_require("cm_lock_acquire");
    cm_api_lock_id(id, "cm_lock_acquire");
    CM_RT_ENTER();
    cm_api_check(cm_rt.proto->lock_acquire((unsigned)id), "cm_lock_acquire");
    CM_RT_LEAVE();
}

void cm_lock_release(int id)
{
    cm_api_require("cm_lock_release");
    cm_api_lock_id(id, "cm_lock_release");
    CM_RT_ENTER();
    cm_api_check(cm_rt.proto->lock_release((unsigned)id), "cm_lock_release");
    CM_RT_LEAVE();
}

void cm_barrier(void)
{
    cm_api_require("cm_barrier");
    CM_RT_ENTER();
    cm_api_check(cm_rt.proto->barrier(), "cm_barrier");
    CM_RT_LEAVE();
}

void cm_init_done(void)
{
    cm_api_require("cm_init_done");
    CM_RT_ENTER();
    cm_api_check(cm_rt.proto->init_done(), "cm_init_done");
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
    cm_rt.stats_stopped = false;
    CM_RT_LEAVE();
}

void cm_stats_stop(void)
{
    cm_api_require("cm_stats_stop");
    CM_RT_ENTER();
    cm_rt.proto->stats(&cm_rt.stats_at_stop);
    cm_rt.stats_stopped = true;
    CM_RT_LEAVE();
}
