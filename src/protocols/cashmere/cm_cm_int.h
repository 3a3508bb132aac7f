/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inside the Cashmere protocol: its state, its page table, and the ops tables
 * through which the protocol's events (cm_cashmere.c) reach the mechanisms
 * that realize a variant (one file each: cm_fill_*.c, cm_write_*.c; the
 * merge buffer in cm_merge.c). The events never ask which variant runs: the
 * variant table (util/cm_variant_table.h) picks the ops at init.
 */
#ifndef CM_CM_INT_H
#define CM_CM_INT_H

#include "directory/cm_dir.h"
#include "locks/cm_barrier.h"
#include "locks/cm_mcs.h"
#include "src/protocols/cashmere/cm_merge.h"
#include "util/cm_variant.h"
#include "src/protocols/cm_meta.h"
#include "src/protocols/cm_protocol.h"
#include "util/cm_stats.h"
#include "util/cm_error.h"
#include "util/cm_log.h"
#include "writenotice/cm_wn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

/* Local page table entry. */
typedef struct {
    uint8_t  mapped;   /* joined the page's sharing set, data reachable */
    uint8_t  flags;
    uint8_t  prot;     /* the application view's protection as cm_cm_protect last set it */
    uint8_t  home;     /* valid while mapped (a rank: at most 64) */
    uint32_t version;  /* unsafe pages: the directory version when we joined */
} cm_pte_t;

#define CM_PTE_PROT_UNKNOWN 0xff /* the page's view was mapped again: set it before relying on it */

#define CM_PTE_DIRTY     0x01 /* stored to since the last release */
#define CM_PTE_PROCESSED 0x02 /* write transition done since mapping (the paper's processed bit) */
#define CM_PTE_UNSAFE    0x04 /* on the local unsafe list */
#define CM_PTE_SELF      0x08 /* on the self-notice list */
#define CM_PTE_LISTED    0x10 /* on the dirty list (until the next release) */
#define CM_PTE_OPEN      0x20 /* CM_CHECK_STORES: mapped read-write (a hooked store opened it) */
#define CM_PTE_UNSEEN    0x40 /* CM_CHECK_STORES: written by a store the hooks did not see */

typedef struct {
    uint32_t *v;
    uint64_t n;
} cm_list_t;

typedef struct cm_fill_ops cm_fill_ops_t;
typedef struct cm_write_ops cm_write_ops_t;

/*
 * A mechanism's instance: each mechanism's own state begins with one of these, and its ops get
 * it back as self (as a TCP congestion module's state lives in its socket). Made by the ops'
 * init from the protocol's context; fini, where there is one, releases it.
 */
typedef struct {
    const cm_fill_ops_t *ops;
} cm_fill_t;

typedef struct {
    const cm_write_ops_t *ops;
} cm_write_t;

/*
 * Fill (letters 1-2): how a page's data becomes reachable once the page has
 * joined the directory's sharing set, and what dropping it undoes. Required: init, map, drop;
 * the others may be NULL (checked when the protocol selects the mechanism).
 */
struct cm_fill_ops {
    const char *name;
    cm_status_t (*init)(const cm_protocol_ctx_t *ctx, cm_fill_t **self);
    /* NULL: nothing to release. */
    void (*fini)(cm_fill_t *self);
    /* Page p just joined; its home is home (claimed_home: it just moved here, its data copied
     * in). Makes its data reachable at its application address, still without access: the
     * events then set the protection the write mechanism asks for. whole: a fault of code
     * without access checks joined it, so every byte must be current now; else an access
     * check did (cm_cm_join), which fills only what it touches. */
    cm_status_t (*map)(cm_fill_t *self, uint64_t p, int home, bool claimed_home, bool whole);
    /* Page p is about to join and its home is known (fixed: it cannot move): start bringing
     * its data now, so that it travels with the join's round trip; map then waits for it.
     * home -1: the join did not find the entry as seen, so the data in flight may be stale
     * and map must get it again. NULL: data comes at map only. */
    cm_status_t (*early)(cm_fill_t *self, uint64_t p, int home);
    /* Waits for what early started (required with early). */
    cm_status_t (*early_wait)(cm_fill_t *self);
    /* Page p leaves (self-invalidation): no access may see its old data afterwards. */
    cm_status_t (*drop)(cm_fill_t *self, uint64_t p);
    /* Software access checks, NULL where loads need none: [addr, addr + len) (within the
     * region) is about to be loaded or stored (a compiled check comes once for a
     * read-modify-write: the bytes must be current either way), or was just written by the
     * runtime or libc on the program's behalf (wrote: those bytes are ours, kept). */
    void (*access)(cm_fill_t *self, uintptr_t addr, size_t len, bool store, bool wrote);
    /* The shadow of page p (n bytes at sh), write_armed: the write mechanism's answer for it;
     * NULL: all of the page from write_armed. */
    void (*paint)(cm_fill_t *self, uint64_t p, uint8_t *sh, size_t n, bool write_armed);
    /* A dropped page's data is a whole copy, fetched again by one get from its home (page
     * copies): it may be refetched at acquire and held (cm_refetch.h). */
    bool copies;
};

