/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by the libc interposers (src/access/cm_libc.c, src/access/cm_libc_scanf.c,
 * src/access/cm_libc_reads.c): bytes [p, p+n) were written by libc or the kernel;
 * the part in the shared region is reported as a store (forwarded under the
 * S-write variants). And bytes libc or the kernel is about to read, or to write
 * in part: reported as loads (made current under software line fills) while
 * cm_libc_reads is on. A line made current only after libc wrote into it would
 * take the home's bytes over whatever else libc wrote there in the same call.
 */
#ifndef CM_LIBC_H
#define CM_LIBC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The shared region's application view while the runtime is up ([lo, hi), hi == lo: not
 * up), and its page size: what the interposers clip to. */
typedef struct {
    uintptr_t lo, hi;
    size_t    page;
} cm_libc_region_t;

extern cm_libc_region_t cm_libc_region_ __attribute__((visibility("hidden")));

/* The runtime says where the region is (cm_init) and that it is gone (size 0, cm_finalize). */
void cm_libc_region(void *base, size_t size, size_t page) __attribute__((visibility("hidden")));

void cm_libc_wrote(const void *p, size_t n) __attribute__((visibility("hidden")));

/* [p, p+n) / the string at s (at most max bytes) is about to be read by libc or the kernel. */
void cm_libc_loading(const void *p, size_t n) __attribute__((visibility("hidden")));
void cm_libc_loading_str(const char *s, size_t max) __attribute__((visibility("hidden")));

/* Loads need the runtime (software line fills) or not: the read side of the interposers, and
 * printf's %s, report or stay out of the way. */
void cm_libc_reads(bool on) __attribute__((visibility("hidden")));
bool cm_libc_reads_active(void) __attribute__((visibility("hidden")));

#endif
