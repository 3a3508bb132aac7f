/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stores whose check the compiler folded into a load check (NSS*).
 *
 * With load checks on, GCC's address sanitizer checks a location once per
 * extended basic block: `x += 2`, or a load of x followed by a store to x with
 * no call between, gets a single check, reported as a load. There is no option
 * to turn that off. Software doubling (the S of **S*) must still forward such a
 * store, so a load report on a page whose stores are forwarded watches its line:
 * the line's bytes are kept (a twin) and compared at the next flush (every
 * release and acquire), where what changed is forwarded like any store. Lines
 * loaded and not stored cost the copy and the comparison, nothing else.
 */
#ifndef CM_FOLDED_H
#define CM_FOLDED_H

#include "cm.h"

#include <stddef.h>
#include <stdint.h>

/* Forwards len bytes at app address addr (within one line) as a store. */
typedef void (*cm_folded_fwd_t)(uintptr_t addr, size_t len);

typedef struct {
    uintptr_t app;      /* the application view of the region */
    char      *net;     /* the same bytes, never protected */
    size_t    line;
    unsigned  lshift;
    uint64_t  *bits;    /* a bit per line of the region: watched */
    size_t    bits_len;
    uintptr_t *lines;   /* watched lines' addresses */
    uint8_t   *twins;   /* their bytes when watching began */
    size_t    n, cap;
    uint64_t  found;    /* runs of changed bytes forwarded */
} cm_folded_t;

cm_status_t cm_folded_init(cm_folded_t *f, void *app, char *net, size_t bytes, size_t line);
void cm_folded_fini(cm_folded_t *f);

/* [addr, addr + len) (within one page) was reported as a load: watch its lines. */
void cm_folded_watch(cm_folded_t *f, uintptr_t addr, size_t len);

/* Every watched line compared with its twin, each changed run forwarded; nothing watched after. */
void cm_folded_flush(cm_folded_t *f, cm_folded_fwd_t fwd);

#endif
