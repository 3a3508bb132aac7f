divert(-1)
# PARMACS (ANL) macros for Cashmere-RMA: SPLASH-2 and SPLASH-3 programs run
# unmodified on N processes of the DSM. Use it like the suites' own macro
# files, e.g. in a SPLASH program directory:
#
#   make MACROS=/usr/local/share/cashmere/cashmere.m4 CC=cmcc
#   cmrun -n 4 --stdin input ./PROGRAM
#
# Semantics (SPMD; details in cm_parmacs.h and README.md): every process runs
# main; until CREATE only process 0's shared writes count; CREATE ends
# initialization with a barrier and runs the worker once per process;
# WAIT_FOR_END is a barrier after which only process 0 continues. Locks,
# barriers, pauses and condition variables are lock ids in the runtime.

define(`MAIN_ENV', `
#include <cm_parmacs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <unistd.h>
#include <sys/time.h>
')
define(`EXTERN_ENV', `
#include <cm_parmacs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <unistd.h>
#include <sys/time.h>
')
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

define(`LOCKDEC', `cm_plock_t $1;')
define(`LOCKINIT', `{($1) = cm_parmacs_lock_new();}')
define(`LOCK', `{cm_lock_acquire($1);}')
define(`UNLOCK', `{cm_lock_release($1);}')

define(`ALOCKDEC', `cm_plock_t $1[$2];')
define(`ALOCKINIT', `{long cm_pm_i_; for (cm_pm_i_ = 0; cm_pm_i_ < ($2); cm_pm_i_++) ($1)[cm_pm_i_] = cm_parmacs_lock_new();}')
define(`ALOCK', `{cm_lock_acquire(($1)[$2]);}')
define(`AULOCK', `{cm_lock_release(($1)[$2]);}')
define(`AGETL', `{cm_lock_acquire(($1)[$2]);}')
define(`ARELL', `{cm_lock_release(($1)[$2]);}')
define(`AACQUIRE', `{cm_lock_acquire(($1)[$2]);}')
define(`ARELEASE', `{cm_lock_release(($1)[$2]);}')

define(`BARDEC', `cm_pbar_t $1;')
define(`BARINIT', `{($1) = cm_parmacs_lock_new();}')
define(`BARRIER', `{cm_parmacs_barrier($2);}')

define(`PAUSEDEC', `cm_ppause_t $1;')
define(`PAUSEINIT', `{($1).lock = cm_parmacs_lock_new(); ($1).flag = 0;}')
define(`SETPAUSE', `{cm_lock_acquire(($1).lock); ($1).flag = 1; cm_lock_release(($1).lock);}')
define(`CLEARPAUSE', `{cm_lock_acquire(($1).lock); ($1).flag = 0; cm_lock_release(($1).lock);}')
define(`WAITPAUSE', `{cm_parmacs_pause_wait(&($1));}')

define(`CONDVARDEC', `cm_pcond_t $1;')
define(`CONDVARINIT', `{($1).lock = cm_parmacs_lock_new(); ($1).seq = 0;}')
define(`CONDVARWAIT', `{cm_parmacs_cond_wait(&($1), $2);}')
define(`CONDVARSIGNAL', `{cm_parmacs_cond_signal(&($1));}')
define(`CONDVARBCAST', `{cm_parmacs_cond_signal(&($1));}')

define(`GSDEC', `cm_pgs_t $1;')
define(`GSINIT', `{($1).lock = cm_parmacs_lock_new(); ($1).value = 0;}')
define(`GETSUB', `{($2) = cm_parmacs_getsub(&($1), $3);}')
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
