/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The statistics report at cm_finalize: every process puts its counters and where it ran
 * into rank 0's metadata segment; rank 0 describes the run (program, protocol, variant and
 * its mechanisms, job, build, machine, UCX) and prints the table, and writes the JSON of
 * docs/STATS.md where CM_STATS names a file. cm_bench describes its run the same way.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/runtime/cm_runtime.h"
#include "util/cm_variant.h"
#include "util/cm_build.h"
#include "util/cm_error.h"
#include "util/cm_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* What a process puts into rank 0's slot for it. */
typedef struct {
    cm_stats_t       st;
    cm_stats_where_t where;
} cm_rt_stats_slot_t;

_Static_assert(sizeof(cm_rt_stats_slot_t) <= CM_META_STATS_SLOT, "stats slot too small");

/* Adds each '+'-separated name of list to the '+'-separated set in buf, once. */
static void cm_rt_add_names(char *buf, size_t len, const char *list)
{
    while (*list != '\0') {
        size_t n = strcspn(list, "+"), used = strlen(buf);
        bool have = false;

        for (const char *p = buf; *p != '\0'; p += strcspn(p, "+"), p += (*p == '+')) {
            if (strncmp(p, list, n) == 0 && (p[n] == '+' || p[n] == '\0')) {
                have = true;
                break;
            }
        }
        if (!have && n > 0 && used + n + 2 <= len) {
            snprintf(buf + used, len - used, "%s%.*s", used ? "+" : "", (int)n, list);
        }
        list += n + (list[n] == '+');
    }
}

/* Where this process runs: host, processes on its node, pid, the transports to its peers. */
static void cm_rt_where(cm_stats_where_t *w)
{
    memset(w, 0, sizeof(*w));
    if (gethostname(w->host, sizeof(w->host) - 1) != 0) {
        snprintf(w->host, sizeof(w->host), "unknown");
    }
    w->local_procs = cm_boot_local_size(cm_rt.boot);
    w->pid         = (int32_t)getpid();
    for (int pe = 0; pe < cm_rt.nprocs; pe++) {
        char path[128];
        if (pe != cm_rt.rank) {
            cm_rma_describe_peer(cm_rt.rma, pe, path, sizeof(path));
            cm_rt_add_names(w->transports, sizeof(w->transports), path);
        }
    }
}

/* The program and its arguments, from /proc/self/cmdline (whatever the program gave cm_init). */
static void cm_rt_run_cmdline(cm_rt_run_t *info)
{
    FILE *f = fopen("/proc/self/cmdline", "r");
    size_t len = 0, cap = 0;
    int n = 0;
    const char *name;

    info->cmdline = NULL;
    if (f != NULL) {
        size_t got;
        do {
            char *bigger;
            cap = cap ? 2 * cap : 4096;
            if ((bigger = realloc(info->cmdline, cap + 1)) == NULL) {
                break;
            }
            info->cmdline = bigger;
            got = fread(info->cmdline + len, 1, cap - len, f);
            len += got;
        } while (len == cap);
        fclose(f);
    }
    if (info->cmdline == NULL || len == 0) {
        name = program_invocation_name;
    } else {
        info->cmdline[len] = '\0';
        for (size_t i = 0; i < len; i++) {
            n += (info->cmdline[i] == '\0');
        }
        info->args = calloc((size_t)n + 1, sizeof(*info->args));
        name = info->cmdline;
        if (info->args != NULL) {
            const char *p = info->cmdline + strlen(info->cmdline) + 1;
            for (int i = 1; i < n; i++, p += strlen(p) + 1) {
                info->args[i - 1] = p;
            }
            info->run.args  = info->args;
            info->run.nargs = n - 1;
        }
    }
    snprintf(info->binary, sizeof(info->binary), "%s",
             strrchr(name, '/') ? strrchr(name, '/') + 1 : name);
    /* cmrun runs PROG.hooks or PROG.access for a variant that needs checks: the program is PROG. */
    snprintf(info->program, sizeof(info->program), "%s", info->binary);
    for (int b = CM_BUILD_PLAIN; b <= CM_BUILD_ACCESSES; b++) {
        const char *suffix = cm_build_suffix((cm_build_kind_t)b);
        size_t pl = strlen(info->program), sl = strlen(suffix);
        if (sl > 0 && pl > sl && strcmp(info->program + pl - sl, suffix) == 0) {
            info->program[pl - sl] = '\0';
        }
    }
    info->run.binary  = info->binary;
    info->run.program = info->program;
}

