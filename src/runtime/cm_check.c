/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "src/runtime/cm_check.h"
#include "util/cm_error.h"
#include "util/cm_log.h"
#include "util/cm_variant.h"
#include "directory/cm_dir.h"
#include "src/protocols/cm_protocol.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether UCX_TLS (if set) lets UCX use a shared-memory transport that maps peers' memory. */
bool cm_check_tls_maps(void)
{
    const char *tls = getenv("UCX_TLS");
    bool exclude, named = false;
    char buf[256], *tok, *save = NULL;

    if (tls == NULL || *tls == '\0') {
        return true;
    }
    exclude = (tls[0] == '^');
    snprintf(buf, sizeof(buf), "%s", tls + (exclude ? 1 : 0));
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "all") == 0 || strcmp(tok, "sm") == 0 || strcmp(tok, "shm") == 0) {
            named = named || !exclude; /* "^sm" excludes them all */
            if (exclude) {
                return false;
            }
        } else if (strcmp(tok, "posix") == 0 || strcmp(tok, "sysv") == 0) {
            named = true;
        }
    }
    /* A list names what UCX may use; an exclusion list must not leave both out. */
    return exclude ? !(strstr(tls, "posix") && strstr(tls, "sysv")) : named;
}

int cm_check_max_procs(const cm_config_t *cfg, const char **setting, const char **reason)
{
    if (cfg->protocol == CM_PROTOCOL_NONE) {
        *setting = "CM_PROTOCOL=none";
        *reason  = "the sequential baseline: no coherence between processes";
        return 1;
    }
    if (cfg->protocol == CM_PROTOCOL_TWOLEVEL) {
        *setting = "CM_PROTOCOL=twolevel";
        *reason  = "its notice bins and barrier; a directory word holds 16 hosts";
        return CM_DIR_MAX_PROCS_MCS;
    }
    if (cfg->protocol == CM_PROTOCOL_TREADMARKS) {
        *setting = "CM_PROTOCOL=treadmarks";
        *reason  = "as many as the Cashmere directory";
        return cm_protocol_treadmarks.max_procs;
    }
    if (cfg->directory == CM_DIRECTORY_CAS || cfg->directory == CM_DIRECTORY_ADD) {
        *setting = (cfg->directory == CM_DIRECTORY_CAS) ? "CM_DIRECTORY=cas" : "CM_DIRECTORY=add";
        *reason  = "a directory entry is one 64-bit word; mcs goes to 64";
        return CM_DIR_MAX_PROCS_CAS;
    }
    *setting = "CM_PROTOCOL=cashmere";
    *reason  = "the directory's sharer sets have 64 bits";
    return CM_DIR_MAX_PROCS_MCS;
}

cm_status_t cm_check_cost(const cm_config_t *cfg, int nprocs, size_t page, uint64_t shared_size,
                          cm_check_cost_t *cost)
{
    uint64_t npages = (shared_size + page - 1) / page;
    const cm_variant_info_t *row = &cm_variants[cfg->variant];
    cm_meta_layout_t meta;
    uint64_t per_page_meta;

    memset(cost, 0, sizeof(*cost));
    if (npages == 0 || cm_meta_layout_compute(npages, (uint32_t)nprocs, (uint32_t)cfg->locks,
                                              (uint32_t)cfg->wn_ring, page, &meta) != CM_OK) {
        return CM_ERR_INVALID;
    }
    /* In the segment, per page: a directory entry at its directory home, a pending word. */
    per_page_meta = (uint64_t)CM_DIR_ENTRY_BYTES / (uint64_t)nprocs + sizeof(uint64_t);
    cost->npages   = npages;
    cost->per_page = per_page_meta + CM_META_PAGE_PRIVATE;
    cost->fixed    = meta.total - meta.dir_per_proc * CM_DIR_ENTRY_BYTES - npages * sizeof(uint64_t);
    /* Both views of the region, the segment (CM_META_SIZE if larger), the page tables; the
     * watched-line map of software writes (4 bytes per 64-byte line); the offload engine's
     * twins (a page each). */
    cost->reserved = 2 * npages * page + ((cfg->meta_size > meta.total) ? cfg->meta_size : meta.total) +
                     npages * CM_META_PAGE_PRIVATE;
    if (cfg->protocol == CM_PROTOCOL_CASHMERE && row->write == CM_WRITE_HOOKS) {
        cost->reserved += npages * page / 16;
    }
    if (cfg->protocol == CM_PROTOCOL_CASHMERE && row->write == CM_WRITE_OFFLOAD) {
        cost->reserved += npages * page;
    }
    if (cfg->protocol == CM_PROTOCOL_TWOLEVEL) {
        /* The host's copy and twins are shared by its processes: each maps the copy once more
         * (but the leader) and the twins, and the host's page records. */
        cost->reserved += 2 * npages * page + npages * CM_META_PAGE_HOST;
        cost->host_per_page = 2 * page + CM_META_PAGE_HOST;
    }
    return CM_OK;
}

