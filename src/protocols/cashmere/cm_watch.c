/* SPDX-License-Identifier: BSD-3-Clause */
/* Watched lines: twins compared at flush (see cm_watch.h). */
#include "config.h"
#include "src/protocols/cashmere/cm_watch.h"
#include "util/cm_log.h"

#include <stdlib.h>
#include <sys/mman.h>

cm_status_t cm_watch_init(cm_watch_t *w, void *app, char *net, size_t bytes)
{
    memset(w, 0, sizeof(*w));
    w->app      = (uintptr_t)app;
    w->net      = net;
    w->bytes    = bytes;
    w->slot_len = (bytes >> CM_WATCH_SHIFT) * sizeof(uint32_t);
    /* A slot per line of the whole region, reserved: only what stores touch is committed. */
    w->slot = mmap(NULL, w->slot_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (w->slot == MAP_FAILED) {
        w->slot = NULL;
        cm_error("cashmere: cannot reserve the watched-line map (%zu bytes)", w->slot_len);
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

void cm_watch_fini(cm_watch_t *w)
{
    if (w->slot != NULL) {
        munmap(w->slot, w->slot_len);
    }
    free(w->lines);
    free(w->twins);
    free(w->force);
    memset(w, 0, sizeof(*w));
}

static void cm_watch_add(cm_watch_t *w, uintptr_t la)
{
    size_t i = (la - w->app) >> CM_WATCH_SHIFT;

    if (w->slot[i] != 0) {
        return;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 256;
        uintptr_t *l = realloc(w->lines, cap * sizeof(*l));
        uint8_t *t;
        if (l == NULL) {
            cm_fatal(1, "cashmere: out of memory for %zu watched lines", cap);
        }
        w->lines = l;
        t = realloc(w->twins, cap * CM_WATCH_LINE);
        if (t == NULL) {
            cm_fatal(1, "cashmere: out of memory for %zu watched lines", cap);
        }
        w->twins = t;
        {
            uint64_t *f = realloc(w->force, cap * sizeof(*f));
            if (f == NULL) {
                cm_fatal(1, "cashmere: out of memory for %zu watched lines", cap);
            }
            w->force = f;
        }
        w->cap = cap;
    }
    w->slot[i]     = (uint32_t)(w->n + 1);
    w->lines[w->n] = la;
    memcpy(w->twins + w->n * CM_WATCH_LINE, w->net + (la - w->app), CM_WATCH_LINE);
    w->force[w->n] = 0;
    w->n++;
}

void cm_watch_lines(cm_watch_t *w, uintptr_t addr, size_t len)
{
    uintptr_t mask = ~(uintptr_t)(CM_WATCH_LINE - 1);

    for (uintptr_t la = addr & mask; la < addr + len; la += CM_WATCH_LINE) {
        cm_watch_add(w, la);
    }
}

void cm_watch_stored(cm_watch_t *w, uintptr_t addr, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        uintptr_t a = addr + i;
        uint32_t s = w->slot[(a - w->app) >> CM_WATCH_SHIFT];
        if (s != 0) {
            w->force[s - 1] |= 1ull << (a & (CM_WATCH_LINE - 1));
        }
    }
}

void cm_watch_forwarded_range(cm_watch_t *w, uintptr_t addr, size_t len)
{
    while (len > 0) {
        size_t n = CM_WATCH_LINE - (addr & (CM_WATCH_LINE - 1));
        n = (n < len) ? n : len;
        cm_watch_forwarded(w, addr, n);
        addr += n;
        len -= n;
    }
}

void cm_watch_flush(cm_watch_t *w, cm_watch_fwd_t fwd, void *arg)
{
    for (size_t k = 0; k < w->n; k++) {
        uintptr_t la = w->lines[k];
        const uint8_t *cur = (const uint8_t *)w->net + (la - w->app);
        const uint8_t *tw = w->twins + k * CM_WATCH_LINE;

        uint64_t force = w->force[k];

        w->slot[(la - w->app) >> CM_WATCH_SHIFT] = 0; /* before fwd, which may look it up */
        if (force == 0 && memcmp(cur, tw, CM_WATCH_LINE) == 0) {
            continue;
        }
        /* Only the bytes that changed (or were stored before they were reported): the rest of
         * the line may be another writer's. */
        for (size_t b = 0; b < CM_WATCH_LINE;) {
            size_t e;
            if (cur[b] == tw[b] && !(force >> b & 1)) {
                b++;
                continue;
            }
            for (e = b + 1; e < CM_WATCH_LINE && (cur[e] != tw[e] || (force >> e & 1)); e++) {
            }
            fwd(la + b, e - b, arg);
            w->found++;
            b = e;
        }
    }
    w->n = 0;
}