/*
 * Writes (letter 3; letter 4 is the merge buffer, handed to init when the variant has one):
 * how stores reach the page's home, and how the protocol learns which pages were written (the
 * paper's dirty bits, for delayed write notices). Required: init, joining, write_fault, armed,
 * flush; the others may be NULL.
 */
struct cm_write_ops {
    const char *name;
    /* merge: the variant's merge buffer (M: the mechanism makes one), or NULL (N). */
    cm_status_t (*init)(const cm_protocol_ctx_t *ctx, const cm_merge_ops_t *merge,
                        cm_write_t **self);
    /* NULL: nothing to release. */
    void (*fini)(cm_write_t *self);
    /* Page p is joining (home given; write: the access that faulted is a store): the
     * protection its mapping gets. May do bookkeeping for the page. */
    int (*joining)(cm_write_t *self, uint64_t p, int home, bool write);
    /* A store faulted on mapped page p (mapped without write permission). */
    cm_status_t (*write_fault)(cm_write_t *self, uint64_t p);
    /* Whether inline store checks must call out for stores to page p (the shadow). */
    bool (*armed)(cm_write_t *self, uint64_t p);
    /* The hook target of store checks, or NULL where stores need no software. The hooks call
     * it with no instance (cm_hooks_set_range): the mechanism keeps the one it serves. */
    void (*store)(uintptr_t addr, size_t len);
    /* Everything written so far is on its way to the homes (release, acquire, finalize). */
    void (*flush)(cm_write_t *self);
    /* Before a release processes dirty page p, and before page p is dropped; NULL: nothing
     * to settle. */
    cm_status_t (*settle)(cm_write_t *self, uint64_t p);
    /* Page p was dropped (self-invalidation); NULL if nothing to forget. */
    void (*dropped)(cm_write_t *self, uint64_t p);
    /* Every page is about to be dropped (end of initialization); NULL if nothing to forget. */
    void (*reset)(cm_write_t *self);
    /* The mechanism's own counters into s; and their reset. NULL: none. */
    void (*stats)(cm_write_t *self, cm_stats_t *s);
    void (*stats_reset)(cm_write_t *self);
    /* Bytes of the home's copy of a line arrive (software line fills): [addr, addr + len) of our
     * copy becomes data, except [keep_lo, keep_hi) (stored here: ours). NULL: a plain copy into
     * the network view. The offload engine also takes the line into the page's twin, so that
     * fetched bytes are never mistaken for stores. */
    void (*install)(cm_write_t *self, uintptr_t addr, const void *data, size_t len,
                    uintptr_t keep_lo, uintptr_t keep_hi);
    /* A load check reported [addr, addr + len) of a page homed elsewhere (software line fills):
     * with load checks on, the compiler may have folded a store's check into it. NULL: stores
     * need no check. */
    void (*loaded)(cm_write_t *self, uintptr_t addr, size_t len);
    /* Writes are learned from write faults: a page dropped but left mapped (line fills) must
     * lose write permission. */
    bool faults_on_write;
};

extern const cm_fill_ops_t cm_fill_page_ops;
extern const cm_fill_ops_t cm_fill_map_ops;
extern const cm_fill_ops_t cm_fill_line_ops;
extern const cm_write_ops_t cm_write_hooks_ops;
extern const cm_write_ops_t cm_write_mapped_ops;
extern const cm_write_ops_t cm_write_offload_ops;

/*
 * The mechanisms of variant v (its row's fill, write and merge; merge NULL for none), checked
 * to have their required ops: a one-line error names what is missing.
 */
cm_status_t cm_cm_select(cm_variant_t v, const cm_fill_ops_t **f, const cm_write_ops_t **w,
                         const cm_merge_ops_t **m);
