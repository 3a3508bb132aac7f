/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "src/runtime/cm_heap.h"

#include <stdlib.h>
#include <string.h>

#define CM_HEAP_ALIGN 64 /* a cache line: small blocks never share one */

void cm_heap_init(cm_heap_t *h, uint64_t size, uint64_t page)
{
    memset(h, 0, sizeof(*h));
    h->size = size;
    h->page = page;
}

void cm_heap_fini(cm_heap_t *h)
{
    free(h->freel);
    free(h->used);
    memset(h, 0, sizeof(*h));
}

static int cm_heap_grow(cm_extent_t **v, size_t n, size_t *cap)
{
    if (n < *cap) {
        return 0;
    }
    size_t ncap = *cap ? 2 * *cap : 16;
    cm_extent_t *p = realloc(*v, ncap * sizeof(*p));
    if (p == NULL) {
        return -1;
    }
    *v   = p;
    *cap = ncap;
    return 0;
}

static inline uint64_t cm_heap_round(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

cm_status_t cm_heap_alloc(cm_heap_t *h, uint64_t size, uint64_t *off)
{
    /* Blocks of a page or more start on a page and end on one: no false sharing around them. */
    uint64_t align = (size >= h->page) ? h->page : CM_HEAP_ALIGN;
    uint64_t len   = cm_heap_round(size, align);
    uint64_t start = 0;
    size_t i;

    if (size == 0 || len < size) {
        return CM_ERR_INVALID;
    }
    if (cm_heap_grow(&h->used, h->nused, &h->used_cap) != 0) {
        return CM_ERR_NO_MEMORY;
    }
    /* First fit among freed extents. */
    for (i = 0; i < h->nfree; i++) {
        cm_extent_t *f = &h->freel[i];
        start = cm_heap_round(f->off, align);
        if (start + len <= f->off + f->len) {
            break;
        }
    }
    if (i < h->nfree) {
        cm_extent_t *f = &h->freel[i];
        uint64_t f_end = f->off + f->len, head = start - f->off, tail = f_end - (start + len);
        if (head != 0 && tail != 0) {
            if (cm_heap_grow(&h->freel, h->nfree, &h->free_cap) != 0) {
                return CM_ERR_NO_MEMORY;
            }
            f = &h->freel[i];
            memmove(&h->freel[i + 2], &h->freel[i + 1], (h->nfree - i - 1) * sizeof(*f));
            h->freel[i + 1].off = start + len;
            h->freel[i + 1].len = tail;
            h->nfree++;
            f->len = head;
        } else if (head != 0) {
            f->len = head;
        } else if (tail != 0) {
            f->off = start + len;
            f->len = tail;
        } else {
            memmove(&h->freel[i], &h->freel[i + 1], (h->nfree - i - 1) * sizeof(*f));
            h->nfree--;
        }
    } else {
        start = cm_heap_round(h->top, align);
        if (start > h->size || len > h->size - start) {
            return CM_ERR_NO_MEMORY;
        }
        if (start > h->top) {
            /* The alignment gap stays usable. */
            if (cm_heap_grow(&h->freel, h->nfree, &h->free_cap) != 0) {
                return CM_ERR_NO_MEMORY;
            }
            h->freel[h->nfree].off = h->top;
            h->freel[h->nfree].len = start - h->top;
            h->nfree++;
        }
        h->top = start + len;
    }
    h->used[h->nused].off = start;
    h->used[h->nused].len = len;
    h->nused++;
    h->in_use += len;
    *off = start;
    return CM_OK;
}

cm_status_t cm_heap_free(cm_heap_t *h, uint64_t off)
{
    size_t i, j;
    cm_extent_t b;

    for (i = 0; i < h->nused && h->used[i].off != off; i++) {
    }
    if (i == h->nused) {
        return CM_ERR_INVALID;
    }
    b = h->used[i];
    h->used[i] = h->used[--h->nused];
    h->in_use -= b.len;

    /* Insert in order and merge with the neighbours; what reaches top goes back to it. */
    for (j = 0; j < h->nfree && h->freel[j].off < b.off; j++) {
    }
    if (j > 0 && h->freel[j - 1].off + h->freel[j - 1].len == b.off) {
        j--;
        h->freel[j].len += b.len;
    } else {
        if (cm_heap_grow(&h->freel, h->nfree, &h->free_cap) != 0) {
            return CM_ERR_NO_MEMORY;
        }
        memmove(&h->freel[j + 1], &h->freel[j], (h->nfree - j) * sizeof(b));
        h->freel[j] = b;
        h->nfree++;
    }
    if (j + 1 < h->nfree && h->freel[j].off + h->freel[j].len == h->freel[j + 1].off) {
        h->freel[j].len += h->freel[j + 1].len;
        memmove(&h->freel[j + 1], &h->freel[j + 2], (h->nfree - j - 2) * sizeof(b));
        h->nfree--;
    }
    if (h->nfree > 0 && h->freel[h->nfree - 1].off + h->freel[h->nfree - 1].len == h->top) {
        h->top = h->freel[h->nfree - 1].off;
        h->nfree--;
    }
    return CM_OK;
}
