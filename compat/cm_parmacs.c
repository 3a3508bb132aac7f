/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run-time support of the PARMACS macros (include/cm_parmacs.h, cashmere.m4).
 *
 * Initialization is SPMD: every process runs main up to CREATE. To give the
 * threaded programs' semantics exactly (one initialization, whose shared
 * values every worker sees), the processes other than 0 run it "muted": the
 * application's view of the shared region is replaced by private zero pages
 * and the store hooks are paused, so they compute the same private globals
 * without touching shared memory, and their stdout goes to /dev/null. At
 * CREATE they map the real region back (every page unmapped, as at start)
 * and the first barrier ends the protocol's initialization phase.
 */
#define _GNU_SOURCE
#include "config.h"
#include "cm_parmacs.h"
#include "compat/cm_compat.h"
#include "src/access/cm_hooks_api.h"
#include "src/runtime/cm_preinit.h"
#include "util/cm_log.h"
#include "util/cm_trace.h"
#include "src/access/cm_replica_heap.h"
#include "src/runtime/cm_region.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef enum { PM_NONE, PM_INIT, PM_WORKERS, PM_ENDED } pm_phase_t;

typedef struct {
    volatile uint64_t next_lock;   /* ids handed out after CREATE */
    volatile uint64_t rh_digest;   /* process 0's replica heap at CREATE (cm_rh_digest) */
} pm_shared_t;

static struct {
    pm_phase_t   phase;
    bool         muted;
    int          saved_stdout;     /* the real stdout while muted */
    long         created;          /* CREATE calls seen (process 0) */
    long         create_style;     /* 0: SPLASH-2 CREATE(fn); else the P of CREATE(fn, P) */
    unsigned     next_lock;        /* deterministic ids before CREATE */
    int          ctl_lock, fence_lock;
    double       roi_t0;
    pm_shared_t  *sh;
} pm = {.saved_stdout = -1};

static void pm_stdout_off(void)
{
    int fd;

    fflush(stdout);
    if (pm.saved_stdout >= 0) {
        return;
    }
    fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    pm.saved_stdout = dup(STDOUT_FILENO);
    if (fd < 0 || pm.saved_stdout < 0 || dup2(fd, STDOUT_FILENO) < 0) {
        cm_fatal(1, "PARMACS: cannot silence stdout: %s", strerror(errno));
    }
    close(fd);
}

static void pm_stdout_on(void)
{
    fflush(stdout);
    if (pm.saved_stdout < 0) {
        return;
    }
    if (dup2(pm.saved_stdout, STDOUT_FILENO) < 0) {
        cm_fatal(1, "PARMACS: cannot restore stdout: %s", strerror(errno));
    }
    close(pm.saved_stdout);
    pm.saved_stdout = -1;
}

/* Private zero pages in place of the application's view of the shared region. */
static void pm_mute(void)
{
    cm_region_stand_in();
    pm_stdout_off();
    pm.muted = true;
}

/* The real view back, every page protected as at start: the protocol's state never saw the stand-in. */
static void pm_unmute(void)
{
    cm_region_restore();
    pm_stdout_on();
    pm.muted = false;
}

/* stdout's buffer, if it has none yet, from libc now: glibc sizes it by the stream's file at
 * the first output (1 KiB for a terminal, 4 KiB for a pipe or /dev/null), so process 0 (its
 * terminal) and a muted process (/dev/null) would take different replica-heap blocks at their
 * first printf and every later malloc pointer of the initialization would differ (said at
 * CREATE; p_input under mpirun's pseudo-terminals). Before the replica heap starts, in every
 * process alike; the mode stays glibc's. */
static void pm_stdout_buffer(void)
{
    static char buf[BUFSIZ];

    if (__fbufsize(stdout) == 0) { /* no buffer yet (an unbuffered stream has its 1 byte) */
        setvbuf(stdout, buf, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, sizeof(buf));
    }
}

static void pm_atexit(void)
{
    /* Process 0 leaving main without MAIN_END (exit from the program): finish the job properly. */
    cm_region_t r;

    if (pm.phase != PM_NONE && cm_region_get(&r) && cm_rank() == 0) {
        if (pm.phase == PM_WORKERS) {
            cm_parmacs_wait_for_end(0);
        }
        cm_finalize();
    }
}

void cm_parmacs_preinit(void)
{
    pm_stdout_buffer();
    cm_rh_activate();
    /* Output before MAIN_INITENV (WATER echoes its input) is process 0's alone, as after it:
     * the others' stdout goes quiet from before main until CREATE. */
    if (cm_preinit.rank > 0) {
        pm_stdout_off();
    }
}