uint64_t cm_check_shared_fit(const cm_config_t *cfg, int nprocs, size_t page, uint64_t budget)
{
    uint64_t lo = 0, hi = UINT32_MAX, unit, fit; /* pages; page numbers are 32-bit */
    cm_check_cost_t c;

    /* The reservation grows with the page count: the largest count that fits, by bisection. */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (cm_check_cost(cfg, nprocs, page, mid * page, &c) == CM_OK && c.reserved <= budget) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    fit  = lo * page;
    unit = (fit >= (16ull << 30)) ? (1ull << 30) : (fit >= (16ull << 20)) ? (1ull << 20) : 1024;
    fit  = fit / unit * unit; /* a number a user would type */
    return (fit >= page) ? fit : 0;
}

uint64_t cm_check_address_budget(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
        return 0;
    }
    return (uint64_t)rl.rlim_cur;
}

/* "20.0 GiB" */
static void cm_check_human(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;

    while (v >= 1024 && u < 6) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* "150g", as CM_SHARED_SIZE takes it */
static void cm_check_size_setting(uint64_t bytes, char *buf, size_t len)
{
    if (bytes % (1ull << 30) == 0) {
        snprintf(buf, len, "%" PRIu64 "g", bytes >> 30);
    } else if (bytes % (1ull << 20) == 0) {
        snprintf(buf, len, "%" PRIu64 "m", bytes >> 20);
    } else if (bytes % 1024 == 0) {
        snprintf(buf, len, "%" PRIu64 "k", bytes >> 10);
    } else {
        snprintf(buf, len, "%" PRIu64, bytes);
    }
}

/* The region and its metadata are reserved whole in every process: they must fit the address
 * space a process may have (memory is committed only for what the program touches). */
static cm_status_t cm_check_address_space(const cm_config_t *cfg, const cm_check_job_t *job,
                                          size_t page)
{
    const char *given = cfg->raw[CM_CONFIG_IDX_shared_size];
    cm_check_cost_t c;
    uint64_t fit;
    char need[32], avail[32], fits[32];

    if (cm_check_cost(cfg, job->nprocs, page, cfg->shared_size, &c) != CM_OK) {
        return CM_ERR_INVALID;
    }
    if (c.reserved <= job->address_budget) {
        return CM_OK;
    }
    cm_check_human(c.reserved, need, sizeof(need));
    cm_check_human(job->address_budget, avail, sizeof(avail));
    fit = cm_check_shared_fit(cfg, job->nprocs, page, job->address_budget);
    if (fit == 0) {
        cm_error("CM_SHARED_SIZE=%s needs %s of address space per process, and a process here "
                 "may have %s (ulimit -v): no shared size fits", given ? given : "64g", need,
                 avail);
        return CM_ERR_NO_MEMORY;
    }
    cm_check_size_setting(fit, fits, sizeof(fits));
    cm_error("CM_SHARED_SIZE=%s needs %s of address space per process (reserved; memory is "
             "committed only where touched), and a process here may have %s (ulimit -v): at "
             "most CM_SHARED_SIZE=%s fits", given ? given : "64g", need, avail, fits);
    return CM_ERR_NO_MEMORY;
}

/* A file the job will write at its end: found unwritable now, not after the run. */
static cm_status_t cm_check_output(const char *name, const char *path)
{
    struct stat st;
    char *copy, *dir;
    cm_status_t status = CM_OK;

    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            cm_error("%s=%s: cannot write there: it is a directory", name, path);
            return CM_ERR_IO;
        }
        if (access(path, W_OK) != 0) {
            cm_error("%s=%s: cannot write there: %s", name, path, strerror(errno));
            return CM_ERR_IO;
        }
        return CM_OK;
    }
    copy = strdup(path);
    if (copy == NULL) {
        cm_error("%s: out of memory", name);
        return CM_ERR_NO_MEMORY;
    }
    dir = dirname(copy);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cm_error("%s=%s: cannot write there: directory %s does not exist", name, path, dir);
        status = CM_ERR_IO;
    } else if (access(dir, W_OK | X_OK) != 0) {
        cm_error("%s=%s: cannot create a file in %s: %s", name, path, dir, strerror(errno));
        status = CM_ERR_IO;
    }
    free(copy);
    return status;
}

size_t cm_config_page_size(const cm_config_t *cfg)
{
    size_t sys = (size_t)sysconf(_SC_PAGESIZE), p = (size_t)cfg->page_size;

    if (p == 0) {
        return sys;
    }
    return (p >= sys && p <= 65536 && (p & (p - 1)) == 0) ? p : 0;
}

bool cm_config_net_delayed(const cm_config_t *cfg)
{
    return cfg->net_latency != 0 || cfg->net_bandwidth > 0 || cfg->net_overhead != 0 ||
           cfg->net_occupancy != 0 || cfg->net_interrupt != 0;
}

