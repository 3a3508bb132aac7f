/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_init / cm_finalize: configuration, bootstrap, one-sided layer, and the
 * shared region and metadata segment at fixed addresses.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/runtime/cm_runtime.h"
#include "src/runtime/cm_check.h"
#include "src/runtime/cm_exit.h"
#include "src/access/cm_fault.h"
#include "src/access/cm_libc.h"
#include "util/cm_log.h"
#include "src/runtime/cm_preinit.h"
#include "src/access/cm_replica_heap.h"
#include "util/cm_stats.h"
#include "util/cm_trace.h"
#include "util/cm_time.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

cm_runtime_t cm_rt;

/* Keep the metadata segment a large-page distance away from the shared region. */
#define CM_META_ALIGN (2ul << 20)

/* How long a rank whose start failed without a word of its own waits for the rank that says
 * why to end the job. */
#define CM_INIT_QUIET_WAIT_S 10

static void cm_rt_abort_hook(int status, const char *msg)
{
    cm_rt_trace_close(true);
    cm_exit_record_end(true); /* said why itself: cmrun need not */
    cm_boot_abort(cm_rt.boot, status, msg);
}

/* A lost peer (rma/cm_heartbeat.c said so): no PMIx_Abort, whose server may be the one lost. */
static void cm_rt_peer_lost(void *arg)
{
    (void)arg;
    cm_rt_trace_close(true);
    cm_exit_record_end(true);
}

cm_status_t cm_runtime_layout(const cm_config_t *cfg, size_t page_size, size_t meta_needed,
                              cm_layout_t *out)
{
    const uintptr_t gib = (uintptr_t)1 << 30;
    uintptr_t page = (uintptr_t)page_size;
    size_t meta, shared;

    if (cfg->shared_base % page != 0) {
        cm_error("CM_SHARED_BASE=0x%" PRIxPTR " is not a multiple of the page size (%zu)",
                 cfg->shared_base, page_size);
        return CM_ERR_INVALID;
    }
    if (cfg->shared_size == 0) {
        cm_error("CM_SHARED_SIZE must not be 0");
        return CM_ERR_INVALID;
    }
    if (cfg->meta_size != 0 && cfg->meta_size < meta_needed) {
        cm_error("CM_META_SIZE=%zu is too small for this job: it needs %zu bytes (or 0 for "
                 "automatic)", cfg->meta_size, meta_needed);
        return CM_ERR_INVALID;
    }
    meta   = (((cfg->meta_size != 0) ? cfg->meta_size : meta_needed) + page - 1) / page * page;
    shared = (cfg->shared_size + page - 1) / page * page;
    /* The network view sits above the application view, from the next GiB boundary on. */
    if (shared > ((uintptr_t)1 << 46) || cfg->shared_base > ((uintptr_t)1 << 47) ||
        cfg->shared_base < meta + CM_META_ALIGN ||
        cfg->shared_base + 2 * ((shared + gib - 1) / gib * gib) > ((uintptr_t)1 << 47)) {
        cm_error("CM_SHARED_BASE=0x%" PRIxPTR " with CM_SHARED_SIZE=%zu does not fit in the "
                 "address space (it needs twice the size above the base, and the metadata below)",
                 cfg->shared_base, cfg->shared_size);
        return CM_ERR_INVALID;
    }
    out->meta_base   = (cfg->shared_base - meta) / CM_META_ALIGN * CM_META_ALIGN;
    out->meta_size   = meta;
    out->app_base    = cfg->shared_base;
    out->net_base    = (cfg->shared_base + shared + gib - 1) / gib * gib;
    out->shared_size = shared;
    return CM_OK;
}

/* A page fault as the outermost frame of what it waits for (CM_STUCK_REPORT). */
static cm_status_t cm_rt_fault(void *addr, bool write)
{
    uint64_t t0 = cm_trace_begin();
    cm_status_t status;

    cm_rma_why_push(cm_rt.rma, CM_RMA_WHY("a %s fault on shared page %a", write ? "write" : "read",
                                          ((uintptr_t)addr - (uintptr_t)cm_rt.shared_base) /
                                              cm_rt.page_size, 0, -1));
    status = cm_rt.proto->fault(addr, write);
    cm_rma_why_pop(cm_rt.rma);
    cm_trace_end(write ? CM_TRACE_FAULT_WRITE : CM_TRACE_FAULT_READ, t0,
                 ((uintptr_t)addr - (uintptr_t)cm_rt.shared_base) / cm_rt.page_size, -1, 0);
    return status;
}


