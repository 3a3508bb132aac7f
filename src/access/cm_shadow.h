/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shadow that inline access checks read (cmcc --inline; src/access/cm_shadow.c).
 * One byte per 8 bytes of address space at (addr >> 3) + CM_SHADOW_OFFSET: zero
 * means a store needs nothing from the runtime; non-zero makes the compiled
 * check call the store hook.
 */
#ifndef CM_SHADOW_H
#define CM_SHADOW_H

#include "cm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 64 TiB: the shadow of the 47-bit user address space is [64 TiB, 80 TiB), clear of the
 * replica heap (24 TiB), the shared region (32 TiB) and where the kernel puts programs and
 * libraries (85 TiB and up). cmcc passes the same value to the compiler. */
#define CM_SHADOW_OFFSET 0x400000000000ULL
#define CM_SHADOW_SPAN   (1ULL << 44)

/* Before any instrumented code runs (a library constructor), if the program has inline checks:
 * a read-only shadow of zeros for every address. */
cm_status_t cm_shadow_map(void);
bool cm_shadow_mapped(void);

/* Writes the shadow of shared page p: n bytes at sh (0xff: accesses call out; 0: nothing). */
typedef void (*cm_shadow_paint_t)(uint64_t p, uint8_t *sh, size_t n);

/* The protocol's pages [app, app + npages * page): their shadow is filled on first use, page
 * by page of shadow, by paint for each shared page p it covers. */
cm_status_t cm_shadow_attach(void *app, uint64_t npages, size_t page, cm_shadow_paint_t paint);
void cm_shadow_detach(void);

/* Shared page p's shadow bytes (*n of them) where its shadow page is filled, for the protocol
 * to write when the page changes; NULL where it is not: paint fills it on first use. */
uint8_t *cm_shadow_page(uint64_t p, size_t *n);

/* The shadow of [addr, addr + len) within one shared page (8-byte aligned ends): armed or not.
 * Software line fills arm and disarm single lines. */
void cm_shadow_set_range(uintptr_t addr, size_t len, bool armed);

/* Forgets every filled shadow page: each is filled again from armed() on its next use. */
cm_status_t cm_shadow_reset(void);

/* From the SIGSEGV handler: a fault at addr in the shared region's shadow is a first use,
 * filled here (true); anything else is not the shadow's (false). */
bool cm_shadow_fault(uintptr_t addr);

#endif
