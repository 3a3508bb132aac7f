/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The process-wide runtime state behind cm.h, for the library's modules and
 * the bundled tools (cm_bench, cm_info). Not installed.
 */
#ifndef CM_RUNTIME_H
#define CM_RUNTIME_H

#include "cm.h"
#include "rma/cm_boot.h"
#include "rma/cm_rma.h"
#include "util/cm_stats.h"
#include "util/cm_config.h"
#include "src/runtime/cm_heap.h"
#include "src/protocols/cm_meta.h"
#include "src/protocols/cm_protocol.h"
#include "locks/cm_sleep.h"

#include <stdbool.h>

/* Where everything goes in the address space (the same in every process). */
typedef struct {
    uintptr_t meta_base;   /* metadata segment, just below the shared region */
    size_t    meta_size;
    uintptr_t app_base;    /* the shared region as the application sees it (CM_SHARED_BASE) */
    uintptr_t net_base;    /* the same memory as the network sees it, above the application view */
    size_t    shared_size;
} cm_layout_t;

typedef struct {
    bool              initialized;
    int               rank;
    int               nprocs;
    size_t            page_size;
    cm_config_t       config;
    cm_boot_t         *boot;
    cm_rma_t          *rma;
    cm_layout_t       layout;
    cm_meta_layout_t  meta;
    /*
     * The shared region has two views of one memory file: the application's
     * (shared_base), whose pages the protocol protects, and the network's
     * (shared_net), always accessible and registered for RMA. A peer's
     * one-sided operation therefore never touches a protected page, even where
     * the transport executes it in this process's own address space (TCP).
     */
    void              *shared_base;
    void              *shared_net;
    size_t            shared_size;
    uint64_t          npages;
    cm_rma_seg_t      *shared_seg;
    void              *meta_base;    /* this process's metadata segment, same VA everywhere */
    size_t            meta_size;
    cm_rma_seg_t      *meta_seg;
    void              *scratch;      /* CM_META_SCRATCH bytes of the metadata segment for tools/tests */
    cm_heap_t         heap;         /* collective: [0, local_base) of the region */
    cm_heap_t         local_heap;   /* this process's arena for cm_malloc_local */
    uint64_t          local_base;   /* offset of process 0's arena; arenas are local_arena apart */
    uint64_t          local_arena;
    cm_rma_hosts_t    hosts;        /* the job's hosts (CM_PROTOCOL=twolevel only) */
    const cm_protocol_t *proto;
    cm_protocol_ctx_t proto_ctx;    /* what proto was given at init */
    double            start_time;   /* wall clock at cm_init (cm_wall_time) */
    bool              stats_stopped; /* cm_stats_stop: stats_at_stop is what CM_STATS reports */
    cm_stats_t        stats_at_stop;
    cm_sleep_t        sleep;        /* compat/'s waits: sleepers of locks (cm_region_sleep) */
    uint64_t          sleep_base[2]; /* sleeps and wakes at the last cm_stats_reset */
    /* CM_TRACE: when each lock was granted here (0: not held), barriers so far. */
    uint64_t          *trace_grant;
    uint64_t          trace_barriers;
} cm_runtime_t;

/* CM_TRACE: opens this process's trace and records the clock's offset (collective). */
cm_status_t cm_rt_trace_start(void);
/* Records the clock's offset again (collective); the file is closed by cm_rt_trace_close. */
cm_status_t cm_rt_trace_clock(void);
void cm_rt_trace_close(bool failed);

extern cm_runtime_t cm_rt;

/* Start of this process's arena for cm_malloc_local (local_arena bytes). */
static inline uintptr_t cm_rt_local_arena(void)
{
    return (uintptr_t)cm_rt.shared_base + cm_rt.local_base + (uint64_t)cm_rt.rank * cm_rt.local_arena;
}

/*
 * Places the metadata segment, the application view and the network view for
 * a configuration, given the metadata size the job needs. Fails with a
 * one-line error for a misaligned base, a too small CM_META_SIZE, or a range
 * that does not fit.
 */
cm_status_t cm_runtime_layout(const cm_config_t *cfg, size_t page_size, size_t meta_needed,
                              cm_layout_t *out);

/* This process's statistics since the last cm_stats_reset: the protocol's and the runtime's own. */
void cm_rt_stats_take(cm_stats_t *st);

/* The run as the statistics JSON and cm_bench --json describe it (src/runtime/cm_stats_run.c). */
typedef struct {
    cm_stats_run_t run;
    char        binary[256], program[256], hostname[256], kernel[256], transports[256];
    char        *cmdline; /* /proc/self/cmdline: run.args point into it */
    const char  **args;
} cm_rt_run_t;

/*
 * Describes this run into info (release with cm_rt_run_release). where: every process's
 * (rank 0 after gathering them), or NULL: this process's only, from which the job's nodes
 * are known only when all of its processes run here.
 */
void cm_rt_run_describe(cm_rt_run_t *info, const cm_stats_where_t *where, int nwhere);
void cm_rt_run_release(cm_rt_run_t *info);

/* Gathers every process's statistics on rank 0, which prints the table and writes the JSON
 * CM_STATS asks for. Collective; nothing when CM_STATS is empty. */
cm_status_t cm_rt_stats_report(void);

#endif
