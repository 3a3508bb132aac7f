/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Watched lines: stores that escape their checks, for software write
 * forwarding (the S of **S*).
 *
 * GCC's address-sanitizer instrumentation checks an address once where one
 * check dominates another of the same address with no call between: its
 * sanopt pass drops the dominated check, and the instrumentation itself skips
 * a reference it already checked in the same block. There is no option to turn
 * either off. So a store report means "this location is written from now on,
 * until the next call", not "these bytes, now":
 *
 *   x = -1; y = 1; if (c) x = 0;       x is reported once, before its first store
 *   s = 0; for (...) s += a[j];        s is reported once, above the loop
 *   x += 2;                            with load checks: a single load report
 *
 * Forwarding only what a report names, at the next report (the N variants) or
 * when a merge-buffer line is displaced, loses the later stores. So every line
 * a store (or, with load checks, a load) is reported for on a page homed
 * elsewhere is watched until the next flush: its bytes are kept when watching
 * begins (a twin), the twin follows what the write mechanism forwards early,
 * and the flush (every release and acquire, before any page is dropped)
 * forwards whatever still differs from the twin, byte runs only: the rest of a
 * line may be another writer's. Synchronization is always a call, so no store
 * of an interval escapes its flush.
 */
#ifndef CM_WATCH_H
#define CM_WATCH_H

#include "cm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CM_WATCH_LINE  64u
#define CM_WATCH_SHIFT 6u

/* Forwards len bytes at app address addr (within one line) as a store. */
typedef void (*cm_watch_fwd_t)(uintptr_t addr, size_t len, void *arg);

typedef struct {
    uintptr_t app;      /* the application view of the region */
    char      *net;     /* the same bytes, never protected */
    size_t    bytes;
    uint32_t  *slot;    /* per line of the region: 1 + its index below, 0: not watched */
    size_t    slot_len; /* reserved for the whole region, committed where lines are watched */
    uintptr_t *lines;   /* watched lines' addresses */
    uint8_t   *twins;   /* their bytes as the home has them, as far as this process knows */
    uint64_t  *force;   /* per watched line, bytes the flush forwards even if they match the
                           twin (cm_watch_stored) */
    size_t    n, cap;
    uint64_t  found;    /* runs of bytes forwarded at a flush: stores no report named */
} cm_watch_t;

cm_status_t cm_watch_init(cm_watch_t *w, void *app, char *net, size_t bytes);
void cm_watch_fini(cm_watch_t *w);

/* Whether the line of app address addr is watched (the write mechanism's fast path). */
static inline bool cm_watch_is(const cm_watch_t *w, uintptr_t addr)
{
    return w->slot[(addr - w->app) >> CM_WATCH_SHIFT] != 0;
}

/* Watches the lines of [addr, addr + len) (within the region): their bytes now are the twin. */
void cm_watch_lines(cm_watch_t *w, uintptr_t addr, size_t len);

/* [addr, addr + len) (within one line) was just forwarded: the twin takes those bytes. */
static inline void cm_watch_forwarded(cm_watch_t *w, uintptr_t addr, size_t len)
{
    uint32_t s = w->slot[(addr - w->app) >> CM_WATCH_SHIFT];

    if (s != 0) {
        memcpy(w->twins + (size_t)(s - 1) * CM_WATCH_LINE + (addr & (CM_WATCH_LINE - 1)),
               w->net + (addr - w->app), len);
    }
}

/* [addr, addr + len), in watched lines, may hold stores made before they were reported (the
 * libc wrappers report a memcpy after it copied): the next flush forwards those bytes whatever
 * the twin says. */
void cm_watch_stored(cm_watch_t *w, uintptr_t addr, size_t len);

/* As cm_watch_forwarded, for a range that may span lines. */
void cm_watch_forwarded_range(cm_watch_t *w, uintptr_t addr, size_t len);

/* Every watched line compared with its twin, each changed run handed to fwd; none watched after. */
void cm_watch_flush(cm_watch_t *w, cm_watch_fwd_t fwd, void *arg);

#endif
