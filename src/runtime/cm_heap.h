/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared heap: a deterministic allocator over the shared region. Every
 * process makes the same cm_malloc/cm_free calls in the same order
 * (collective), so every process computes the same addresses without any
 * communication. Bookkeeping is private memory: allocating never touches the
 * shared pages themselves.
 */
#ifndef CM_HEAP_H
#define CM_HEAP_H

#include "cm.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t off;
    uint64_t len;
} cm_extent_t;

typedef struct {
    uint64_t    size;      /* bytes managed */
    uint64_t    page;      /* page size: large blocks are page aligned, padded to pages */
    uint64_t    top;       /* everything at or above is free */
    uint64_t    in_use;
    cm_extent_t *freel;    /* free extents below top, sorted by offset */
    size_t      nfree, free_cap;
    cm_extent_t *used;     /* allocated blocks */
    size_t      nused, used_cap;
} cm_heap_t;

void cm_heap_init(cm_heap_t *h, uint64_t size, uint64_t page);
void cm_heap_fini(cm_heap_t *h);

/* Offset of a new block, or CM_ERR_NO_MEMORY (heap exhausted) / CM_ERR_INVALID (size 0). */
cm_status_t cm_heap_alloc(cm_heap_t *h, uint64_t size, uint64_t *off);

/* Frees the block at off; CM_ERR_INVALID if no block starts there. */
cm_status_t cm_heap_free(cm_heap_t *h, uint64_t off);

#endif