/* Which required ops a set of mechanisms lacks, in words; NULL: none. */
static inline const char *cm_cm_ops_missing(const cm_fill_ops_t *f, const cm_write_ops_t *w,
                                            const cm_merge_ops_t *m)
{
    if (f->name == NULL || f->init == NULL || f->map == NULL || f->drop == NULL) {
        return "fill: name, init, map and drop";
    }
    if ((f->early == NULL) != (f->early_wait == NULL)) {
        return "fill: early and early_wait together";
    }
    if (w->name == NULL || w->init == NULL || w->joining == NULL || w->write_fault == NULL ||
        w->armed == NULL || w->flush == NULL) {
        return "write: name, init, joining, write_fault, armed and flush";
    }
    if (m != NULL && (m->name == NULL || m->init == NULL || m->fini == NULL ||
                      m->record == NULL || m->flush == NULL)) {
        return "merge: name, init, fini, record and flush";
    }
    return NULL;
}

/* The protocol's state: one per process. */
typedef struct {
    bool                   ready;
    bool                   init_phase;
    bool                   check;       /* CM_CHECK_STORES (cm_store_check.c) */
    bool                   first_touch; /* CM_FIRST_TOUCH: homes move when initialization ends */
    /* What the mechanisms may know of the variant, set before they are made: its name (for
     * messages), whether the fill checks loads (the program has load checks), whether pages
     * are filled whole (page copies). */
    const char             *vname;
    bool                   load_checks;
    bool                   whole_pages;
    int                    me;
    int                    nprocs;
    cm_variant_t           variant;
    cm_fill_t              *fill;       /* the variant's mechanisms (letters 1-2, 3 and 4) */
    cm_write_t             *write;
    const cm_merge_ops_t   *merge;      /* NULL: the variant has no merge buffer */
    cm_rma_t               *rma;
    char                   *app;        /* application view (protected page by page) */
    char                   *net;        /* network view (always accessible, RMA target) */
    size_t                 ps;
    unsigned               shift;       /* log2(ps) */
    uint64_t               npages;
    char                   *meta_base;
    const cm_meta_layout_t *meta;
    cm_dir_t               dir;
    cm_wn_t                wn;
    cm_wn_bin_t            bins;        /* the add form's notices (the ring: the others') */
    uint64_t               *wold;       /* add form, a release's batch: each WRITE's old word */
    uint32_t               *wpage;      /* ... and its page */
    uint8_t                *found;      /* add form, per page: joins in a row that found another
                                           writer (cm_cm_join_tell) */
    cm_barrier_t           barrier;
    cm_mcs_lazy_t          *lz;         /* add form, per lock: a release not waited for */
    uint32_t               *lzq;        /* ... the locks with one pending, to resolve at a barrier */
    uint32_t               nlzq;
    intptr_t               *home_delta; /* per rank: app address + delta = that rank's copy,
                                           reached by plain stores; 0: through RMA puts */
    cm_pte_t               *pte;
    cm_list_t              dirty;
    cm_list_t              unsafe;
    cm_list_t              selfn;
    cm_stats_t             st;
    uint64_t               t_start;
    const char             *write_note;  /* how the write mechanism runs here, or NULL */
    cm_rma_stats_t         rma_base;     /* the one-sided layer's counters at the last reset */
    uint64_t               puts_complete; /* puts issued before the last cm_cm_complete */
    char                   describe[768];
} cm_cm_t;

extern cm_cm_t cm_cm;

/* CM_DIRECTORY=add: notices in per-sender bins, posted by no held section. */
static inline bool cm_cm_add_form(void)
{
    return cm_cm.dir.impl == CM_DIR_IMPL_ADD;
}

static inline uint64_t cm_cm_page(uintptr_t addr)
{
    return (addr - (uintptr_t)cm_cm.app) >> cm_cm.shift;
}

static inline char *cm_cm_app(uint64_t p)
{
    return cm_cm.app + (p << cm_cm.shift);
}

static inline char *cm_cm_net(uint64_t p)
{
    return cm_cm.net + (p << cm_cm.shift);
}

static inline void cm_list_push(cm_list_t *l, uint64_t p)
{
    cm_assert(p < cm_cm.npages && l->n < cm_cm.npages); /* each page at most once per list */
    l->v[l->n++] = (uint32_t)p;
}

/* Page p goes on the dirty list, once until the next release: the release visits it. */
static inline void cm_cm_list_dirty(uint64_t p)
{
    if (!(cm_cm.pte[p].flags & CM_PTE_LISTED)) {
        cm_cm.pte[p].flags |= CM_PTE_LISTED;
        cm_list_push(&cm_cm.dirty, p);
    }
}

