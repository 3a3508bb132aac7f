/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What can be known about a job before it starts, checked in one place: the
 * protocol's process limit, the variant table, the address-space layout, the
 * machine's memory for the metadata, and the files the job will write. cmrun
 * runs it once before launching (`cm_info --check -n N`); cm_init runs it on
 * every rank for jobs started without cmrun. Every refusal is one line.
 */
#ifndef CM_CHECK_H
#define CM_CHECK_H

#include "src/util/cm_config.h"
#include "src/cm_meta.h"
#include "src/cm_runtime.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int      nprocs;        /* processes in the job */
    int      local_procs;   /* of them on this machine: the memory check counts these */
    uint64_t memory_budget; /* bytes their metadata may take here; 0: memory not checked */
    bool     files;         /* check that the files the job writes (CM_STATS) can be written */
} cm_check_job_t;

/* The most processes the configured protocol runs, the setting that decides it, and why. */
/* Whether UCX_TLS (if set) lets UCX use a shared-memory transport that maps peers' memory. */
bool cm_check_tls_maps(void);

int cm_check_max_procs(const cm_config_t *cfg, const char **setting, const char **reason);

/*
 * Bytes of metadata each process sets up for a shared region of shared_size
 * bytes, used or not: its metadata segment and its private page tables.
 */
uint64_t cm_check_meta_bytes(const cm_config_t *cfg, int nprocs, size_t page, uint64_t shared_size);

/*
 * The largest round shared size (whole GiB, MiB or KiB) whose metadata for
 * local_procs processes fits in budget bytes; 0 if not even one page does.
 */
uint64_t cm_check_shared_fit(const cm_config_t *cfg, int nprocs, int local_procs, size_t page,
                             uint64_t budget);

/* What the metadata may take on this machine: half the memory available (0 if unknown). */
uint64_t cm_check_memory_budget(void);

/*
 * Checks the job and computes its layouts (meta, layout may be NULL). Logs the
 * first problem found as one line and returns its status.
 */
cm_status_t cm_check_job(const cm_config_t *cfg, const cm_check_job_t *job, size_t page,
                         cm_meta_layout_t *meta, cm_layout_t *layout);

#endif
