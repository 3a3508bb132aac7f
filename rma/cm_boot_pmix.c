/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "rma/cm_boot.h"
#include "util/cm_error.h"
#include "util/cm_log.h"

#include <pmix.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Singleton store: what this process put, returned by its own gets. */
typedef struct cm_boot_kv {
    struct cm_boot_kv *next;
    char              *key;
    void              *data;
    size_t            len;
} cm_boot_kv_t;

struct cm_boot {
    bool         singleton;
    pmix_proc_t  me;
    int          rank;
    int          size;
    int          local_rank;
    int          local_size;
    char         job_id[PMIX_MAX_NSLEN + 1];
    cm_boot_kv_t *kv; /* singleton only */
    uint32_t     fences;
};

/*
 * Launchers that start N processes without a PMIx server would make N
 * singletons, each computing alone and "succeeding". Spot them.
 */
static const char *cm_boot_launched_without_pmix(int *ntasks)
{
    static const struct {
        const char *size_var;
        const char *hint;
    } launchers[] = {
        {"SLURM_STEP_NUM_TASKS", "srun without PMIx: use `srun --mpi=pmix` (or cmrun)"},
        {"OMPI_COMM_WORLD_SIZE", "Open MPI's launcher, but its PMIx server is unreachable"},
        {"PMI_SIZE", "a PMI-1/PMI-2 launcher (MPICH hydra?): Cashmere needs PMIx; use cmrun, "
                     "Open MPI's mpirun, prterun or `srun --mpi=pmix`"},
    };
    for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
        const char *v = getenv(launchers[i].size_var);
        if (v != NULL && atoi(v) > 1) {
            *ntasks = atoi(v);
            return launchers[i].hint;
        }
    }
    if (getenv("PMIX_NAMESPACE") != NULL || getenv("PMIX_SERVER_URI41") != NULL ||
        getenv("PMIX_SERVER_URI4") != NULL || getenv("PMIX_SERVER_URI3") != NULL) {
        *ntasks = -1;
        return "the PMIx server named in the environment cannot be reached";
    }
    return NULL;
}

static cm_status_t cm_boot_get_u32(cm_boot_t *boot, int rank, const char *key, uint32_t *out)
{
    pmix_proc_t proc = boot->me;
    pmix_value_t *val = NULL;
    pmix_status_t rc;

    proc.rank = (rank < 0) ? PMIX_RANK_WILDCARD : (pmix_rank_t)rank;
    rc = PMIx_Get(&proc, key, NULL, 0, &val);
    if (rc != PMIX_SUCCESS) {
        return CM_ERR_BOOTSTRAP;
    }
    switch (val->type) {
    case PMIX_UINT32: *out = val->data.uint32; break;
    case PMIX_UINT16: *out = val->data.uint16; break;
    case PMIX_INT:    *out = (uint32_t)val->data.integer; break;
    case PMIX_PROC_RANK: *out = val->data.rank; break;
    default:
        PMIX_VALUE_RELEASE(val);
        return CM_ERR_BOOTSTRAP;
    }
    PMIX_VALUE_RELEASE(val);
    return CM_OK;
}

