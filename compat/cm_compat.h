/*
 * What the TreadMarks and PARMACS layers share (internal): the lock ids they
 * reserve at the top of CM_LOCKS, and waiting for a shared word to change.
 */
#ifndef CM_COMPAT_H
#define CM_COMPAT_H

#include <stddef.h>
#include <stdint.h>

/* Reserved lock ids, counted down from CM_LOCKS - 1; user ids must stay below cm_compat_user_locks(). */
enum {
    CM_COMPAT_LOCK_CTL   = 1, /* the layers' own shared control words (id counters, distribute log) */
    CM_COMPAT_LOCK_FENCE = 2, /* PARMACS fences: release/acquire through one lock */
    CM_COMPAT_RESERVED   = 8
};

int cm_compat_lock_id(int which);
unsigned cm_compat_user_locks(void);

/*
 * A condition-variable wait built from locks only (portable to both
 * protocols): with `held` held, samples *seq under seq_lock (which may be
 * held itself), releases held, polls *seq (acquire, read, release, yield)
 * until it changes, and returns holding held again. A signal increments
 * *seq under seq_lock (cm_compat_cond_signal, or directly when the signaller
 * holds seq_lock already); wake-ups may be spurious.
 */
void cm_compat_cond_wait(int held, int seq_lock, volatile uint64_t *seq);
void cm_compat_cond_signal(int seq_lock, volatile uint64_t *seq);

/*
 * Stores the library itself makes to shared memory: the library is not built
 * with the store hooks, so under software write forwarding it reports them.
 */
void cm_compat_stored(volatile void *addr, size_t len);

#endif
