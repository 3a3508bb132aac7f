/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shadow of the inline access checks (cmcc --inline).
 *
 * GCC's kernel-address instrumentation, with recovery and no call threshold,
 * compiles every store to addr as: load the byte at (addr >> 3) + offset; if
 * it is not zero, call __asan_report_store<N>_noabort(addr) (the store hook,
 * src/access/cm_hooks.c); then store. So a store costs three or four instructions
 * unless its shadow byte says the runtime must see it.
 *
 * The shadow is a read-only mapping of zeros over the whole user address
 * space (16 TiB, reserved, never committed): private memory never calls out.
 * The part covering the shared region's application view is inaccessible
 * until first read; the fault fills that one shadow page (4 KiB, covering 8
 * shared pages) from the protocol's answer for each of them (armed: 0xff, so
 * that stores of every size call out; or 0). So arming costs what the program
 * touches, not the size of the region, and the protocol can disarm a page it
 * is owed nothing for (homed here, its write transition done) with a 512-byte
 * memset, and arm it again when that changes.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/access/cm_shadow.h"
#include "util/cm_log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CM_SHADOW_PAGE 4096u

static struct {
    bool     mapped;
    uint8_t  *lo;          /* the shared region's shadow */
    size_t   len;
    uint64_t npages;
    size_t   per_page;     /* shadow bytes per shared page */
    uint64_t *filled;      /* a bit per shadow page: filled since attach/reset */
    char     *app;
    cm_shadow_paint_t paint;
} cm_sh;

static inline uint8_t *cm_shadow_of(uintptr_t a)
{
    return (uint8_t *)((a >> 3) + CM_SHADOW_OFFSET);
}

cm_status_t cm_shadow_map(void)
{
    void *want = (void *)(uintptr_t)CM_SHADOW_OFFSET, *p;

    if (cm_sh.mapped) {
        return CM_OK;
    }
    p = mmap(want, CM_SHADOW_SPAN, PROT_READ,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != want) {
        cm_error("cannot map the inline checks' shadow at %p (%" PRIu64 " TiB): %s", want,
                 (uint64_t)(CM_SHADOW_SPAN >> 40),
                 p == MAP_FAILED ? strerror(errno) : "placed elsewhere by the kernel");
        if (p != MAP_FAILED) {
            munmap(p, CM_SHADOW_SPAN);
        }
        return CM_ERR_NO_MEMORY;
    }
    cm_sh.mapped = true;
    return CM_OK;
}

bool cm_shadow_mapped(void)
{
    return cm_sh.mapped;
}

