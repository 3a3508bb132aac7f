/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bootstrap: the job's size, this process's rank, and an out-of-band
 * key/value exchange with barrier semantics, provided by the process manager
 * through PMIx (Put/Commit/Fence/Get). Without a launcher the job is a
 * singleton: rank 0 of 1, and the exchange is local.
 */
#ifndef CM_BOOT_H
#define CM_BOOT_H

#include "cm.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct cm_boot cm_boot_t;

/* Called while a collective waits, so that this process keeps serving one-sided operations. */
typedef unsigned (*cm_boot_progress_fn_t)(void *arg);

/*
 * Connects to the process manager. If there is none, runs as a singleton,
 * unless the environment shows a launcher started several processes without
 * PMIx (e.g. srun without --mpi=pmix): then fails with a message saying how to
 * launch, since N singletons would each silently compute alone.
 */
cm_status_t cm_boot_init(cm_boot_t **boot_p);
void cm_boot_finalize(cm_boot_t *boot);

int cm_boot_rank(const cm_boot_t *boot);
int cm_boot_size(const cm_boot_t *boot);
bool cm_boot_is_singleton(const cm_boot_t *boot);
/* Number of ranks on this node, and this rank's index among them. */
int cm_boot_local_size(const cm_boot_t *boot);
int cm_boot_local_rank(const cm_boot_t *boot);
/* The ranks the process manager placed on this host (PMIX_LOCAL_PEERS), this one included, in
 * its order; *ranks is malloc'ed. */
cm_status_t cm_boot_local_peers(cm_boot_t *boot, int **ranks, int *n);
/* Namespace of the job ("singleton.<pid>" without launcher). */
const char *cm_boot_job_id(const cm_boot_t *boot);

/* Publishes a value under key, for every rank to get after the next exchange. */
cm_status_t cm_boot_put(cm_boot_t *boot, const char *key, const void *data, size_t len);

/*
 * Commits what was put and waits until every rank has done the same
 * (collective, data collected). Calls progress(arg) while waiting. A peer that
 * died meanwhile is reported as CM_ERR_PEER_FAILED.
 */
cm_status_t cm_boot_exchange(cm_boot_t *boot, cm_boot_progress_fn_t progress, void *arg);

/* A barrier through the process manager (no data). */
cm_status_t cm_boot_fence(cm_boot_t *boot, cm_boot_progress_fn_t progress, void *arg);

/* Fetches rank's value for key after an exchange; *data is malloc'ed. */
cm_status_t cm_boot_get(cm_boot_t *boot, int rank, const char *key, void **data, size_t *len);

/* Asks the process manager to end the whole job (returns; the caller exits). */
void cm_boot_abort(cm_boot_t *boot, int status, const char *msg);

#endif
