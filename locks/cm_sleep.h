/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sleeping on a lock's word until someone who changed it says so: the blocking half of the
 * condition waits and PAUSE flags the TreadMarks and PARMACS layers build from locks.
 *
 * Every process keeps a map of who sleeps on which lock: CM_SLEEP_SLOTS slots (lock l in slot
 * l % CM_SLEEP_SLOTS: the PARMACS layer's 1024 word locks one each), ceil(P / 64) words each,
 * one bit per process. Only a process changes its own bit, in every process's copy, with adds
 * that never fail (it knows whether its bit is set: `armed`). Signals are many and sleeps few
 * (BARNES: a broadcast per cell of the tree, a handful of sleeps), so a waker reads its own
 * copy and a sleeper pays the round trip: a get of the map at the lock's home on every signal
 * made BARNES under TreadMarks 12 % slower at 4 processes on 2 cores. A wake is a message
 * (CM_SLEEP_AM_WAKE) whose handler bumps the sleeper's nap word: a sleeper waits on the worker's
 * events (cm_rma_wait_events), so under TreadMarks it serves the requests that reach it
 * itself, as when it polled; sleeping on a futex instead handed each one to the progress
 * thread and kept BARNES 10 % slower still.
 *
 * Waiter, holding lock l:   seen = nap; its bit set in slot l of every copy (complete); release
 *                           l; sleep until nap != seen; acquire l; look again.
 * Waker, after changing the word under l (released or still held): reads slot l of its copy;
 * a wake message to each set bit's process, fire-and-forget.
 * The waiter's bits are complete before its release of l, so a waker whose change follows that
 * release (it acquired l after it) reads the bit; its message's handler moves nap from whatever
 * the waiter saw. What the waiter then reads it reads under l: the lock carries the memory model, the
 * wake is only a hint, and wakes may be spurious (a bit left armed on a slot waited on before,
 * another lock of the same slot, a message still in flight from an earlier wake).
 *
 * A bit stays set after the wait (the next wait in the same slot arms for free); arming
 * another slot clears it first, and the flush that completes the new bits completes the clears
 * too, so an add of the same bit later can never overtake them.
 */
#ifndef CM_SLEEP_H
#define CM_SLEEP_H

#include "rma/cm_rma.h"

#include <stdint.h>

#define CM_SLEEP_NONE    UINT32_MAX
#define CM_SLEEP_SLOTS   1024u
#define CM_SLEEP_AM_WAKE 24   /* the active message id of a wake (below cm_rma.h's maximum) */

typedef struct {
    cm_rma_t *rma;
    uint64_t *maps;       /* CM_SLEEP_SLOTS maps of words words: same address everywhere */
    uint64_t nap;         /* wakes received: the handler bumps it */
    uint32_t words;       /* words per map: ceil(P / 64) */
    uint32_t armed;       /* the slot whose maps hold our bit, or CM_SLEEP_NONE */
    uint64_t sleeps, wakes; /* waits that slept; wake messages sent */
} cm_sleep_t;

/* Bytes of each process's copy of the maps among nprocs processes. */
size_t cm_sleep_map_bytes(uint32_t nprocs);

/* Registers the wake's handler: before this process can arm, so before any wake to it. */
cm_status_t cm_sleep_init(cm_sleep_t *s, cm_rma_t *rma, uint64_t *maps);

/* With lock held: arms this process's bit in its map; returns what sleep must see change. */
cm_status_t cm_sleep_arm(cm_sleep_t *s, uint32_t lock, uint64_t *seen);

/* After releasing the lock: until a wake moves the nap word from seen. */
void cm_sleep_wait(cm_sleep_t *s, uint64_t seen, const cm_rma_why_t *why);

/* After a change under lock (released, or held): wakes every process armed on its slot. */
cm_status_t cm_sleep_wake(cm_sleep_t *s, uint32_t lock);

#endif