static int cm_rt_init(int *argc, char ***argv)
{
    char err[512];
    cm_rma_params_t rma_params = {0};
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    cm_status_t status;

    (void)argc;
    (void)argv;
    if (cm_rt.initialized) {
        return CM_OK;
    }
    cm_rt.start_time = cm_wall_time();

    /* Bad settings and unknown CM_* names stop every rank before any work, each with the
     * same one line (cmrun refuses them once, before it starts any rank). */
    if (cm_config_load(&cm_rt.config, environ, err, sizeof(err)) != CM_OK ||
        cm_config_unknown_line(environ, err, sizeof(err)) > 0) {
        cm_fatal(1, "%s", err);
    }
    cm_log_level = (cm_log_level_t)cm_rt.config.log_level;
    cm_ticks_calibrate();
    /* Joined already before main when stdin had to be shared (src/runtime/cm_preinit.c). */
    cm_rt.boot = cm_preinit.boot;
    cm_preinit.boot = NULL;
    if (cm_rt.boot == NULL) {
        status = cm_boot_init(&cm_rt.boot);
        if (status != CM_OK) {
            goto err;
        }
    }
    cm_rt.rank   = cm_boot_rank(cm_rt.boot);
    cm_rt.nprocs = cm_boot_size(cm_rt.boot);
    cm_log_set_rank(cm_rt.rank);
    cm_log_set_abort_hook(cm_rt_abort_hook);
    if (cm_rt.config.run_dir[0] != '\0') {
        cm_exit_record_start(cm_rt.config.run_dir, cm_rt.rank);
    }

    if (cm_config_page_size(&cm_rt.config) != 0) {
        page = cm_config_page_size(&cm_rt.config); /* else cm_check_job refuses it below */
    }
    cm_rt.page_size = page;
    cm_rt.npages    = (cm_rt.config.shared_size + page - 1) / page;
    {
        /* Before UCX: a refusal is the one line below, not a transport's errors. The machine
         * (address space, files) was checked by cmrun before launching, if it launched the job. */
        cm_check_job_t job = {
            .nprocs         = cm_rt.nprocs,
            .local_procs    = cm_boot_local_size(cm_rt.boot),
            .address_budget = cm_rt.config.checked ? 0 : cm_check_address_budget(),
            .files          = !cm_rt.config.checked && cm_rt.rank == 0,
        };
        status = cm_check_job(&cm_rt.config, &job, page, &cm_rt.meta, &cm_rt.layout);
        if (status != CM_OK) {
            goto err;
        }
    }

    rma_params.boot        = cm_rt.boot;
    rma_params.progress    = (cm_rt.config.progress_thread == CM_PROGRESS_ON)    ? CM_RMA_PROGRESS_ON
                             : (cm_rt.config.progress_thread == CM_PROGRESS_OFF) ? CM_RMA_PROGRESS_OFF
                                                                                : CM_RMA_PROGRESS_AUTO;
    /* TreadMarks serves requests while the application computes: the thread is its "interrupt". */
    if (cm_rt.config.protocol == CM_PROTOCOL_TREADMARKS && rma_params.progress == CM_RMA_PROGRESS_AUTO) {
        rma_params.progress = CM_RMA_PROGRESS_ON;
    }
    rma_params.handoff_ns  = cm_rt.config.progress_handoff;
    rma_params.delay = (cm_rma_delay_cfg_t){.latency_ns   = cm_rt.config.net_latency,
                                            .bandwidth    = cm_rt.config.net_bandwidth,
                                            .overhead_ns  = cm_rt.config.net_overhead,
                                            .occupancy_ns = cm_rt.config.net_occupancy,
                                            .packet       = cm_rt.config.net_packet,
                                            .interrupt_ns = cm_rt.config.net_interrupt};
    rma_params.wait        = (cm_rt.config.wait == CM_WAIT_SPIN)    ? CM_RMA_WAIT_SPIN
                             : (cm_rt.config.wait == CM_WAIT_BLOCK) ? CM_RMA_WAIT_BLOCK
                                                                    : CM_RMA_WAIT_AUTO;
    rma_params.wait_spin_ns = cm_rt.config.wait_spin;
    rma_params.heartbeat.timeout_ns = cm_rt.config.peer_timeout;
    rma_params.heartbeat.lost       = cm_rt_peer_lost;
    rma_params.stuck_ns             = cm_rt.config.stuck_report;
    status = cm_rma_init(&rma_params, &cm_rt.rma);
    if (status != CM_OK) {
        goto err;
    }

    /* A network that pins registered memory must have room for the region and its metadata:
     * refused here, in one line per host, rather than killed by the kernel mid-registration. */
    {
        size_t need = cm_rt.layout.meta_size + cm_rt.layout.shared_size, limit;
        char why[160];
        bool pins;

        status = cm_rma_pin_budget(cm_rt.rma, cm_boot_local_size(cm_rt.boot), &pins, &limit, why,
                                   sizeof(why));
        if (status != CM_OK) {
            goto err;
        }
        if (pins && need > limit) {
            if (cm_boot_local_rank(cm_rt.boot) == 0) {
                double part = (double)cm_rt.layout.shared_size / (double)need;
                cm_error("CM_SHARED_SIZE=%zum: the network pins registered memory (no on-demand "
                         "paging), and the region with its metadata needs %.1f GiB per process, "
                         "more than one may pin (%s): set CM_SHARED_SIZE to at most %zum",
                         cm_rt.layout.shared_size >> 20, (double)need / (1 << 30), why,
                         (size_t)((double)limit * part) >> 20);
            }
            status = CM_ERR_NO_MEMORY;
            goto err;
        }
        if (pins) {
            cm_debug("registration pins memory: %zu bytes of %zu allowed (%s)", need, limit, why);
        }
    }

    /* The atomic (UCX-allocated) segment first: it tells which peers share this node's memory. */
    cm_rt.meta_base = (void *)cm_rt.layout.meta_base;
    cm_rt.meta_size = cm_rt.layout.meta_size;
    cm_rt.scratch   = (char *)cm_rt.meta_base + cm_rt.meta.scratch;
    status = cm_rma_seg_map(cm_rt.rma, cm_rt.meta_base, cm_rt.meta_size, CM_RMA_SEG_ATOMIC,
                            "metadata segment", &cm_rt.meta_seg);
    if (status != CM_OK) {
        goto err;
    }
    status = cm_rma_wait_setup(cm_rt.rma, (char *)cm_rt.meta_base + cm_rt.meta.wait_word,
                               cm_boot_local_size(cm_rt.boot));
    if (status != CM_OK) {
        goto err;
    }
    cm_rt.shared_size = cm_rt.layout.shared_size;
    cm_rt.shared_net  = (void *)cm_rt.layout.net_base;
    status = cm_rma_seg_map(cm_rt.rma, cm_rt.shared_net, cm_rt.shared_size, CM_RMA_SEG_FD,
                            "shared region", &cm_rt.shared_seg);
    if (status != CM_OK) {
        goto err;
    }
    cm_rt.shared_base = (void *)cm_rt.layout.app_base;
    status = cm_rma_seg_map_view(cm_rt.shared_seg, cm_rt.shared_base, PROT_READ | PROT_WRITE,
                                 "shared region");
    if (status != CM_OK) {
        goto err;
    }

    /* The collective heap below, one arena per process for non-collective allocations above. */
    {
        uint64_t local = cm_rt.config.local_heap ? cm_rt.config.local_heap : cm_rt.shared_size / 4;
        if (local >= cm_rt.shared_size) {
            cm_error("CM_LOCAL_HEAP=%" PRIu64 " must be smaller than CM_SHARED_SIZE=%zu", local,
                     cm_rt.shared_size);
            status = CM_ERR_INVALID;
            goto err;
        }
        cm_rt.local_arena = local / (uint64_t)cm_rt.nprocs / page * page;
        cm_rt.local_base  = cm_rt.shared_size - cm_rt.local_arena * (uint64_t)cm_rt.nprocs;
        cm_heap_init(&cm_rt.heap, cm_rt.local_base, page);
        cm_heap_init(&cm_rt.local_heap, cm_rt.local_arena, page);
    }
    switch ((cm_protocol_kind_t)cm_rt.config.protocol) {
    case CM_PROTOCOL_TREADMARKS:
        cm_rt.proto = &cm_protocol_treadmarks;
        break;
    case CM_PROTOCOL_NONE:
        cm_rt.proto = &cm_protocol_none;
        break;
    case CM_PROTOCOL_TWOLEVEL:
        cm_rt.proto = &cm_protocol_twolevel;
        status = cm_rma_hosts_init(cm_rt.rma, &cm_rt.hosts);
        if (status != CM_OK) {
            goto err;
        }
        break;
    default:
        cm_rt.proto = &cm_protocol_cashmere;
        break;
    }
    cm_rt.proto_ctx = (cm_protocol_ctx_t){
        .rank      = cm_rt.rank,
        .nprocs    = cm_rt.nprocs,
        .rma       = cm_rt.rma,
        .app       = cm_rt.shared_base,
        .net       = cm_rt.shared_net,
        .size      = cm_rt.shared_size,
        .page_size = cm_rt.page_size,
        .npages    = cm_rt.npages,
        .meta_base = cm_rt.meta_base,
        .meta      = &cm_rt.meta,
        .config    = &cm_rt.config,
        .hosts     = (cm_rt.config.protocol == CM_PROTOCOL_TWOLEVEL) ? &cm_rt.hosts : NULL,
        .shared_seg = cm_rt.shared_seg,
    };
    status = cm_rt.proto->init(&cm_rt.proto_ctx);
    if (status != CM_OK) {
        goto err;
    }
    status = cm_rt_trace_start();
    if (status != CM_OK) {
        goto err;
    }
    status = cm_sleep_init(&cm_rt.sleep, cm_rt.rma,
                           (uint64_t *)(void *)((char *)cm_rt.meta_base + cm_rt.meta.sleep_maps));
    if (status != CM_OK) {
        goto err;
    }
    cm_exit_crash_watch();
    status = cm_fault_install(cm_rt.shared_base, cm_rt.shared_size, cm_rt_fault);
    if (status != CM_OK) {
        goto err;
    }

    cm_rt.initialized = true;
    cm_libc_region(cm_rt.shared_base, cm_rt.shared_size, cm_rt.page_size);
    cm_exit_guard_install();
    cm_info("rank %d of %d: shared region %p (%zu bytes), metadata %p (%zu bytes), progress "
            "thread %s, peers %s", cm_rt.rank, cm_rt.nprocs, cm_rt.shared_base, cm_rt.shared_size,
            cm_rt.meta_base, cm_rt.meta_size,
            cm_rma_progress_thread_running(cm_rt.rma) ? "on" : "off",
            cm_rma_all_mapped(cm_rt.rma) ? "directly mapped" : "reached by RMA only");
    return CM_OK;

err:
    /* The cause was logged where it was found; end every rank of the job. */
    fflush(stdout);
    if (cm_rt.boot != NULL && cm_rt.nprocs > 1 && cm_log_error_count() == 0) {
        /* A refusal the job shares is said once, by rank 0 or each host's first rank; the
         * others fail quietly. Aborting at once, they raced the one that speaks: the launcher
         * ended it before its line was out (seen across hosts under load). Its abort ends us;
         * if none comes (it failed without a word), ours does. */
        struct timespec ts = {.tv_sec = CM_INIT_QUIET_WAIT_S};
        nanosleep(&ts, NULL);
    }
    cm_rt_abort_hook(1, cm_status_string(status));
    _exit(1);
}