cm_status_t cm_boot_init(cm_boot_t **boot_p)
{
    cm_boot_t *boot;
    pmix_status_t rc;
    uint32_t v;
    int ntasks = 0;
    const char *hint;

    boot = calloc(1, sizeof(*boot));
    if (boot == NULL) {
        cm_error("bootstrap: out of memory");
        return CM_ERR_NO_MEMORY;
    }

    rc = PMIx_Init(&boot->me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        hint = cm_boot_launched_without_pmix(&ntasks);
        if (hint != NULL) {
            if (ntasks > 0) {
                cm_error("started as one of %d processes by %s (PMIx_Init: %s)", ntasks, hint,
                         PMIx_Error_string(rc));
            } else {
                cm_error("cannot join the job: %s (PMIx_Init: %s)", hint, PMIx_Error_string(rc));
            }
            free(boot);
            return CM_ERR_BOOTSTRAP;
        }
        /* No launcher at all: a 1-process job. */
        boot->singleton  = true;
        boot->rank       = 0;
        boot->size       = 1;
        boot->local_rank = 0;
        boot->local_size = 1;
        snprintf(boot->job_id, sizeof(boot->job_id), "singleton.%d", (int)getpid());
        *boot_p = boot;
        return CM_OK;
    }

    boot->rank = (int)boot->me.rank;
    snprintf(boot->job_id, sizeof(boot->job_id), "%s", boot->me.nspace);
    if (cm_boot_get_u32(boot, -1, PMIX_JOB_SIZE, &v) != CM_OK) {
        cm_error("PMIx: the process manager did not give the job size");
        goto err_finalize;
    }
    boot->size = (int)v;
    boot->local_size = (cm_boot_get_u32(boot, -1, PMIX_LOCAL_SIZE, &v) == CM_OK) ? (int)v : 1;
    boot->local_rank = (cm_boot_get_u32(boot, boot->rank, PMIX_LOCAL_RANK, &v) == CM_OK) ? (int)v : 0;
    *boot_p = boot;
    return CM_OK;

err_finalize:
    PMIx_Finalize(NULL, 0);
    free(boot);
    return CM_ERR_BOOTSTRAP;
}

void cm_boot_finalize(cm_boot_t *boot)
{
    cm_boot_kv_t *kv, *next;

    if (boot == NULL) {
        return;
    }
    if (!boot->singleton) {
        PMIx_Finalize(NULL, 0);
    }
    for (kv = boot->kv; kv != NULL; kv = next) {
        next = kv->next;
        free(kv->key);
        free(kv->data);
        free(kv);
    }
    free(boot);
}

int cm_boot_rank(const cm_boot_t *boot)       { return boot->rank; }
int cm_boot_size(const cm_boot_t *boot)       { return boot->size; }
bool cm_boot_is_singleton(const cm_boot_t *boot) { return boot->singleton; }
int cm_boot_local_size(const cm_boot_t *boot) { return boot->local_size; }
int cm_boot_local_rank(const cm_boot_t *boot) { return boot->local_rank; }
const char *cm_boot_job_id(const cm_boot_t *boot) { return boot->job_id; }

cm_status_t cm_boot_local_peers(cm_boot_t *boot, int **ranks_p, int *n_p)
{
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    pmix_status_t rc;
    const char *s;
    int *ranks, n = 0;

    ranks = calloc((size_t)boot->size, sizeof(*ranks));
    if (ranks == NULL) {
        cm_error("bootstrap: out of memory");
        return CM_ERR_NO_MEMORY;
    }
    if (boot->singleton) {
        ranks[0] = 0;
        *ranks_p = ranks;
        *n_p     = 1;
        return CM_OK;
    }
    PMIX_PROC_CONSTRUCT(&proc);
    PMIX_LOAD_NSPACE(proc.nspace, boot->me.nspace);
    proc.rank = PMIX_RANK_WILDCARD;
    rc = PMIx_Get(&proc, PMIX_LOCAL_PEERS, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || val == NULL || val->type != PMIX_STRING || val->data.string == NULL) {
        cm_error("PMIx: the process manager did not say which ranks share this host "
                 "(PMIX_LOCAL_PEERS: %s)", PMIx_Error_string(rc));
        if (val != NULL) {
            PMIX_VALUE_RELEASE(val);
        }
        free(ranks);
        return CM_ERR_BOOTSTRAP;
    }
    for (s = val->data.string; *s != '\0';) {
        char *end;
        long r = strtol(s, &end, 10);
        if (end == s || r < 0 || r >= boot->size || n == boot->size) {
            cm_error("PMIx: cannot read PMIX_LOCAL_PEERS \"%s\"", val->data.string);
            PMIX_VALUE_RELEASE(val);
            free(ranks);
            return CM_ERR_BOOTSTRAP;
        }
        ranks[n++] = (int)r;
        s = (*end == ',') ? end + 1 : end;
    }
    PMIX_VALUE_RELEASE(val);
    *ranks_p = ranks;
    *n_p     = n;
    return CM_OK;
}

