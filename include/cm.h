/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cashmere-RMA: software distributed shared memory over one-sided RDMA.
 *
 * Public API. Every process of the job runs main() (SPMD), calls cm_init()
 * first and cm_finalize() last. See README.md, and docs/ARCHITECTURE.md, "API".
 */
#ifndef CM_H
#define CM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: CM_OK or a negative error. */
typedef enum {
    CM_OK               =  0,
    CM_ERR_INVALID      = -1,  /* bad argument or bad configuration value */
    CM_ERR_NO_MEMORY    = -2,  /* out of (shared or private) memory */
    CM_ERR_ADDR_IN_USE  = -3,  /* the fixed shared address range is taken */
    CM_ERR_UNSUPPORTED  = -4,  /* not available with this fabric/build */
    CM_ERR_TRANSPORT    = -5,  /* UCX reported an error */
    CM_ERR_BOOTSTRAP    = -6,  /* PMIx / process manager failure */
    CM_ERR_PEER_FAILED  = -7,  /* another process of the job died */
    CM_ERR_IO           = -8   /* a file or stream could not be used */
} cm_status_t;

/* Returns a constant description of a status code. */
const char *cm_status_string(cm_status_t status);

/*
 * Joins the job: reads the CM_* settings, wires up with the process manager
 * (PMIx), maps the shared region at the same virtual address in every process
 * and connects all processes. Without a launcher the program runs as a
 * 1-process job. On any error it prints a one-line message and exits the
 * whole job with a non-zero status; it returns CM_OK otherwise.
 */
int cm_init(int *argc, char ***argv);

/* Leaves the job: waits for every process, then tears down. Collective. */
void cm_finalize(void);

/* This process's rank in [0, cm_nprocs()). */
int cm_rank(void);

/* Number of processes in the job. */
int cm_nprocs(void);

/* The coherence protocol of the job (CM_PROTOCOL): "cashmere", "treadmarks" or "none". */
const char *cm_protocol_name(void);

/* The Cashmere variant of the job (CM_VARIANT), e.g. "CHSM"; NULL under another protocol. */
const char *cm_variant_name(void);

/* Wall-clock time in seconds from an arbitrary origin (monotonic). */
double cm_wtime(void);

/*
 * Shared memory. cm_malloc is collective: every process calls it with the same
 * size in the same order and gets the same address; the block lies in the
 * shared region (page aligned if it is a page or larger, else 64-byte
 * aligned). cm_free is collective too. Running out of shared memory is a
 * one-line error and a non-zero exit on every process.
 */
void *cm_malloc(size_t size);
void cm_free(void *ptr);

/*
 * Non-collective shared allocation: a block of the shared region taken from
 * this process's own arena (CM_LOCAL_HEAP), with no communication. The
 * address means the same memory in every process; hand it to the others
 * through shared memory (after a release/acquire or a barrier). Only the
 * allocating process may cm_free_local it. Exhaustion is a one-line error.
 */
void *cm_malloc_local(size_t size);
void cm_free_local(void *ptr);

/*
 * Synchronization. Lock ids are 0..CM_LOCKS-1. Acquire and release carry
 * release consistency: what a process wrote before releasing a lock is seen
 * by the next process that acquires it; what every process wrote before a
 * barrier is seen by every process after it.
 */
void cm_lock_acquire(int id);
void cm_lock_release(int id);
void cm_barrier(void);

/*
 * Ends the initialization phase (collective) where the first barrier would
 * not: from here on a page's home moves to the first process that touches it.
 */
void cm_init_done(void);

/* Restarts this process's statistics (e.g. at the start of the timed section). */
void cm_stats_reset(void);

/* Ends the interval cm_stats_reset began (e.g. at the end of the timed section): CM_STATS
 * reports what this process counted up to here, not its verification that follows. */
void cm_stats_stop(void);

/* Prints "cashmere[rank]: <message>" and ends the whole job with status. */
void cm_abort(int status, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif /* CM_H */
