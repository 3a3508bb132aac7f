/* SPDX-License-Identifier: BSD-3-Clause */
/* Stores folded into load checks: line twins, compared at flush (see cm_folded.h). */
#include "config.h"
#include "src/cashmere/cm_folded.h"
#include "src/util/cm_log.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

cm_status_t cm_folded_init(cm_folded_t *f, void *app, char *net, size_t bytes, size_t line)
{
    memset(f, 0, sizeof(*f));
    f->app      = (uintptr_t)app;
    f->net      = net;
    f->line     = line;
    f->lshift   = (unsigned)__builtin_ctzll(line);
    f->bits_len = (bytes / line + 63) / 64 * sizeof(uint64_t);
    /* A bit per line of the whole region, reserved; only what loads touch is ever committed. */
    f->bits = mmap(NULL, f->bits_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (f->bits == MAP_FAILED) {
        f->bits = NULL;
        cm_error("cashmere: out of memory for the folded-store line map");
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

void cm_folded_fini(cm_folded_t *f)
{
    if (f->bits != NULL) {
        munmap(f->bits, f->bits_len);
    }
    free(f->lines);
    free(f->twins);
    memset(f, 0, sizeof(*f));
}

static void cm_folded_add(cm_folded_t *f, uintptr_t la)
{
    size_t i = (la - f->app) >> f->lshift;

    if (f->bits[i / 64] & (1ull << (i % 64))) {
        return;
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 256;
        uintptr_t *l = realloc(f->lines, cap * sizeof(*l));
        uint8_t *t = (l != NULL) ? realloc(f->twins, cap * f->line) : NULL;
        if (l == NULL || t == NULL) {
            cm_fatal(1, "cashmere: out of memory for %zu watched lines", cap);
        }
        f->lines = l;
        f->twins = t;
        f->cap   = cap;
    }
    f->bits[i / 64] |= 1ull << (i % 64);
    f->lines[f->n] = la;
    memcpy(f->twins + f->n * f->line, f->net + (la - f->app), f->line);
    f->n++;
}

void cm_folded_watch(cm_folded_t *f, uintptr_t addr, size_t len)
{
    uintptr_t mask = ~(uintptr_t)(f->line - 1);

    for (uintptr_t la = addr & mask; la < addr + len; la += f->line) {
        cm_folded_add(f, la);
    }
}

void cm_folded_flush(cm_folded_t *f, cm_folded_fwd_t fwd)
{
    for (size_t k = 0; k < f->n; k++) {
        uintptr_t la = f->lines[k];
        const uint8_t *cur = (const uint8_t *)f->net + (la - f->app);
        const uint8_t *tw = f->twins + k * f->line;
        size_t i = (la - f->app) >> f->lshift;

        f->bits[i / 64] &= ~(1ull << (i % 64));
        if (memcmp(cur, tw, f->line) == 0) {
            continue;
        }
        /* Only the bytes that changed: the rest of the line may be another writer's. */
        for (size_t b = 0; b < f->line;) {
            size_t e;
            if (cur[b] == tw[b]) {
                b++;
                continue;
            }
            for (e = b + 1; e < f->line && cur[e] != tw[e]; e++) {
            }
            fwd(la + b, e - b);
            f->found++;
            b = e;
        }
    }
    f->n = 0;
}
