/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sleeping on a lock's word until someone who changed it says so: the blocking half of the
 * condition waits and PAUSE flags the TreadMarks and PARMACS layers build from locks.
 *
 * Each lock has, at its home (lock l at l % nprocs, as the MCS tails), a map of the processes
 * asleep on it, one bit each, ceil(P / 64) words. Only a process changes its own bit, with an
 * add that never fails (it knows whether its bit is set: `armed`). Each process has a nap word
 * that wakers put fresh values into (sender's rank and serial: never a value seen before).
 *
 * Waiter, holding lock l:   seen = nap; bit set in l's map (complete); release l;
 *                           sleep until nap != seen; acquire l; look again.
 * Waker, after changing the word under l and releasing l: get l's map; a put to each set bit's
 * nap word, fire-and-forget.
 * The waiter's bit is complete before its release of l, so a waker whose change follows that
 * release (it acquired l after it) reads the bit; its put changes nap from whatever the waiter
 * saw. What the waiter then reads it reads under l: the lock carries the memory model, the
 * wake is only a hint, and wakes may be spurious (a bit left armed on a lock waited on before,
 * a put still in flight from an earlier wake).
 *
 * A bit stays set after the wait (the next wait on the same lock arms for free); arming
 * another lock clears it first, and the flush that completes the new bit completes the clear
 * too, so an add of the same bit later can never overtake it.
 */
#ifndef CM_SLEEP_H
#define CM_SLEEP_H

#include "rma/cm_rma.h"

#include <stdint.h>

#define CM_SLEEP_NONE UINT32_MAX

typedef struct {
    cm_rma_t *rma;
    char     *maps;       /* lock l's map at home l % P, (l / P) * words words in: same address everywhere */
    uint64_t *nap;        /* this process's nap word (same address in every process) */
    uint32_t words;       /* words per map: ceil(P / 64) */
    uint32_t armed;       /* the lock whose map holds our bit, or CM_SLEEP_NONE */
    uint64_t serial;      /* wakes sent */
    uint64_t *map_buf;    /* words words: a map fetched by a waker */
    uint64_t sleeps, wakes; /* waits that slept; puts sent to sleepers */
} cm_sleep_t;

/* Bytes of maps a process hosts for locks_per_proc locks among nprocs processes. */
size_t cm_sleep_map_bytes(uint32_t locks_per_proc, uint32_t nprocs);

cm_status_t cm_sleep_init(cm_sleep_t *s, cm_rma_t *rma, char *maps, uint64_t *nap);
void cm_sleep_fini(cm_sleep_t *s);

/* With lock held: arms this process's bit in its map; returns what sleep must see change. */
cm_status_t cm_sleep_arm(cm_sleep_t *s, uint32_t lock, uint64_t *seen);

/* After releasing the lock: until a waker's put changes the nap word from seen. */
void cm_sleep_wait(cm_sleep_t *s, uint64_t seen, const cm_rma_why_t *why);

/* After a change under lock, the lock released: wakes every process armed on it. */
cm_status_t cm_sleep_wake(cm_sleep_t *s, uint32_t lock);

#endif