cm_status_t cm_check_job(const cm_config_t *cfg, const cm_check_job_t *job, size_t page,
                         cm_meta_layout_t *meta, cm_layout_t *layout)
{
    cm_meta_layout_t meta_tmp;
    cm_layout_t layout_tmp;
    const char *setting, *reason;
    int max = cm_check_max_procs(cfg, &setting, &reason);

    if (job->nprocs < 1 || job->nprocs > max) {
        cm_error("the job has %d processes, but %s runs at most %d (%s)", job->nprocs, setting, max,
                 reason);
        return CM_ERR_UNSUPPORTED;
    }
    if (cfg->protocol == CM_PROTOCOL_CASHMERE &&
        !cm_variant_implemented((cm_variant_t)cfg->variant)) {
        char list[128];
        cm_variant_list_implemented(list, sizeof(list));
        cm_error("CM_VARIANT=%s is not implemented yet (implemented: %s)",
                 cm_variants[cfg->variant].name, list);
        return CM_ERR_UNSUPPORTED;
    }
    if (cm_config_page_size(cfg) == 0) {
        cm_error("CM_PAGE_SIZE=%zu: the coherence unit must be a power of two from the system's "
                 "page (%ld bytes) up to 64k, or 0 for the system's page", (size_t)cfg->page_size,
                 sysconf(_SC_PAGESIZE));
        return CM_ERR_INVALID;
    }
    if (cfg->protocol == CM_PROTOCOL_CASHMERE &&
        cm_variants[cfg->variant].fabric == CM_FABRIC_MAP && cm_config_net_delayed(cfg)) {
        cm_error("CM_VARIANT=%s: loads and stores reach the home through a mapping, where no "
                 "network delay can be injected (unset CM_NET_LATENCY, _BANDWIDTH, _OVERHEAD, "
                 "_OCCUPANCY and _INTERRUPT, or use a C or NS variant)",
                 cm_variants[cfg->variant].name);
        return CM_ERR_UNSUPPORTED;
    }
    if (cfg->protocol == CM_PROTOCOL_CASHMERE && job->nprocs > 1 &&
        cm_variants[cfg->variant].fabric == CM_FABRIC_MAP && !cm_check_tls_maps()) {
        cm_error("CM_VARIANT=%s maps each page onto its home's memory, but UCX_TLS=%s leaves out "
                 "the shared-memory transports (posix, sysv) that map peers' memory; use a C or "
                 "NS variant over it", cm_variants[cfg->variant].name, getenv("UCX_TLS"));
        return CM_ERR_UNSUPPORTED;
    }
    if (cfg->protocol == CM_PROTOCOL_CASHMERE && job->nprocs > 1 &&
        cm_variants[cfg->variant].write == CM_WRITE_OFFLOAD &&
        cfg->progress_thread == CM_PROGRESS_OFF && !cm_check_tls_maps()) {
        /* Said here, before launch, once for the job: the ranks' own check (cm_write_offload.c)
         * still covers peers on other nodes, but its one line can be cut off by the launcher
         * ending rank 0 when the others abort first. */
        cm_error("CM_VARIANT=%s forwards writes from an offload thread, which puts to homes not "
                 "mapped here; CM_PROGRESS_THREAD=off makes the transport single-threaded: use "
                 "auto or on", cm_variants[cfg->variant].name);
        return CM_ERR_INVALID;
    }
    if (cfg->wait == CM_WAIT_BLOCK && cfg->progress_thread == CM_PROGRESS_OFF && job->nprocs > 1) {
        cm_error("CM_WAIT=block: a blocked wait hands the peers' requests to the progress thread, "
                 "and CM_PROGRESS_THREAD=off");
        return CM_ERR_INVALID;
    }
    meta   = meta ? meta : &meta_tmp;
    layout = layout ? layout : &layout_tmp;
    CM_CHECK(cm_meta_layout_compute((cfg->shared_size + page - 1) / page, (uint32_t)job->nprocs,
                                    (uint32_t)cfg->locks, (uint32_t)cfg->wn_ring, page, meta));
    CM_CHECK(cm_runtime_layout(cfg, page, meta->total, layout));
    if (job->address_budget != 0) {
        CM_CHECK(cm_check_address_space(cfg, job, page));
    }
    /* Page numbers are 32-bit in the protocols' page lists. */
    if (meta->npages > UINT32_MAX) {
        cm_error("CM_SHARED_SIZE=%zu has more than %" PRIu32 " pages of %zu bytes: at most "
                 "CM_SHARED_SIZE=%" PRIu64 "g", cfg->shared_size, UINT32_MAX, page,
                 ((uint64_t)UINT32_MAX * page) >> 30);
        return CM_ERR_INVALID;
    }
    if (job->files && cfg->stats[0] != '\0' && strcmp(cfg->stats, "table") != 0) {
        CM_CHECK(cm_check_output("CM_STATS", cfg->stats));
    }
    if (job->files && cm_check_tracing(cfg)) {
        char path[4096];

        snprintf(path, sizeof(path), "%s.0.cmtrace", cfg->trace);
        CM_CHECK(cm_check_output("CM_TRACE", path));
    }
    return CM_OK;
}

bool cm_check_tracing(const cm_config_t *cfg)
{
    return cfg->trace != NULL && cfg->trace[0] != '\0' && strcmp(cfg->trace, "off") != 0;
}