cm_status_t cm_shadow_attach(void *app, uint64_t npages, size_t page, cm_shadow_paint_t paint)
{
    uintptr_t lo, hi;
    size_t nshadow;

    if (!cm_sh.mapped) {
        return CM_OK;
    }
    if (page % 8 != 0 || (CM_SHADOW_PAGE % (page / 8) != 0 && (page / 8) % CM_SHADOW_PAGE != 0) ||
        ((uintptr_t)app & (page * 8 - 1)) != 0) {
        cm_error("the inline checks need the shared region aligned to %zu bytes", page * 8);
        return CM_ERR_INVALID;
    }
    lo = (uintptr_t)cm_shadow_of((uintptr_t)app) & ~(uintptr_t)(CM_SHADOW_PAGE - 1);
    hi = ((uintptr_t)cm_shadow_of((uintptr_t)app + npages * page) + CM_SHADOW_PAGE - 1) &
         ~(uintptr_t)(CM_SHADOW_PAGE - 1);
    nshadow = (hi - lo) / CM_SHADOW_PAGE;
    cm_sh.filled = calloc((nshadow + 63) / 64, sizeof(uint64_t));
    if (cm_sh.filled == NULL) {
        cm_error("out of memory for the shadow's page map");
        return CM_ERR_NO_MEMORY;
    }
    cm_sh.lo       = (uint8_t *)lo;
    cm_sh.len      = hi - lo;
    cm_sh.npages   = npages;
    cm_sh.per_page = page / 8;
    cm_sh.app      = app;
    cm_sh.paint    = paint;
    if (mprotect(cm_sh.lo, cm_sh.len, PROT_NONE) != 0) {
        cm_error("mprotect of the shared region's shadow failed: %s", strerror(errno));
        free(cm_sh.filled);
        cm_sh.filled = NULL;
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

void cm_shadow_detach(void)
{
    if (cm_sh.filled == NULL) {
        return;
    }
    /* Back to zeros: the hooks see nothing from now on. */
    madvise(cm_sh.lo, cm_sh.len, MADV_DONTNEED);
    mprotect(cm_sh.lo, cm_sh.len, PROT_READ);
    free(cm_sh.filled);
    cm_sh.filled = NULL;
    cm_sh.paint  = NULL;
}

static inline bool cm_shadow_is_filled(size_t i)
{
    return (cm_sh.filled[i / 64] & (1ull << (i % 64))) != 0;
}

/* Fills shadow page i from paint(). */
static void cm_shadow_fill(size_t i)
{
    uint8_t *sp = cm_sh.lo + i * CM_SHADOW_PAGE;
    /* The shared page whose shadow starts at sp (the region starts at a shadow page boundary). */
    uint64_t p = (uint64_t)(i * CM_SHADOW_PAGE) / cm_sh.per_page;

    if (mprotect(sp, CM_SHADOW_PAGE, PROT_READ | PROT_WRITE) != 0) {
        cm_fatal(1, "mprotect of a shadow page failed: %s", strerror(errno));
    }
    if (cm_sh.per_page >= CM_SHADOW_PAGE) {
        /* A shared page larger than what one shadow page covers: paint its part here. */
        size_t part = (i * CM_SHADOW_PAGE) % cm_sh.per_page;
        if (part == 0 && p < cm_sh.npages) {
            uint8_t *whole = sp; /* the first of its shadow pages: paint all, map the rest */
            for (size_t k = 1; k < cm_sh.per_page / CM_SHADOW_PAGE; k++) {
                if (mprotect(sp + k * CM_SHADOW_PAGE, CM_SHADOW_PAGE, PROT_READ | PROT_WRITE) != 0) {
                    cm_fatal(1, "mprotect of a shadow page failed: %s", strerror(errno));
                }
                cm_sh.filled[(i + k) / 64] |= 1ull << ((i + k) % 64);
            }
            cm_sh.paint(p, whole, cm_sh.per_page);
        } else if (part != 0) {
            /* Reached through a later shadow page of page p first: fill from its start. */
            cm_shadow_fill(i - part / CM_SHADOW_PAGE);
            return;
        }
    } else {
        for (size_t off = 0; off < CM_SHADOW_PAGE; off += cm_sh.per_page, p++) {
            if (p < cm_sh.npages) {
                cm_sh.paint(p, sp + off, cm_sh.per_page);
            }
        }
    }
    cm_sh.filled[i / 64] |= 1ull << (i % 64);
}

bool cm_shadow_fault(uintptr_t addr)
{
    uintptr_t off = addr - (uintptr_t)cm_sh.lo;

    if (cm_sh.filled == NULL || off >= cm_sh.len) {
        return false;
    }
    cm_shadow_fill(off / CM_SHADOW_PAGE);
    return true;
}

uint8_t *cm_shadow_page(uint64_t p, size_t *n)
{
    size_t off;

    if (cm_sh.filled == NULL || p >= cm_sh.npages) {
        return NULL;
    }
    off = (size_t)p * cm_sh.per_page;
    if (!cm_shadow_is_filled(off / CM_SHADOW_PAGE)) {
        return NULL;
    }
    *n = cm_sh.per_page;
    return cm_sh.lo + off;
}

void cm_shadow_set_range(uintptr_t addr, size_t len, bool armed)
{
    size_t off, i;

    if (cm_sh.filled == NULL) {
        return;
    }
    off = (addr - (uintptr_t)cm_sh.app) / 8;
    i   = off / CM_SHADOW_PAGE;
    if (off < cm_sh.len && cm_shadow_is_filled(i)) {
        memset(cm_sh.lo + off, armed ? 0xff : 0, len / 8);
    }
}

cm_status_t cm_shadow_reset(void)
{
    if (cm_sh.filled == NULL) {
        return CM_OK;
    }
    if (madvise(cm_sh.lo, cm_sh.len, MADV_DONTNEED) != 0 ||
        mprotect(cm_sh.lo, cm_sh.len, PROT_NONE) != 0) {
        cm_error("reset of the shared region's shadow failed: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    memset(cm_sh.filled, 0, (cm_sh.len / CM_SHADOW_PAGE + 63) / 64 * sizeof(uint64_t));
    return CM_OK;
}