static void cm_rt_finalize(void)
{
    cm_status_t status;

    if (!cm_rt.initialized) {
        return;
    }
    fflush(stdout);
    /* A last release and barrier: everything written reaches its home first. The frame stays
     * until the job's last fence (cm_rma_finalize). */
    cm_rma_why_push(cm_rt.rma, CM_RMA_WHY("cm_finalize", NULL, 0, 0, -1));
    status = cm_rt.proto->barrier();
    if (status != CM_OK) {
        cm_fatal(1, "cm_finalize: %s", cm_status_string(status));
    }
    status = cm_rt_stats_report();
    if (status != CM_OK) {
        cm_fatal(1, "cm_finalize: %s", cm_status_string(status));
    }
    status = cm_rt_trace_clock();
    if (status != CM_OK) {
        cm_fatal(1, "cm_finalize: %s", cm_status_string(status));
    }
    cm_fault_uninstall();
    cm_libc_region(NULL, 0, 0);
    cm_rt.proto->fini();
    cm_rma_hosts_free(&cm_rt.hosts);
    cm_heap_fini(&cm_rt.heap);
    cm_heap_fini(&cm_rt.local_heap);
    munmap(cm_rt.shared_base, cm_rt.shared_size);
    status = cm_rma_finalize(cm_rt.rma);
    cm_rt.rma = NULL;
    if (status != CM_OK) {
        cm_fatal(1, "cm_finalize: %s", cm_status_string(status));
    }
    cm_rt_trace_close(false); /* every thread that records has ended */
    cm_log_set_abort_hook(NULL);
    cm_boot_finalize(cm_rt.boot);
    cm_rt.boot = NULL;
    cm_config_release(&cm_rt.config);
    cm_rt.initialized = false;
    cm_exit_record_end(false);
}

int cm_init(int *argc, char ***argv)
{
    int rc;

    CM_RT_ENTER();
    rc = cm_rt_init(argc, argv);
    CM_RT_LEAVE();
    return rc;
}

void cm_finalize(void)
{
    CM_RT_ENTER();
    cm_rt_finalize();
    CM_RT_LEAVE();
}

static void cm_rt_require(const char *fn)
{
    if (!cm_rt.initialized) {
        cm_fatal(1, "%s called before cm_init", fn);
    }
}

int cm_rank(void)
{
    cm_rt_require("cm_rank");
    return cm_rt.rank;
}

int cm_nprocs(void)
{
    cm_rt_require("cm_nprocs");
    return cm_rt.nprocs;
}

double cm_wtime(void)
{
    return cm_time_sec();
}

void cm_abort(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cm_fatalv(status, fmt, ap);
}