void cm_rt_run_describe(cm_rt_run_t *info, const cm_stats_where_t *where, int nwhere)
{
    cm_stats_run_t *run = &info->run;
    cm_stats_where_t mine;
    struct utsname u;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);

    memset(info, 0, sizeof(*info));
    cm_rt_run_cmdline(info);
    run->protocol    = cm_protocol_name();
    run->description = cm_rt.proto->describe();
    run->variant     = cm_variant_name();
    if (run->variant != NULL) {
        const cm_variant_info_t *row = &cm_variants[cm_rt.config.variant];
        run->fill    = cm_fill_mechanisms[row->fill].name;
        run->write   = cm_write_mechanisms[row->write].name;
        run->merge   = cm_merge_mechanisms[row->merge].name;
        run->build   = cm_build_name(row->build);
        run->fabric  = (row->fabric == CM_FABRIC_MAP) ? "map" : "any";
    }
    if (where == NULL) {
        cm_rt_where(&mine);
        where  = &mine;
        nwhere = 1;
    }
    run->nprocs    = cm_rt.nprocs;
    run->page_size = cm_rt.page_size;
    if (nwhere == cm_rt.nprocs) {
        /* Every process's host known: count the nodes, and the processes on each. */
        run->procs_per_node = where[0].local_procs;
        for (int r = 0; r < nwhere; r++) {
            bool seen = false;
            for (int q = 0; q < r && !seen; q++) {
                seen = (strcmp(where[q].host, where[r].host) == 0);
            }
            run->nodes += !seen;
            if (where[r].local_procs != run->procs_per_node) {
                run->procs_per_node = 0;
            }
        }
    } else if (where[0].local_procs == cm_rt.nprocs) {
        run->nodes          = 1; /* all of them on rank 0's node */
        run->procs_per_node = cm_rt.nprocs;
    }
    for (int r = 0; r < nwhere; r++) {
        cm_rt_add_names(info->transports, sizeof(info->transports), where[r].transports);
    }
    run->transports = info->transports;
    run->version    = cm_build_version();
    run->commit     = cm_build_commit();
    snprintf(info->hostname, sizeof(info->hostname), "%s", where[0].host);
    run->hostname = info->hostname;
    run->cores    = (cores > 0) ? (int)cores : 0;
    if (uname(&u) == 0) {
        snprintf(info->kernel, sizeof(info->kernel), "%s %s %s", u.sysname, u.release, u.machine);
        run->kernel = info->kernel;
    }
    run->ucx_version = ucp_get_version_string();
    run->ucx_tls     = getenv("UCX_TLS");
    run->start       = cm_rt.start_time;
    run->end         = cm_wall_time();
}

void cm_rt_run_release(cm_rt_run_t *info)
{
    free(info->args);
    free(info->cmdline);
    info->args    = NULL;
    info->cmdline = NULL;
}

cm_status_t cm_rt_stats_report(void)
{
    const char *where = cm_rt.config.stats;
    char *base = (char *)cm_rt.meta_base + cm_rt.meta.stats;
    cm_rt_stats_slot_t mine;
    cm_stats_t *all;
    cm_stats_where_t *at;
    cm_rt_run_t info;
    cm_status_t status = CM_OK;

    if (where == NULL || where[0] == '\0') {
        return CM_OK;
    }
    if (cm_rt.stats_stopped) {
        mine.st = cm_rt.stats_at_stop;
    } else {
        cm_rt_stats_take(&mine.st);
    }
    {
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) == 0) {
            mine.st.peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024; /* KiB on Linux */
        }
    }
    cm_rt_where(&mine.where);
    CM_CHECK(cm_rma_put(cm_rt.rma, 0, base + (size_t)cm_rt.rank * CM_META_STATS_SLOT, &mine,
                        sizeof(mine)));
    CM_CHECK(cm_rma_barrier(cm_rt.rma));
    if (cm_rt.rank != 0) {
        return CM_OK;
    }
    all = calloc((size_t)cm_rt.nprocs, sizeof(*all));
    at  = calloc((size_t)cm_rt.nprocs, sizeof(*at));
    if (all == NULL || at == NULL) {
        free(all);
        free(at);
        cm_error("out of memory for the statistics of %d processes", cm_rt.nprocs);
        return CM_ERR_NO_MEMORY;
    }
    for (int r = 0; r < cm_rt.nprocs; r++) {
        const cm_rt_stats_slot_t *slot = (const void *)(base + (size_t)r * CM_META_STATS_SLOT);
        all[r] = slot->st;
        at[r]  = slot->where;
        at[r].host[sizeof(at[r].host) - 1]             = '\0';
        at[r].transports[sizeof(at[r].transports) - 1] = '\0';
    }
    cm_rt_run_describe(&info, at, cm_rt.nprocs);
    {
        char header[1024];
        snprintf(header, sizeof(header), "%d processes; %s", cm_rt.nprocs, info.run.description);
        /* A file is the statistics' destination; the table would only bury the output. */
        if (strcmp(where, "table") == 0) {
            cm_stats_print_table(stderr, all, cm_rt.nprocs, header);
        }
    }
    if (strcmp(where, "table") != 0) {
        FILE *f = fopen(where, "w");
        if (f == NULL) {
            cm_error("CM_STATS=%s: cannot write: %s", where, strerror(errno));
            status = CM_ERR_IO;
        } else {
            cm_stats_write_json(f, &info.run, at, all, cm_rt.nprocs);
            if (fclose(f) != 0) {
                cm_error("CM_STATS=%s: cannot write: %s", where, strerror(errno));
                status = CM_ERR_IO;
            }
        }
    }
    cm_rt_run_release(&info);
    free(all);
    free(at);
    return status;
}
