/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the TreadMarks and PARMACS layers share (internal): the lock ids they
 * reserve at the top of CM_LOCKS, and waiting for a shared word to change.
 */
#ifndef CM_COMPAT_H
#define CM_COMPAT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Reserved lock ids at the top of CM_LOCKS: a few named ones, counted down
 * from CM_LOCKS - 1, and below them CM_COMPAT_WORD_LOCKS ids that guard
 * single shared words (condition-variable sequence numbers, pause flags,
 * GETSUB counters). User ids stay below cm_compat_user_locks().
 */
enum {
    CM_COMPAT_LOCK_CTL   = 1,    /* the layers' own shared control words (id counters, distribute log) */
    CM_COMPAT_LOCK_FENCE = 2,    /* PARMACS fences: release/acquire through one lock */
    CM_COMPAT_NAMED      = 8,
    CM_COMPAT_WORD_LOCKS = 1024,
    CM_COMPAT_RESERVED   = CM_COMPAT_NAMED + CM_COMPAT_WORD_LOCKS
};

int cm_compat_lock_id(int which);
unsigned cm_compat_user_locks(void);

/*
 * The lock that guards the shared word at addr, picked by hashing its address
 * (the same in every process), so that a word needs no id of its own and can
 * be initialized any number of times. Several words may share one lock: that
 * is safe because a word lock is only ever held inside the layer, for a
 * moment, never while taking another word lock.
 */
int cm_compat_word_lock(const volatile void *addr);

/* Ends the job with a message if CM_LOCKS leaves no room for the reserved ids. */
void cm_compat_check_locks(const char *layer);

/*
 * A condition-variable wait built from locks only (portable to both
 * protocols): with `held` held, samples *seq under seq_lock (which may be
 * held itself), releases held, sleeps until a signaller wakes it
 * (cm_region_sleep), looks at *seq under seq_lock again until it changed,
 * and returns holding held again. A signal increments *seq under seq_lock,
 * then wakes seq_lock's sleepers (cm_compat_cond_signal; a signaller that
 * holds seq_lock already calls cm_region_wake(seq_lock) after releasing it);
 * wake-ups may be spurious.
 */
void cm_compat_cond_wait(int held, int seq_lock, volatile uint64_t *seq);
void cm_compat_cond_signal(int seq_lock, volatile uint64_t *seq);

/*
 * Shared memory the layers access themselves. The library is built without
 * access checks, so it reports its accesses as a checked program would: bytes
 * about to be read (made current first under software line fills, the NS
 * variants, where a local copy may hold lines older than the last acquire)
 * and bytes written (forwarded to the home under software write forwarding).
 * cm_compat_load and cm_compat_store are one 64-bit word, reported.
 */
void cm_compat_loading(const volatile void *addr, size_t len);
void cm_compat_stored(volatile void *addr, size_t len);
uint64_t cm_compat_load(const volatile void *word);
void cm_compat_store(volatile void *word, uint64_t value);

#endif
