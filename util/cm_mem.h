/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Large private arrays indexed by shared page (page tables, maps), reserved
 * for the whole region and committed only where written: the shared region is
 * address space, and what a process pays for it must follow the pages it
 * touches (docs/ARCHITECTURE.md, "Memory and processes"), not the size it asked for.
 */
#ifndef CM_MEM_H
#define CM_MEM_H

#include <stddef.h>

/* len bytes of zeros, reserved (MAP_NORESERVE), committed page by page on first write; NULL
 * if the address space cannot hold it. */
void *cm_mem_reserve(size_t len);

/* Back to zeros, giving committed memory back (what cm_mem_reserve returned). */
void cm_mem_zero(void *p, size_t len);

void cm_mem_release(void *p, size_t len);

#endif