cm_status_t cm_boot_put(cm_boot_t *boot, const char *key, const void *data, size_t len)
{
    pmix_value_t val;
    pmix_status_t rc;

    if (boot->singleton) {
        cm_boot_kv_t *kv = calloc(1, sizeof(*kv));
        if (kv == NULL || (kv->key = strdup(key)) == NULL || (kv->data = malloc(len + 1)) == NULL) {
            if (kv != NULL) {
                free(kv->key);
                free(kv);
            }
            cm_error("bootstrap: out of memory");
            return CM_ERR_NO_MEMORY;
        }
        memcpy(kv->data, data, len);
        kv->len  = len;
        kv->next = boot->kv;
        boot->kv = kv;
        return CM_OK;
    }

    val.type          = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)data;
    val.data.bo.size  = len;
    rc = PMIx_Put(PMIX_GLOBAL, key, &val);
    if (rc != PMIX_SUCCESS) {
        cm_error("PMIx_Put(%s) failed: %s", key, PMIx_Error_string(rc));
        return CM_ERR_BOOTSTRAP;
    }
    return CM_OK;
}

typedef struct {
    atomic_int    done;
    pmix_status_t status;
} cm_boot_fence_req_t;

static void cm_boot_fence_cb(pmix_status_t status, void *cbdata)
{
    cm_boot_fence_req_t *req = cbdata;
    req->status = status;
    atomic_store_explicit(&req->done, 1, memory_order_release);
}

/*
 * Non-blocking fence, polled: a process waiting here must keep serving its
 * peers' one-sided operations (the fence may wait on a peer that is itself
 * waiting for us to progress).
 */
static cm_status_t cm_boot_fence_common(cm_boot_t *boot, bool collect, const char *what,
                                        cm_boot_progress_fn_t progress, void *arg)
{
    cm_boot_fence_req_t req = {.done = 0, .status = PMIX_SUCCESS};
    pmix_info_t info;
    pmix_status_t rc;
    bool flag = true;
    unsigned idle = 0;

    if (boot->singleton) {
        return CM_OK;
    }
    if (collect) {
        rc = PMIx_Commit();
        if (rc != PMIX_SUCCESS) {
            cm_error("PMIx_Commit failed: %s", PMIx_Error_string(rc));
            return CM_ERR_BOOTSTRAP;
        }
    }
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &flag, PMIX_BOOL);
    /* info stays alive until the fence completes: PMIx may read it asynchronously. */
    rc = PMIx_Fence_nb(NULL, 0, collect ? &info : NULL, collect ? 1 : 0, cm_boot_fence_cb, &req);
    if (rc != PMIX_SUCCESS) {
        PMIX_INFO_DESTRUCT(&info);
        if (rc == PMIX_OPERATION_SUCCEEDED) {
            return CM_OK;
        }
        cm_error("PMIx fence (%s) failed: %s", what, PMIx_Error_string(rc));
        return CM_ERR_BOOTSTRAP;
    }
    while (!atomic_load_explicit(&req.done, memory_order_acquire)) {
        if (progress != NULL) {
            /* Serving peers: stay responsive, but let other ranks on this core run. */
            if (progress(arg) == 0) {
                sched_yield();
            }
        } else if (++idle > 1000) {
            usleep(50); /* nothing to serve: stop burning a core that others need */
        } else {
            sched_yield();
        }
    }
    PMIX_INFO_DESTRUCT(&info);
    if (req.status != PMIX_SUCCESS) {
        /* Open MPI's server reports a rank that died during the fence as PARTIAL_SUCCESS. */
        if (req.status == PMIX_ERR_PARTIAL_SUCCESS || req.status == PMIX_ERR_PROC_ABORTED ||
            req.status == PMIX_ERR_LOST_CONNECTION || req.status == PMIX_ERR_UNREACH) {
            cm_error("another process of the job died during %s (PMIx: %s)", what,
                     PMIx_Error_string(req.status));
            return CM_ERR_PEER_FAILED;
        }
        cm_error("PMIx fence (%s) failed: %s", what, PMIx_Error_string(req.status));
        return CM_ERR_BOOTSTRAP;
    }
    return CM_OK;
}

