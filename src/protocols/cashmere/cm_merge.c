/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "src/protocols/cashmere/cm_merge.h"
#include "util/cm_log.h"

#include <stdlib.h>

void cm_merge_init(cm_merge_t *m, cm_merge_entry_t *entries, unsigned capacity,
                   cm_merge_write_fn_t write, void *arg)
{
    m->ops          = &cm_merge_buffer_ops;
    m->entries      = entries;
    m->capacity     = capacity;
    m->used         = 0;
    m->victim       = 0;
    m->last         = 0;
    m->write        = write;
    m->arg          = arg;
    m->line_flushes = 0;
}

void cm_merge_write_line(cm_merge_t *m, uintptr_t line, uint64_t mask)
{
    m->line_flushes++;
    while (mask != 0) {
        unsigned start = (unsigned)__builtin_ctzll(mask);
        uint64_t run   = mask >> start;
        unsigned len   = (run == ~0ull) ? 64u : (unsigned)__builtin_ctzll(~run);
        m->write(line + start, len, m->arg);
        mask &= (len == 64) ? 0 : ~(((1ull << len) - 1) << start);
    }
}

static void cm_merge_mark(cm_merge_t *m, uintptr_t line, uint64_t bits)
{
    cm_merge_entry_t *e;

    if (m->used > 0 && m->entries[m->last].line == line) {
        m->entries[m->last].mask |= bits;
        return;
    }
    for (unsigned i = 0; i < m->used; i++) {
        if (m->entries[i].line == line) {
            m->entries[i].mask |= bits;
            m->last = i;
            return;
        }
    }
    if (m->used < m->capacity) {
        m->last = m->used++;
    } else {
        /* Displace the oldest line: it goes to its home now. */
        e = &m->entries[m->victim];
        cm_merge_write_line(m, e->line, e->mask);
        m->last   = m->victim;
        m->victim = (m->victim + 1) % m->capacity;
    }
    m->entries[m->last].line = line;
    m->entries[m->last].mask = bits;
}

void cm_merge_record(cm_merge_t *m, uintptr_t addr, size_t len)
{
    while (len > 0) {
        uintptr_t line = addr & ~(uintptr_t)(CM_MERGE_LINE - 1);
        unsigned off   = (unsigned)(addr - line);
        size_t n       = CM_MERGE_LINE - off;
        uint64_t bits;

        if (n > len) {
            n = len;
        }
        bits = (n == 64) ? ~0ull : (((1ull << n) - 1) << off);
        cm_merge_mark(m, line, bits);
        addr += n;
        len  -= n;
    }
}

void cm_merge_flush(cm_merge_t *m)
{
    /* Oldest first, as displacement would have written them. */
    for (unsigned k = 0; k < m->used; k++) {
        unsigned i = (m->used < m->capacity) ? k : (m->victim + k) % m->capacity;
        cm_merge_write_line(m, m->entries[i].line, m->entries[i].mask);
    }
    m->used   = 0;
    m->victim = 0;
    m->last   = 0;
}

/* ---- the merge buffer behind its ops table ------------------------------------------------ */

static cm_status_t cm_merge_buffer_init(unsigned lines, cm_merge_write_fn_t write, void *arg,
                                        cm_merge_t **self)
{
    cm_merge_t *m = calloc(1, sizeof(*m));
    cm_merge_entry_t *entries = calloc(lines ? lines : 1, sizeof(*entries));

    if (m == NULL || entries == NULL) {
        free(m);
        free(entries);
        cm_error("cashmere: out of memory for a merge buffer of %u lines", lines);
        return CM_ERR_NO_MEMORY;
    }
    cm_merge_init(m, entries, lines ? lines : 1, write, arg);
    *self = m;
    return CM_OK;
}

static void cm_merge_buffer_fini(cm_merge_t *m)
{
    free(m->entries);
    free(m);
}

const cm_merge_ops_t cm_merge_buffer_ops = {
    .name   = "buffer",
    .init   = cm_merge_buffer_init,
    .fini   = cm_merge_buffer_fini,
    .record = cm_merge_record,
    .flush  = cm_merge_flush,
};
