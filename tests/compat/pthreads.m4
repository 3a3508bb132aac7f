divert(-1)
# SPDX-License-Identifier: BSD-3-Clause
# A pthreads implementation of the PARMACS macros, for the tests only: the
# PARMACS test programs are built with it too, and their output under every
# protocol must equal the output of this threaded build (one address space,
# the semantics the SPLASH suites' own pthreads macro files give). Written for
# this project; the suites' files are not part of the repository.

define(`CM_PT_INCLUDES', `
#include <pthread.h>
#include <assert.h>
#include <malloc.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#ifndef PAGE_SIZE
#define PAGE_SIZE 4096
#endif
typedef struct { pthread_mutex_t m; pthread_cond_t c; unsigned long count, gen; } cm_pt_bar_t;
extern pthread_t cm_pt_threads[1024];
extern long cm_pt_nthreads;
')
define(`MAIN_ENV', `CM_PT_INCLUDES
pthread_t cm_pt_threads[1024];
long cm_pt_nthreads;
')
define(`EXTERN_ENV', `CM_PT_INCLUDES')
define(`ENV', ` ')
define(`MAIN_INITENV', `{;}')
define(`MAIN_END', `{exit(0);}')

define(`CREATE', `ifelse(`$2', `',
`{if (pthread_create(&cm_pt_threads[cm_pt_nthreads++], NULL, (void *(*)(void *))($1), NULL) != 0) { perror("pthread_create"); exit(1); }}',
`{long cm_pt_i; for (cm_pt_i = 0; cm_pt_i < ($2) - 1; cm_pt_i++) if (pthread_create(&cm_pt_threads[cm_pt_nthreads++], NULL, (void *(*)(void *))($1), NULL) != 0) { perror("pthread_create"); exit(1); } ($1)();}')')
define(`WAIT_FOR_END', `{while (cm_pt_nthreads > 0) pthread_join(cm_pt_threads[--cm_pt_nthreads], NULL);}')

define(`G_MALLOC', `malloc($1);')
define(`G_MALLOC_F', `malloc($1)')
define(`NU_MALLOC', `malloc($1);')
define(`NU_MALLOC_F', `malloc($1)')
define(`G_FREE', `{free($1);}')
define(`NU_FREE', `{free($1);}')

define(`LOCKDEC', `pthread_mutex_t $1;')
define(`LOCKINIT', `{pthread_mutex_init(&($1), NULL);}')
define(`LOCK', `{pthread_mutex_lock(&($1));}')
define(`UNLOCK', `{pthread_mutex_unlock(&($1));}')
define(`ALOCKDEC', `pthread_mutex_t $1[$2];')
define(`ALOCKINIT', `{long cm_pt_i; for (cm_pt_i = 0; cm_pt_i < ($2); cm_pt_i++) pthread_mutex_init(&($1)[cm_pt_i], NULL);}')
define(`ALOCK', `{pthread_mutex_lock(&($1)[$2]);}')
define(`AULOCK', `{pthread_mutex_unlock(&($1)[$2]);}')
define(`AGETL', `(($1)[$2])')

define(`BARDEC', `cm_pt_bar_t $1;')
define(`BARINIT', `{pthread_mutex_init(&($1).m, NULL); pthread_cond_init(&($1).c, NULL); ($1).count = 0; ($1).gen = 0;}')
define(`BARRIER', `{unsigned long cm_pt_g; pthread_mutex_lock(&($1).m); cm_pt_g = ($1).gen;
if (++($1).count == (unsigned long)($2)) { ($1).count = 0; ($1).gen++; pthread_cond_broadcast(&($1).c); }
else while (cm_pt_g == ($1).gen) pthread_cond_wait(&($1).c, &($1).m);
pthread_mutex_unlock(&($1).m);}')

define(`PAUSEDEC', `struct { pthread_mutex_t m; pthread_cond_t c; long flag; } $1;')
define(`PAUSEINIT', `{pthread_mutex_init(&($1).m, NULL); pthread_cond_init(&($1).c, NULL); ($1).flag = 0;}')
define(`SETPAUSE', `{pthread_mutex_lock(&($1).m); ($1).flag = 1; pthread_cond_broadcast(&($1).c); pthread_mutex_unlock(&($1).m);}')
define(`CLEARPAUSE', `{pthread_mutex_lock(&($1).m); ($1).flag = 0; pthread_mutex_unlock(&($1).m);}')
define(`WAITPAUSE', `{pthread_mutex_lock(&($1).m); while (!($1).flag) pthread_cond_wait(&($1).c, &($1).m); pthread_mutex_unlock(&($1).m);}')

define(`CONDVARDEC', `pthread_cond_t $1;')
define(`CONDVARINIT', `{pthread_cond_init(&($1), NULL);}')
define(`CONDVARWAIT', `{pthread_cond_wait(&($1), &($2));}')
define(`CONDVARSIGNAL', `{pthread_cond_signal(&($1));}')
define(`CONDVARBCAST', `{pthread_cond_broadcast(&($1));}')

define(`GSDEC', `struct { pthread_mutex_t m; long value; } $1;')
define(`GSINIT', `{pthread_mutex_init(&($1).m, NULL); ($1).value = 0;}')
define(`GETSUB', `{pthread_mutex_lock(&($1).m); if (($1).value <= ($3)) ($2) = ($1).value++; else { ($2) = -1; ($1).value = 0; } pthread_mutex_unlock(&($1).m);}')

define(`RELEASE_FENCE', `{__atomic_thread_fence(__ATOMIC_RELEASE);}')
define(`ACQUIRE_FENCE', `{__atomic_thread_fence(__ATOMIC_ACQUIRE);}')
define(`FULL_FENCE', `{__atomic_thread_fence(__ATOMIC_SEQ_CST);}')

define(`CLOCK', `{struct timeval cm_pt_tv; gettimeofday(&cm_pt_tv, NULL); ($1) = (unsigned long)(cm_pt_tv.tv_sec * 1000000 + cm_pt_tv.tv_usec);}')
define(`SPLASH3_ROI_BEGIN', `{;}')
define(`SPLASH3_ROI_END', `{;}')
divert(0)dnl
