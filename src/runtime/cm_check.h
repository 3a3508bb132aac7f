/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What can be known about a job before it starts, checked in one place: the
 * protocol's process limit, the variant table, the address-space layout and
 * what a process may reserve of it, and the files the job will write. cmrun
 * runs it once before launching (`cm_info --check -n N`); cm_init runs it on
 * every rank for jobs started without cmrun. Every refusal is one line.
 */
#ifndef CM_CHECK_H
#define CM_CHECK_H

#include "util/cm_config.h"
#include "src/protocols/cm_meta.h"
#include "src/runtime/cm_runtime.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int      nprocs;        /* processes in the job */
    int      local_procs;   /* of them on this machine */
    uint64_t address_budget; /* address space a process may reserve (ulimit -v); 0: unlimited */
    bool     files;         /* check that the files the job writes (CM_STATS) can be written */
} cm_check_job_t;

/* The most processes the configured protocol runs, the setting that decides it, and why. */
/* Whether UCX_TLS (if set) lets UCX use a shared-memory transport that maps peers' memory. */
bool cm_check_tls_maps(void);

int cm_check_max_procs(const cm_config_t *cfg, const char **setting, const char **reason);

/*
 * What a shared region of shared_size bytes costs each process. The region is
 * address space: it is reserved whole (both views, the metadata segment, the
 * page tables), and memory is committed only where pages are touched, at most
 * per_page bytes of metadata per touched page (4 KiB of it at a time) on top
 * of the data, plus at most fixed bytes (locks, rings, statistics) whatever
 * the size.
 */
typedef struct {
    uint64_t reserved;  /* address space per process */
    uint64_t per_page;  /* metadata per touched page, at most */
    uint64_t fixed;     /* metadata independent of the size, at most */
    uint64_t npages;
    uint64_t host_per_page; /* CM_PROTOCOL=twolevel: per touched page, on each host whatever
                               its processes (a copy, a twin where written, a record), at most */
} cm_check_cost_t;

cm_status_t cm_check_cost(const cm_config_t *cfg, int nprocs, size_t page, uint64_t shared_size,
                          cm_check_cost_t *cost);

/* The largest round shared size (whole GiB, MiB or KiB) that a process can reserve within
 * budget bytes of address space; 0 if not even one page. */
uint64_t cm_check_shared_fit(const cm_config_t *cfg, int nprocs, size_t page, uint64_t budget);

/* The address space a process may reserve here: its ulimit -v (0: unlimited). */
uint64_t cm_check_address_budget(void);

/*
 * Checks the job and computes its layouts (meta, layout may be NULL). Logs the
 * first problem found as one line and returns its status.
 */
/* The coherence unit CM_PAGE_SIZE asks for (the system's page for 0); 0 where it is not a
 * power of two from the system's page up to 64 KiB. */
size_t cm_config_page_size(const cm_config_t *cfg);

/* Does the job inject any network delay (a CM_NET_* setting other than the packet size)? */
bool cm_config_net_delayed(const cm_config_t *cfg);

cm_status_t cm_check_job(const cm_config_t *cfg, const cm_check_job_t *job, size_t page,
                         cm_meta_layout_t *meta, cm_layout_t *layout);

/* CM_TRACE names a trace to write (not empty, not "off"). */
bool cm_check_tracing(const cm_config_t *cfg);

#endif
