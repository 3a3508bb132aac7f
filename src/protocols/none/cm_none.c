/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CM_PROTOCOL=none: one process, no coherence. The sequential baseline that
 * speedups are measured against: the same binary and the same shared heap,
 * with the shared region plain read-write memory, no faults, no store hooks
 * (a cmcc-built binary's hooks see an empty range), and locks and barriers
 * that do nothing. More than one process is refused before
 * the job starts (cm_check_max_procs).
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/access/cm_hooks_api.h"
#include "util/cm_log.h"
#include "src/protocols/cm_protocol.h"
#include "util/cm_time.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>

static struct {
    cm_stats_t st;
    uint64_t   t_start;
    char       *app;
    size_t     size;
} cm_none;

static cm_status_t cm_none_init(const cm_protocol_ctx_t *ctx)
{
    if (ctx->nprocs != 1) {
        cm_error("CM_PROTOCOL=none runs one process (the sequential baseline); this job has %d",
                 ctx->nprocs);
        return CM_ERR_INVALID;
    }
    cm_none.app  = ctx->app;
    cm_none.size = ctx->size;
    if (mprotect(ctx->app, ctx->size, PROT_READ | PROT_WRITE) != 0) {
        cm_error("mprotect of the shared region failed: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    cm_hooks_set_range(0, 0, NULL);
    memset(&cm_none.st, 0, sizeof(cm_none.st));
    cm_none.t_start = cm_time_ns();
    return CM_OK;
}

static void cm_none_fini(void) {}

static cm_status_t cm_none_fault(void *addr, bool write)
{
    (void)write;
    cm_error("unexpected fault at %p: CM_PROTOCOL=none maps the whole shared region", addr);
    return CM_ERR_INVALID;
}

/* Lock ids are checked by cm_api.c; one process has nothing to wait for. */
static cm_status_t cm_none_acquire(unsigned id)
{
    (void)id;
    cm_none.st.lock_acquires_local++;
    return CM_OK;
}

static cm_status_t cm_none_release(unsigned id)
{
    (void)id;
    return CM_OK;
}

static cm_status_t cm_none_barrier(void)
{
    cm_none.st.barriers++;
    return CM_OK;
}

static cm_status_t cm_none_init_done(void)
{
    return CM_OK;
}

static void cm_none_stats(cm_stats_t *s)
{
    *s = cm_none.st;
    s->total_ns = cm_time_ns() - cm_none.t_start;
}

static void cm_none_stats_reset(void)
{
    memset(&cm_none.st, 0, sizeof(cm_none.st));
    cm_none.t_start = cm_time_ns();
}

static const char *cm_none_describe(void)
{
    return "none: one process, the shared region plain memory, no coherence (sequential baseline)";
}

static cm_status_t cm_none_page_home(const void *addr, int *home)
{
    if ((uintptr_t)addr - (uintptr_t)cm_none.app >= cm_none.size) {
        return CM_ERR_INVALID;
    }
    *home = 0;
    return CM_OK;
}

const cm_protocol_t cm_protocol_none = {
    .name         = "none",
    .init         = cm_none_init,
    .fini         = cm_none_fini,
    .fault        = cm_none_fault,
    .lock_acquire = cm_none_acquire,
    .lock_release = cm_none_release,
    .barrier      = cm_none_barrier,
    .init_done    = cm_none_init_done,
    .stats        = cm_none_stats,
    .stats_reset  = cm_none_stats_reset,
    .describe     = cm_none_describe,
    .page_home    = cm_none_page_home,
};
