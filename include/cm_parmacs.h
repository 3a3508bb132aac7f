/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run-time support of the PARMACS (ANL) macros in cashmere.m4, for SPLASH-2
 * and SPLASH-3 programs. Programs do not call these directly: the macros
 * expand to them. See docs/PORTING.md, "SPLASH programs (PARMACS macros)".
 *
 * Semantics in a process-per-node DSM (SPMD):
 * - Every process runs main. Until CREATE, process 0 computes on the real
 *   shared region while every other process computes the same thing on a
 *   private stand-in of it (and prints nothing), so file-scope globals come
 *   out identical everywhere and shared data holds exactly process 0's
 *   values. G_MALLOC before CREATE is collective and deterministic.
 * - The first CREATE is a barrier that ends initialization; then the worker
 *   runs once per process. SPLASH-2 style (CREATE(fn), called P-1 times,
 *   main then calls fn itself) and SPLASH-3 style (CREATE(fn, P): every
 *   process runs fn, main continues on process 0) are both accepted.
 * - After its worker returns, a process other than 0 waits in WAIT_FOR_END's
 *   barrier, then keeps serving its memory until process 0 finishes, prints
 *   nothing, and exits 0. Process 0 goes on after WAIT_FOR_END.
 * - Everything main computes before CREATE is computed alike in every
 *   process, so every private pointer must come out alike too: the library
 *   runs each process without address-space randomization (CM_ASLR) and
 *   serves the program's malloc from a deterministic heap at a fixed address
 *   until CREATE (the replica heap). A function, global, string or malloc
 *   pointer that process 0 stores in shared memory is valid in every worker.
 * - Locks (LOCKDEC) are lock ids, handed out deterministically before CREATE
 *   and from a shared counter after it. Condition variables, pauses and
 *   GETSUB counters are plain shared words, each guarded by a reserved lock
 *   picked from its address: they may be initialized any number of times.
 *   The declaration macros expand to plain C types, so a header may use them
 *   before any other include, as with the pthreads macros.
 */
#ifndef CM_PARMACS_H
#define CM_PARMACS_H

#include <cm.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the declaration macros expand to (spelled out there, so that no include is needed). */
typedef int cm_plock_t;                                     /* LOCKDEC, ALOCKDEC */
typedef int cm_pbar_t;                                      /* BARDEC: all barriers are global */
typedef struct { volatile long flag; } cm_ppause_t;         /* PAUSEDEC */
typedef struct { volatile unsigned long seq; } cm_pcond_t;  /* CONDVARDEC */
typedef struct { volatile long value; } cm_pgs_t;           /* GSDEC */

void cm_parmacs_preinit(void);                              /* MAIN_ENV's constructor */
void cm_parmacs_init(void);                                 /* MAIN_INITENV */
void cm_parmacs_create(void (*fn)(void), long nprocs);      /* CREATE(fn) (nprocs 0), CREATE(fn, P) */
void cm_parmacs_wait_for_end(long n);                       /* WAIT_FOR_END */
void cm_parmacs_end(void) __attribute__((noreturn));        /* MAIN_END */
void *cm_parmacs_malloc(size_t size);                       /* G_MALLOC, NU_MALLOC */
void cm_parmacs_free(void *ptr);                            /* G_FREE, NU_FREE */
int cm_parmacs_lock_new(void);                              /* LOCKINIT, ALOCKINIT */
void cm_parmacs_barrier(long n);                            /* BARRIER(bar, n) */
void cm_parmacs_pause_set(volatile long *flag, long value); /* SETPAUSE, CLEARPAUSE */
void cm_parmacs_pause_wait(volatile long *flag);            /* WAITPAUSE */
void cm_parmacs_cond_wait(volatile unsigned long *seq, int lock); /* CONDVARWAIT(cv, lock) */
void cm_parmacs_cond_signal(volatile unsigned long *seq);   /* CONDVARSIGNAL, CONDVARBCAST */
long cm_parmacs_getsub(volatile long *value, long max);     /* GETSUB */
void cm_parmacs_fence(void);                                /* RELEASE/ACQUIRE/FULL_FENCE */
unsigned long cm_parmacs_clock(void);                       /* CLOCK: microseconds */
void cm_parmacs_roi_begin(void);                            /* SPLASH3_ROI_BEGIN */
void cm_parmacs_roi_end(void);                              /* SPLASH3_ROI_END */

#ifdef __cplusplus
}
#endif

#endif /* CM_PARMACS_H */
