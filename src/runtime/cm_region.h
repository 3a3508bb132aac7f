/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The runtime as the layers above it (compat/: the TreadMarks API, PARMACS) see it, beside
 * cm.h: where the shared region lies, and PARMACS's stand-in view. They read no runtime
 * state of their own.
 */
#ifndef CM_REGION_H
#define CM_REGION_H

#include "cm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char      *base;        /* the application's view of the shared region */
    size_t    size;
    size_t    page_size;
    uint64_t  npages;
    unsigned  nlocks;       /* CM_LOCKS: lock ids 0 .. nlocks - 1 */
    char      *local;       /* this process's arena for cm_malloc_local ... */
    size_t    local_size;   /* ... and its size */
} cm_region_t;

/* The region of the running job; false before cm_init and after cm_finalize. */
bool cm_region_get(cm_region_t *r);

/*
 * PARMACS's workers run the program's initialization again with their output and shared
 * stores discarded: the application's view is replaced by private zero pages (store hooks
 * paused) until cm_region_restore maps the real view back, every page protected as at start
 * (the protocol's state never saw the stand-in). Either ends the job on failure.
 */
void cm_region_stand_in(void);
void cm_region_restore(void);

/*
 * Around a wait the layers above build from lock acquires (a condition variable, a PARMACS
 * pause): a stuck-wait report then names it and its age, not only the acquire it is in.
 * what: a constant, "%a" and "%b" standing for the numbers (rma/cm_rma.h, cm_rma_why_t).
 */
void cm_region_wait_begin(const char *what, uint64_t a, uint64_t b);
void cm_region_wait_end(void);

/*
 * Sleeping on a word guarded by a lock instead of polling it under the lock (locks/cm_sleep.h):
 * with the lock held and the word seen unchanged, cm_region_sleep_arm; release the lock;
 * cm_region_sleep(what arm returned) returns once a process that changed a word under the
 * same lock called cm_region_wake(lock) after releasing it (or spuriously); then acquire the
 * lock and look again. The lock carries the memory model; the wake only says when to look.
 */
uint64_t cm_region_sleep_arm(int lock);
void cm_region_sleep(uint64_t seen);
void cm_region_wake(int lock);

#endif
