/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The software merge buffer of the *SM variants: a small fully associative
 * write-combining buffer of 64-byte line entries, each with a per-byte dirty
 * mask (the paper's merging write buffer with per-word dirty bits, in
 * software). Recording a store marks its bytes; a line is written through to
 * its home when it is displaced (FIFO) and when the buffer is flushed at a
 * release. The data itself is not buffered: at flush time it is read from
 * memory, so later stores to the same bytes merge for free.
 */
#ifndef CM_MERGE_H
#define CM_MERGE_H

#include "cm.h"

#include <stddef.h>
#include <stdint.h>

#define CM_MERGE_LINE 64

typedef struct {
    uintptr_t line;  /* line address (aligned) */
    uint64_t  mask;  /* bit i: byte line + i was stored to */
} cm_merge_entry_t;

/* Called once per contiguous run of dirty bytes of an evicted or flushed line. */
typedef void (*cm_merge_write_fn_t)(uintptr_t addr, size_t len, void *arg);

typedef struct cm_merge_ops cm_merge_ops_t;

typedef struct {
    const cm_merge_ops_t *ops;    /* first: the instance the ops get as self */
    cm_merge_entry_t    *entries;
    unsigned            capacity;
    unsigned            used;
    unsigned            victim;    /* FIFO replacement pointer */
    unsigned            last;      /* most recently hit entry: sequential stores hit it */
    cm_merge_write_fn_t write;
    void                *arg;
    uint64_t            line_flushes;
} cm_merge_t;

/*
 * The merge dimension (letter 4) as an ops table, the write mechanism's to use: its init is
 * handed the variant's (NULL: N, no buffer, every store forwarded by the mechanism itself) and
 * makes its buffer with the function that writes a run through to its home.
 */
struct cm_merge_ops {
    const char *name;
    /* A buffer of `lines` line entries (at least 1); write(addr, len, arg) forwards a run. */
    cm_status_t (*init)(unsigned lines, cm_merge_write_fn_t write, void *arg, cm_merge_t **self);
    void (*fini)(cm_merge_t *self);
    /* A store of len bytes at addr (may span lines); the buffer's fast path is cm_merge_hit. */
    void (*record)(cm_merge_t *self, uintptr_t addr, size_t len);
    /* Every buffered line written through, the buffer emptied (release). */
    void (*flush)(cm_merge_t *self);
};

extern const cm_merge_ops_t cm_merge_buffer_ops;

/* entries: capacity (at least 1) slots owned by the caller. */
void cm_merge_init(cm_merge_t *m, cm_merge_entry_t *entries, unsigned capacity,
                   cm_merge_write_fn_t write, void *arg);

/* Records a store of len bytes at addr (may span lines). */
void cm_merge_record(cm_merge_t *m, uintptr_t addr, size_t len);

/* The common case, inline: a store within the most recently hit line. False: call cm_merge_record. */
static inline int cm_merge_hit(cm_merge_t *m, uintptr_t addr, size_t len)
{
    uintptr_t line = addr & ~(uintptr_t)(CM_MERGE_LINE - 1);
    unsigned off   = (unsigned)(addr - line);

    if (m->used == 0 || m->entries[m->last].line != line || off + len > CM_MERGE_LINE ||
        len >= CM_MERGE_LINE) {
        return 0;
    }
    m->entries[m->last].mask |= ((1ull << len) - 1) << off;
    return 1;
}

/* Writes every buffered line through and empties the buffer. */
void cm_merge_flush(cm_merge_t *m);

/* Writes one line's dirty runs (exposed for tests). */
void cm_merge_write_line(cm_merge_t *m, uintptr_t line, uint64_t mask);

#endif