void cm_parmacs_init(void)
{
    if (pm.phase != PM_NONE) {
        return;
    }
    CM_RT_ENTER();
    cm_init(NULL, NULL);
    cm_compat_check_locks("PARMACS");
    pm.ctl_lock   = cm_compat_lock_id(CM_COMPAT_LOCK_CTL);
    pm.fence_lock = cm_compat_lock_id(CM_COMPAT_LOCK_FENCE);
    pm.sh         = cm_malloc(sizeof(pm_shared_t));
    pm.phase      = PM_INIT;
    atexit(pm_atexit);
    if (cm_rank() != 0) {
        pm_mute();
    }
    CM_RT_LEAVE();
}

static void pm_require(void)
{
    if (pm.phase == PM_NONE) {
        cm_parmacs_init(); /* a program without MAIN_INITENV */
    }
}

/* Process != 0 after its worker: WAIT_FOR_END's barrier, then serve until process 0 is done. */
static void __attribute__((noreturn)) pm_worker_exit(void)
{
    pm_stdout_off();
    cm_barrier();
    pm.phase = PM_ENDED;
    cm_finalize();
    _exit(0);
}

void cm_parmacs_create(void (*fn)(void), long nprocs)
{
    pm_require();
    if (nprocs != 0 && nprocs != cm_nprocs()) {
        cm_fatal(1, "CREATE(fn, %ld): the job has %d processes; give the program P = %d or run it "
                 "with cmrun -n %ld", nprocs, cm_nprocs(), cm_nprocs(), nprocs);
    }
    if (pm.phase == PM_INIT) {
        uint64_t digest;

        cm_rh_deactivate(); /* replication ends: the processes' private heaps go separate ways */
        digest = cm_rh_digest();
        if (pm.muted) {
            pm_unmute();
        }
        if (cm_rank() == 0) {
            /* ids after CREATE continue the deterministic ones */
            cm_compat_store(&pm.sh->next_lock, pm.next_lock);
            cm_compat_store(&pm.sh->rh_digest, digest);
        }
        cm_barrier(); /* ends initialization: no worker starts before every process got here */
        if (cm_rank() != 0 && cm_compat_load(&pm.sh->rh_digest) != digest) {
            /* Said, not fatal: a program may allocate differently per process and share none of
             * it; but a malloc pointer process 0 stored in shared memory is wrong here. */
            cm_warn("PARMACS: this process's malloc calls before CREATE placed blocks other than "
                    "process 0's: a pointer to malloc'ed memory that process 0 stored in shared "
                    "memory points elsewhere here (an allocation that depends on the rank?)");
        }
        pm.phase        = PM_WORKERS;
        pm.create_style = nprocs;
        if (cm_rank() != 0) {
            fn();
            pm_worker_exit();
        }
        pm.created = (nprocs != 0) ? nprocs - 1 : 1;
        if (nprocs != 0) {
            fn(); /* SPLASH-3: process 0 is one of the P workers too */
        }
        return;
    }
    if (pm.phase != PM_WORKERS || cm_rank() != 0 || pm.create_style != 0 || nprocs != 0) {
        cm_fatal(1, "CREATE called again after the workers started (only SPLASH-2's P-1 calls of "
                 "CREATE(fn) in a row, or one CREATE(fn, P), are supported)");
    }
    pm.created++;
}

void cm_parmacs_wait_for_end(long n)
{
    (void)n; /* SPLASH-2 passes P-1, SPLASH-3 P: the job's size is what counts */
    pm_require();
    if (pm.phase == PM_INIT) {
        if (cm_nprocs() > 1) {
            cm_fatal(1, "WAIT_FOR_END without CREATE: the program ran one worker but the job has "
                     "%d processes (give it P = %d)", cm_nprocs(), cm_nprocs());
        }
        pm.phase = PM_ENDED;
        return;
    }
    if (pm.phase != PM_WORKERS) {
        return;
    }
    if (pm.create_style == 0 && pm.created != cm_nprocs() - 1) {
        cm_fatal(1, "CREATE was called %ld times; a job of %d processes needs P-1 = %d (give the "
                 "program P = %d)", pm.created, cm_nprocs(), cm_nprocs() - 1, cm_nprocs());
    }
    cm_barrier();
    pm.phase = PM_ENDED;
}

void cm_parmacs_end(void)
{
    pm_require();
    if (pm.phase == PM_WORKERS) {
        cm_parmacs_wait_for_end(0);
    }
    pm.phase = PM_NONE; /* the atexit handler has nothing left to do */
    cm_finalize();
    exit(0);
}