cm_status_t cm_boot_exchange(cm_boot_t *boot, cm_boot_progress_fn_t progress, void *arg)
{
    return cm_boot_fence_common(boot, true, "exchange", progress, arg);
}

/*
 * A barrier must not pass without every process. Open MPI's server has been
 * seen to complete a fence for the others when a process exited 0 without
 * reaching it (about one run in seven): each process therefore contributes a
 * key of this fence, and every contribution must be there afterwards.
 */
cm_status_t cm_boot_fence(cm_boot_t *boot, cm_boot_progress_fn_t progress, void *arg)
{
    char key[32];
    uint32_t seq;
    pmix_info_t info;
    bool immediate = true;

    if (boot->singleton) {
        return CM_OK;
    }
    seq = ++boot->fences;
    snprintf(key, sizeof(key), "cm.fence.%u", seq);
    CM_CHECK(cm_boot_put(boot, key, &seq, sizeof(seq)));
    CM_CHECK(cm_boot_fence_common(boot, true, "barrier", progress, arg));
    PMIX_INFO_LOAD(&info, PMIX_IMMEDIATE, &immediate, PMIX_BOOL);
    for (int r = 0; r < boot->size; r++) {
        pmix_proc_t proc = boot->me;
        pmix_value_t *val = NULL;
        pmix_status_t rc;
        if (r == boot->rank) {
            continue;
        }
        proc.rank = (pmix_rank_t)r;
        rc = PMIx_Get(&proc, key, &info, 1, &val);
        if (rc == PMIX_SUCCESS) {
            PMIX_VALUE_RELEASE(val);
            continue;
        }
        PMIX_INFO_DESTRUCT(&info);
        cm_error("rank %d never reached the barrier (it exited or died)", r);
        return CM_ERR_PEER_FAILED;
    }
    PMIX_INFO_DESTRUCT(&info);
    return CM_OK;
}

cm_status_t cm_boot_get(cm_boot_t *boot, int rank, const char *key, void **data, size_t *len)
{
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    pmix_status_t rc;

    if (boot->singleton) {
        for (cm_boot_kv_t *kv = boot->kv; kv != NULL; kv = kv->next) {
            if (rank == 0 && strcmp(kv->key, key) == 0) {
                *data = malloc(kv->len + 1);
                if (*data == NULL) {
                    return CM_ERR_NO_MEMORY;
                }
                memcpy(*data, kv->data, kv->len);
                *len = kv->len;
                return CM_OK;
            }
        }
        cm_error("bootstrap: no value for key %s from rank %d", key, rank);
        return CM_ERR_BOOTSTRAP;
    }

    proc      = boot->me;
    proc.rank = (pmix_rank_t)rank;
    rc = PMIx_Get(&proc, key, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || val->type != PMIX_BYTE_OBJECT) {
        cm_error("PMIx_Get(%s) from rank %d failed: %s", key, rank, PMIx_Error_string(rc));
        if (rc == PMIX_SUCCESS) {
            PMIX_VALUE_RELEASE(val);
        }
        return CM_ERR_BOOTSTRAP;
    }
    *len  = val->data.bo.size;
    *data = malloc(*len + 1);
    if (*data == NULL) {
        PMIX_VALUE_RELEASE(val);
        return CM_ERR_NO_MEMORY;
    }
    memcpy(*data, val->data.bo.bytes, *len);
    PMIX_VALUE_RELEASE(val);
    return CM_OK;
}

void cm_boot_abort(cm_boot_t *boot, int status, const char *msg)
{
    if (boot != NULL && !boot->singleton) {
        PMIx_Abort(status, msg, NULL, 0);
    }
}