/* Page p was stored to (the paper's dirty bit): the next release makes its write transition. */
static inline void cm_cm_mark_dirty(uint64_t p)
{
    cm_cm.pte[p].flags |= CM_PTE_DIRTY;
    cm_cm_list_dirty(p);
}

/*
 * Writes len bytes at app address addr through to home's copy of them, taken from src: one
 * more plain store (each byte once, aligned words whole) where the home's memory is mapped
 * here, returning true (the caller fences before publishing); else an RMA put, returning
 * false (ordered by the caller's fence or flush). A put reads src when UCX sends it: at once,
 * unless it waits for send resources. With `live` (src is memory the application goes on
 * storing to) the put has read src when this returns; else src must stay as it is until the
 * next flush. The software doubling's source is our network view (never protected: a later
 * invalidation must not fault inside the transport), live while the application runs: a put
 * left waiting for send resources (soft-RoCE under load) went out later with a later value, a
 * word's delayed put carried an intermediate sum, and the bytes found changed at the release
 * (only those) left the home with a mix of the two.
 */
static inline bool cm_cm_write_through_from(int home, uintptr_t addr, const void *src, size_t len,
                                            bool live)
{
    char *net = cm_cm.net + (addr - (uintptr_t)cm_cm.app);
    cm_status_t status;

    if (cm_cm.home_delta[home] != 0) {
        cm_rma_copy_once((char *)addr + cm_cm.home_delta[home], src, len);
        return true;
    }
    status = live ? cm_rma_put(cm_cm.rma, home, net, src, len)
                  : cm_rma_put_nbi(cm_cm.rma, home, net, src, len);
    if (status != CM_OK) {
        cm_fatal(1, "write-through of %zu bytes to rank %d failed: %s", len, home,
                 cm_status_string(status));
    }
    return false;
}


/* Line bytes fetched from the home into our copy (network view): all of [addr, addr + len)
 * except [keep_lo, keep_hi), bytes stored here. */
static inline void cm_cm_install_copy(uintptr_t addr, const void *data, size_t len,
                                      uintptr_t keep_lo, uintptr_t keep_hi)
{
    char *net = cm_cm.net + (addr - (uintptr_t)cm_cm.app);
    uintptr_t end = addr + len;

    if (keep_hi <= addr || keep_lo >= end) {
        memcpy(net, data, len);
        return;
    }
    if (keep_lo > addr) {
        memcpy(net, data, keep_lo - addr);
    }
    if (keep_hi < end) {
        memcpy(net + (keep_hi - addr), (const char *)data + (keep_hi - addr), end - keep_hi);
    }
}

/* The application view of page p gets protection prot; a system call only when it changes (a
 * page that joins again keeps its mapping under line fills: most joins change nothing). */
static inline cm_status_t cm_cm_protect(uint64_t p, int prot)
{
    if (cm_cm.pte[p].prot == (uint8_t)prot) {
        return CM_OK;
    }
    if (mprotect(cm_cm_app(p), cm_cm.ps, prot) != 0) {
        cm_error("mprotect of shared page %" PRIu64 " failed: %s", p, strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    cm_cm.pte[p].prot = (uint8_t)prot;
    return CM_OK;
}

/* Page p's state changed (joined, dropped, dirty, lines filled): its shadow, where the inline
 * checks have used it, is written again from the mechanisms' answers (cm_cashmere.c). */
void cm_cm_repaint(uint64_t p);

/* Page p joins from a software access check (not a fault): as a fault would, but its data is
 * filled only where touched (cm_fill_ops_t.map's whole is false). */
cm_status_t cm_cm_join(uint64_t p, bool write);

/* The local part of a directory update's effects on page p: self-notice, unsafe list. */
cm_status_t cm_cm_effects(uint64_t p, const cm_dir_entry_t *e, const cm_dir_effects_t *fx);

/* A page copied from home into this process (pages_fetched), and for CM_TRACE the copy: from
 * t0 (0: an instant, the copy's wait being part of something larger). */
static inline void cm_cm_fetched(uint64_t p, int home, uint64_t t0)
{
    cm_cm.st.pages_fetched++;
    if (__builtin_expect(cm_trace_on, 0)) {
        uint64_t now = cm_trace_now();
        cm_trace_emit(CM_TRACE_FETCH, t0 ? t0 : now, t0 ? now - t0 : 0, p, home,
                      (uint32_t)cm_cm.ps, 0);
    }
}

#endif