void *cm_parmacs_malloc(size_t size)
{
    pm_require();
    return (pm.phase == PM_INIT) ? cm_malloc(size) : cm_malloc_local(size);
}

void cm_parmacs_free(void *ptr)
{
    cm_region_t r;

    pm_require();
    if (ptr == NULL || !cm_region_get(&r)) {
        return;
    }
    if ((char *)ptr >= r.local && (char *)ptr < r.local + r.local_size) {
        cm_free_local(ptr);
    } else if (pm.phase == PM_INIT) {
        cm_free(ptr);
    }
    /* Else another process's block or a collective one after CREATE: kept (SPLASH frees little). */
}

int cm_parmacs_lock_new(void)
{
    uint64_t id;

    pm_require();
    if (pm.phase == PM_INIT) {
        id = pm.next_lock++;
    } else {
        cm_lock_acquire(pm.ctl_lock);
        id = cm_compat_load(&pm.sh->next_lock);
        cm_compat_store(&pm.sh->next_lock, id + 1);
        cm_lock_release(pm.ctl_lock);
    }
    if (id >= cm_compat_user_locks()) {
        cm_fatal(1, "PARMACS: the program initializes more than %u locks (raise CM_LOCKS)",
                 cm_compat_user_locks());
    }
    /* The trace names the lock by this call (LOCKINIT, ALOCKINIT's loop) in the program. */
    if (__builtin_expect(cm_trace_on, 0)) {
        cm_trace_emit(CM_TRACE_LOCK_NEW, cm_trace_now(),
                      (uint64_t)(uintptr_t)__builtin_return_address(0), id, -1, 0, 0);
    }
    return (int)id;
}

void cm_parmacs_barrier(long n)
{
    if (n != cm_nprocs()) {
        cm_fatal(1, "BARRIER(bar, %ld): the job has %d processes; barriers of a subset are not "
                 "supported (give the program P = %d)", n, cm_nprocs(), cm_nprocs());
    }
    cm_barrier();
}

void cm_parmacs_pause_set(volatile long *flag, long value)
{
    int lock = cm_compat_word_lock(flag);

    cm_lock_acquire(lock);
    cm_compat_store(flag, (uint64_t)value);
    cm_lock_release(lock);
    if (value) {
        cm_region_wake(lock);
    }
}

void cm_parmacs_pause_wait(volatile long *flag)
{
    int lock = cm_compat_word_lock(flag);

    cm_region_wait_begin("the PARMACS pause flag at %x (word of lock %b)",
                         (uint64_t)(uintptr_t)flag, (uint64_t)lock);
    for (;;) {
        uint64_t armed;

        cm_lock_acquire(lock);
        if (cm_compat_load(flag)) {
            cm_lock_release(lock);
            break;
        }
        armed = cm_region_sleep_arm(lock);
        cm_lock_release(lock);
        cm_region_sleep(armed);
    }
    cm_region_wait_end();
}

void cm_parmacs_cond_wait(volatile unsigned long *seq, int lock)
{
    _Static_assert(sizeof(*seq) == sizeof(uint64_t), "seq is a 64-bit word");
    cm_compat_cond_wait(lock, cm_compat_word_lock(seq), (volatile uint64_t *)seq);
}

void cm_parmacs_cond_signal(volatile unsigned long *seq)
{
    cm_compat_cond_signal(cm_compat_word_lock(seq), (volatile uint64_t *)seq);
}

long cm_parmacs_getsub(volatile long *value, long max)
{
    int lock = cm_compat_word_lock(value);
    long sub;

    cm_lock_acquire(lock);
    sub = (long)cm_compat_load(value);
    if (sub <= max) {
        cm_compat_store(value, (uint64_t)(sub + 1));
    } else {
        sub = -1;
        cm_compat_store(value, 0); /* as the ANL macros do: the next round starts afresh */
    }
    cm_lock_release(lock);
    return sub;
}

void cm_parmacs_fence(void)
{
    /* Release what this process wrote, acquire what others released: through one lock. */
    cm_lock_acquire(pm.fence_lock);
    cm_lock_release(pm.fence_lock);
}

unsigned long cm_parmacs_clock(void)
{
    return (unsigned long)(cm_wtime() * 1e6);
}

void cm_parmacs_roi_begin(void)
{
    cm_stats_reset(); /* CM_STATS then counts the region of interest */
    pm.roi_t0 = cm_wtime();
}

void cm_parmacs_roi_end(void)
{
    double t = cm_wtime() - pm.roi_t0;

    cm_stats_stop();
    cm_info("region of interest: %.6f s", t);
}
