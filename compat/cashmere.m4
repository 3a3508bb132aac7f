divert(-1)
# SPDX-License-Identifier: BSD-3-Clause
# PARMACS (ANL) macros for Cashmere-RMA: SPLASH-2 and SPLASH-3 programs run
# unmodified on N processes of the DSM. Use it like the suites' own macro
# files, e.g. in a SPLASH program directory:
#
#   make MACROS=/usr/local/share/cashmere/cashmere.m4 CC=cmcc
#   cmrun -n 4 --stdin input ./PROGRAM
#
# Semantics (SPMD; details in cm_parmacs.h and docs/PORTING.md): every process runs
# main; until CREATE only process 0's shared writes count; CREATE ends
# initialization with a barrier and runs the worker once per process;
# WAIT_FOR_END is a barrier after which only process 0 continues. Locks,
# barriers, pauses and condition variables are lock ids in the runtime.

# What the suites' pthreads macro files give a program besides the macros: their headers and
# constants (LU uses PAGE_SIZE; programs use assert, the fixed-width types, sched_yield).
define(`CM_PM_INCLUDES', `
#include <cm_parmacs.h>
#include <assert.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
#endif
#ifndef PAGE_SIZE
#define PAGE_SIZE 4096
#endif
#ifndef MAX_THREADS
#define MAX_THREADS 1024
#endif
#ifndef __MAX_THREADS__
#define __MAX_THREADS__ 1024
#endif
')
# MAIN_ENV's constructor starts the replica heap before main: pointers main computes come out
# the same in every process (cm_parmacs.h).
define(`MAIN_ENV', `CM_PM_INCLUDES
static void __attribute__((constructor)) cm_parmacs_main_env_(void) { cm_parmacs_preinit(); }
')
define(`EXTERN_ENV', `CM_PM_INCLUDES')
define(`ENV', ` ')
define(`MAIN_INITENV', `{cm_parmacs_init();}')
define(`MAIN_END', `{cm_parmacs_end();}')

# CREATE(fn): SPLASH-2, called P-1 times, main then runs fn itself.
# CREATE(fn, P): SPLASH-3, every process runs fn once.
define(`CREATE', `{cm_parmacs_create((void (*)(void))($1), ifelse(`$2', `', `0', `($2)'));}')
define(`WAIT_FOR_END', `{cm_parmacs_wait_for_end($1);}')

# As in the SPLASH macro files, G_MALLOC and NU_MALLOC end with a semicolon (programs
# rely on it, e.g. LU) and the _F forms are expressions.
define(`G_MALLOC', `cm_parmacs_malloc($1);')
define(`G_MALLOC_F', `cm_parmacs_malloc($1)')
define(`NU_MALLOC', `cm_parmacs_malloc($1);')
define(`NU_MALLOC_F', `cm_parmacs_malloc($1)')
define(`G_FREE', `{cm_parmacs_free($1);}')
define(`NU_FREE', `{cm_parmacs_free($1);}')

# The declarations expand to plain C types (as pthread_mutex_t needs only <sys/types.h>):
# headers use them in structs before any include. Locks are lock ids; condition variables,
# pauses and GETSUB counters are shared words guarded by a lock picked from their address.
define(`LOCKDEC', `int $1;')
define(`LOCKINIT', `{($1) = cm_parmacs_lock_new();}')
define(`LOCK', `{cm_lock_acquire($1);}')
define(`UNLOCK', `{cm_lock_release($1);}')

define(`ALOCKDEC', `int $1[$2];')
define(`ALOCKINIT', `{long cm_pm_i_; for (cm_pm_i_ = 0; cm_pm_i_ < ($2); cm_pm_i_++) ($1)[cm_pm_i_] = cm_parmacs_lock_new();}')
define(`ALOCK', `{cm_lock_acquire(($1)[$2]);}')
define(`AULOCK', `{cm_lock_release(($1)[$2]);}')
define(`AGETL', `(($1)[$2])')
define(`ARELL', `{cm_lock_release(($1)[$2]);}')
define(`AACQUIRE', `{cm_lock_acquire(($1)[$2]);}')
define(`ARELEASE', `{cm_lock_release(($1)[$2]);}')

define(`BARDEC', `int $1;')
define(`BARDECGLOBAL', ` ')
define(`BARINIT', `{($1) = 0;}')
define(`BARRIER', `{cm_parmacs_barrier($2);}')
define(`ABARDEF', ` ')
define(`ABAREXTERN', ` ')
define(`ABARRIER', `{cm_parmacs_barrier($2);}')

define(`PAUSEDEC', `struct { volatile long flag; } $1;')
define(`PAUSEINIT', `{($1).flag = 0;}')
define(`SETPAUSE', `{cm_parmacs_pause_set(&($1).flag, 1);}')
define(`CLEARPAUSE', `{cm_parmacs_pause_set(&($1).flag, 0);}')
define(`WAITPAUSE', `{cm_parmacs_pause_wait(&($1).flag);}')

define(`CONDVARDEC', `struct { volatile unsigned long seq; } $1;')
define(`CONDVARINIT', `{($1).seq = 0;}')
define(`CONDVARWAIT', `{cm_parmacs_cond_wait(&($1).seq, $2);}')
define(`CONDVARSIGNAL', `{cm_parmacs_cond_signal(&($1).seq);}')
define(`CONDVARBCAST', `{cm_parmacs_cond_signal(&($1).seq);}')

define(`GSDEC', `struct { volatile long value; } $1;')
define(`GSINIT', `{($1).value = 0;}')
define(`GETSUB', `{($2) = cm_parmacs_getsub(&($1).value, $3);}')
define(`NU_GSDEC', `GSDEC($1)')
define(`NU_GSINIT', `GSINIT($1)')
define(`NU_GETSUB', `GETSUB($1,$2,$3,$4)')

define(`RELEASE_FENCE', `{cm_parmacs_fence();}')
define(`ACQUIRE_FENCE', `{cm_parmacs_fence();}')
define(`FULL_FENCE', `{cm_parmacs_fence();}')

define(`CLOCK', `{($1) = cm_parmacs_clock();}')
define(`GET_PID', `{($1) = cm_rank();}')
define(`SPLASH3_ROI_BEGIN', `{cm_parmacs_roi_begin();}')
define(`SPLASH3_ROI_END', `{cm_parmacs_roi_end();}')

# Simulator and tracing hooks of the ANL macros: nothing to do on real hardware.
define(`THREAD_INIT', `{;}')
define(`THREAD_INIT_FREE', `{;}')
define(`AUG_ON', ` ')
define(`AUG_OFF', ` ')
define(`TRACE_ON', ` ')
define(`TRACE_OFF', ` ')
define(`REF_TRACE_ON', ` ')
define(`REF_TRACE_OFF', ` ')
define(`DYN_TRACE_ON', `;')
define(`DYN_TRACE_OFF', `;')
define(`DYN_REF_TRACE_ON', `;')
define(`DYN_REF_TRACE_OFF', `;')
define(`DYN_SIM_ON', `;')
define(`DYN_SIM_OFF', `;')
define(`DYN_SCHED_ON', `;')
define(`DYN_SCHED_OFF', `;')
define(`AUG_SET_LOLIMIT', `;')
define(`AUG_SET_HILIMIT', `;')
define(`ST_LOG', `{;}')
define(`BAREXCLUDE', `{;}')
define(`BARINCLUDE', `{;}')
define(`MENTER', `{;}')
define(`DELAY', `{;}')
define(`CONTINUE', `{;}')
define(`MEXIT', `{;}')
define(`MONINIT', `{;}')
define(`EVENT', `{;}')
define(`PAUSE', `{;}')
define(`ADEC', `long $1;')
define(`AINIT', `{;}')
define(`PROBEND', `{;}')
define(`NLOCKDEC', `long $1;')
define(`NLOCKINIT', `{;}')
define(`NLOCK', `{;}')
define(`NUNLOCK', `{;}')
define(`AUG_DELAY', `{sleep($1);}')
define(`SET_HOME', `{;}')
define(`GET_HOME', `{($1) = 0;}')
divert(0)dnl
