/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes forwarded in software (the third letter S: CHS*, NSS*): the compiler's store
 * checks (cmcc) call out for stores to armed pages, and each stored range is
 * doubled to the page's home: one more plain store where the home's memory is
 * mapped here (the paper's Memory Channel doubling), else an RMA put. With a
 * merge buffer (M) stores are marked in 64-byte lines and written through on
 * eviction and at release; without (N) the previous store is forwarded at the
 * next one (the check runs before its store, so the bytes are there by then).
 *
 * CM_FORWARD=release forwards nothing as it is stored: every stored line is watched (twinned,
 * below) and the release forwards what changed, one put per run of changed bytes, runs of
 * adjacent lines merged. Release consistency asks no more: the home must have the writes when
 * the release is seen (the protocol model's puts "in flight until a flush"). Across two hosts
 * over TCP it was no faster than forwarding as stored, which overlaps the puts with the
 * computation (water 0.23 s against 0.15 s, appbt 48 s against 24 s: byte runs split words, so
 * more puts, all at the release); it stays a setting, the start of batching them per home.
 *
 * The compiler reports a location once where one check dominates the next
 * (cm_watch.h): a report says the line is written from then on, so every line
 * reported on a page homed elsewhere is watched, and each flush forwards what
 * changed in it beyond what was already forwarded.
 *
 * The hooks also mark written pages dirty (the paper's dirty bit), which a
 * release turns into the write transition (delayed write notices). Pages
 * homed here are never armed: nothing is forwarded, and their first store is
 * found by a write fault (they are mapped read-only until then), which no
 * compiler folding can hide. CM_CHECK_STORES adds a check that no store
 * escaped the hooks (cm_store_check.c).
 */
#include "config.h"
#include "src/protocols/cashmere/cm_cm_int.h"
#include "src/protocols/cashmere/cm_forward_batch.h"
#include "src/protocols/cashmere/cm_store_check.h"
#include "src/protocols/cashmere/cm_watch.h"
#include "src/access/cm_fault.h"
#include "src/access/cm_hooks_api.h"
#include "src/access/cm_replica_heap.h"
#include "src/access/cm_shadow.h"
#include <dlfcn.h>

#include <stdlib.h>

typedef struct {
    cm_write_t base; /* first: the instance the ops get as self */
    cm_merge_t       *mb;         /* M: the merge buffer; NULL: N, each store forwarded */
    uintptr_t        pend_addr;   /* N: the last store, forwarded at the next one */
    size_t           pend_len;
    char             *pend_dst;   /* its home's copy when plain stores reach it, or NULL */
    bool             direct;      /* plain stores into homes' memory since the last fence */
    bool             loads;       /* load checks on: stores folded into them are watched too */
    cm_watch_t       watch;       /* lines reported since the last flush (cm_watch.h) */
    bool             release;     /* CM_FORWARD=release: only the flush forwards, from twins */
    uintptr_t        run_addr;    /* release: the run being merged, not yet put */
    size_t           run_len;
    uintptr_t        unmapped_addr; /* a store reported before its page was mapped: watched */
    size_t           unmapped_len;  /* once the fault maps it (cm_wh_joining) */
} cm_wh_t;

/* The instance the store hook serves: the hooks call their target with no argument. */
static cm_wh_t *cm_wh_hook;

/* Must stores to page p reach the hook? Not when it is mapped and homed here: nothing is
 * forwarded, and the first store, which makes it dirty, is found by a write fault instead
 * (cm_wh_joining maps it read-only until then). An armed shadow byte arms the loads of the
 * same bytes too: arming home pages until written made every load of a page read here call
 * out under the NS variants (LU, 12x CHSM). Always armed under CM_CHECK_STORES. */
static bool cm_wh_armed(cm_write_t *self, uint64_t p)
{
    (void)self;
    const cm_pte_t *pte = &cm_cm.pte[p];
    return cm_cm.check || !pte->mapped || pte->home != cm_cm.me;
}

/* ---- doubling: stores forwarded to the home ------------------------------ */

/*
 * Copies len bytes of our copy (network view) to dst, the home's copy mapped here, the way a
 * put lands (each byte once, aligned words whole: a peer may poll the word). This is the
 * doubled store of the paper's Memory Channel: one more store, no software in between.
 */
static inline void cm_wh_store_direct(cm_wh_t *wh, char *dst, uintptr_t addr, size_t len)
{
    cm_rma_copy_once(dst, cm_cm.net + (addr - (uintptr_t)cm_cm.app), len);
    cm_watch_forwarded_range(&wh->watch, addr, len);
    wh->direct = true;
    cm_cm.st.forwarded_puts++;
}

/* Writes len bytes at app address addr (within one page) through to the page's home: into a
 * batch, or a put (live: the application may store to them meanwhile, cm_cm_int.h). */
static void cm_wh_through(cm_wh_t *wh, uintptr_t addr, size_t len, bool live)
{
    const cm_pte_t *pte = &cm_cm.pte[cm_cm_page(addr)];

    if (!pte->mapped || pte->home == cm_cm.me) {
        return; /* our stores went straight into the master copy */
    }
    if (cm_fwdb_batched(pte->home)) {
        cm_fwdb_append(pte->home, addr, len);
    } else if (cm_cm_write_through_from(pte->home, addr,
                                        cm_cm.net + (addr - (uintptr_t)cm_cm.app), len, live)) {
        wh->direct = true;
    }
    cm_watch_forwarded_range(&wh->watch, addr, len);
    cm_cm.st.forwarded_puts++;
}

static void cm_wh_forward(cm_wh_t *wh, uintptr_t addr, size_t len)
{
    cm_wh_through(wh, addr, len, true);
}

static void cm_wh_forward_range(uintptr_t addr, size_t len, void *arg)
{
    cm_wh_t *wh = arg;

    while (len > 0) {
        size_t in_page = cm_cm.ps - ((addr - (uintptr_t)cm_cm.app) & (cm_cm.ps - 1));
        size_t n = (len < in_page) ? len : in_page;
        cm_wh_forward(wh, addr, n);
        addr += n;
        len  -= n;
    }
}

/* N: forwards the pending store, which is done by now. */
static void cm_wh_forward_pending(cm_wh_t *wh)
{
    if (wh->pend_dst != NULL) {
        cm_wh_store_direct(wh, wh->pend_dst, wh->pend_addr, wh->pend_len);
    } else {
        cm_wh_forward_range(wh->pend_addr, wh->pend_len, wh);
    }
    wh->pend_len = 0;
}

/* N: the store of len bytes at addr within page p, about to happen, becomes the pending one. */
static inline void cm_wh_pend(cm_wh_t *wh, uintptr_t addr, size_t len, uint64_t p)
{
    const cm_pte_t *pte = &cm_cm.pte[p];

    if (pte->mapped && pte->home == cm_cm.me) {
        return; /* the store goes straight into the master copy */
    }
    wh->pend_addr = addr;
    wh->pend_len  = len;
    /* Unmapped now: the store faults first and the page's home is known at forwarding. */
    wh->pend_dst = (pte->mapped && cm_cm.home_delta[pte->home] != 0)
                         ? (char *)addr + cm_cm.home_delta[pte->home]
                         : NULL;
}

/* Everything but the common case of cm_wh_store: marking pages dirty, the check, page spans. */
__attribute__((noinline)) static void cm_wh_store_slow(cm_wh_t *wh, uintptr_t addr, size_t len)
{
    uint64_t p0 = cm_cm_page(addr), p1 = cm_cm_page(addr + len - 1);

    if (addr + len > (uintptr_t)cm_cm.app + (cm_cm.npages << cm_cm.shift)) {
        len = (uintptr_t)cm_cm.app + (cm_cm.npages << cm_cm.shift) - addr;
        p1  = cm_cm.npages - 1;
    }
    for (uint64_t p = p0; p <= p1; p++) {
        cm_pte_t *pte = &cm_cm.pte[p];
        uintptr_t base = (uintptr_t)cm_cm_app(p);
        uintptr_t lo = (addr > base) ? addr : base;
        uintptr_t hi = (addr + len < base + cm_cm.ps) ? addr + len : base + cm_cm.ps;
        cm_cm_mark_dirty(p);
        if (!pte->mapped) {
            /* The store faults next: its line is watched once the page's data is here. */
            wh->unmapped_addr = lo;
            wh->unmapped_len  = hi - lo;
        } else if (pte->home != cm_cm.me) {
            cm_watch_lines(&wh->watch, lo, hi - lo);
            if (wh->release) {
                /* The twin was taken now: a report after the fact (memcpy) would match it. */
                cm_watch_stored(&wh->watch, lo, hi - lo);
            }
        }
        if (pte->mapped && pte->home == cm_cm.me && !cm_cm.check) {
            cm_cm_repaint(p); /* homed here, transition pending: later stores add nothing */
        }
        if (cm_cm.check && pte->mapped && !(pte->flags & CM_PTE_OPEN)) {
            /* Checked pages are read-only until a store the hooks see: this one. */
            if (cm_cm_protect(p, PROT_READ | PROT_WRITE) != CM_OK) {
                cm_fatal(1, "CM_CHECK_STORES: cannot open shared page %" PRIu64, p);
            }
            pte->flags |= CM_PTE_OPEN;
        }
    }
    if (cm_cm.check) {
        cm_sc_stored(addr, len);
    }
    if (wh->release) {
        return; /* watched above (or when its fault maps it): the flush forwards it */
    }
    if (wh->mb != NULL) {
        wh->mb->ops->record(wh->mb, addr, len);
        return;
    }
    if (wh->pend_len != 0) {
        cm_wh_forward_pending(wh);
    }
    if (p0 == p1) {
        cm_wh_pend(wh, addr, len, p0);
    } else {
        wh->pend_addr = addr; /* spans pages: forwarded page by page */
        wh->pend_len  = len;
        wh->pend_dst  = NULL;
    }
}

/*
 * Hook target: a store of len bytes at addr is about to happen (or, for memcpy, happened).
 * The common case is a store within a page already marked dirty, to a home whose memory is
 * mapped here: the previous store is copied there (N) or this one's bytes are marked in the
 * merge buffer's current line (M). That path is a leaf; everything else is out of line.
 */
static void cm_wh_store(uintptr_t addr, size_t len)
{
    cm_wh_t *wh = cm_wh_hook;
    const uint8_t marked = CM_PTE_DIRTY | CM_PTE_LISTED;
    uintptr_t off = addr - (uintptr_t)cm_cm.app;
    uint64_t p = off >> cm_cm.shift;

    cm_cm.st.doubled_stores++;
    if (__builtin_expect(((off ^ (off + len - 1)) >> CM_WATCH_SHIFT) == 0 &&
                         (cm_cm.pte[p].flags & marked) == marked && !cm_cm.check &&
                         cm_watch_is(&wh->watch, addr), 1)) {
        if (wh->release) {
            return; /* watched: the flush forwards it */
        }
        if (wh->mb != NULL) {
            if (cm_merge_hit(wh->mb, addr, len)) {
                return;
            }
        } else if (wh->pend_dst != NULL || wh->pend_len == 0) {
            if (wh->pend_len != 0) {
                cm_wh_store_direct(wh, wh->pend_dst, wh->pend_addr, wh->pend_len);
            }
            wh->pend_len = 0;
            cm_wh_pend(wh, addr, len, p);
            return;
        }
    }
    CM_RT_ENTER(); /* the slow path may reach UCX, which may allocate */
    cm_wh_store_slow(wh, addr, len);
    CM_RT_LEAVE();
}

/* Stores no report named (a check the compiler dropped or folded into a load check), found at
 * a flush: forwarded now, after everything buffered. */
static void cm_wh_unreported(uintptr_t addr, size_t len, void *arg)
{
    cm_wh_t *wh = arg;

    if (cm_cm.check) {
        cm_sc_stored(addr, len); /* the compiler's doing, not a store that escaped the hooks */
    }
    cm_cm_mark_dirty(cm_cm_page(addr));
    cm_cm.st.doubled_stores++;
    cm_wh_forward(wh, addr, len);
}

static void cm_wh_loaded(cm_write_t *self, uintptr_t addr, size_t len)
{
    cm_wh_t *wh = (cm_wh_t *)self;

    if (!wh->loads) {
        return;
    }
    if (((addr ^ (addr + len - 1)) >> CM_WATCH_SHIFT) == 0 && cm_watch_is(&wh->watch, addr)) {
        return; /* watched already: the usual case of a load on a page homed elsewhere */
    }
    cm_watch_lines(&wh->watch, addr, len);
}

/* release: puts the merged run. Its source is stable: the application is in the release or
 * acquire until the flush after this completes it (cm_cm_complete). */
static void cm_wh_run_put(cm_wh_t *wh)
{
    if (wh->run_len != 0) {
        cm_wh_through(wh, wh->run_addr, wh->run_len, false);
        wh->run_len = 0;
    }
}

/* release: a run of changed bytes the flush found, merged with the previous one where it
 * continues it on the same page. */
static void cm_wh_run(uintptr_t addr, size_t len, void *arg)
{
    cm_wh_t *wh = arg;

    if (cm_cm.check) {
        cm_sc_stored(addr, len);
    }
    cm_cm_mark_dirty(cm_cm_page(addr));
    cm_cm.st.doubled_stores++;
    if (wh->run_len != 0 && addr == wh->run_addr + wh->run_len &&
        cm_cm_page(addr) == cm_cm_page(wh->run_addr)) {
        wh->run_len += len;
        return;
    }
    cm_wh_run_put(wh);
    wh->run_addr = addr;
    wh->run_len  = len;
}

/* Forwards everything buffered or pending (release, acquire, finalize), then what changed in
 * the watched lines beyond it. */
static void cm_wh_flush(cm_write_t *self)
{
    cm_wh_t *wh = (cm_wh_t *)self;

    if (wh->release) {
        if (wh->watch.n != 0) {
            cm_watch_flush(&wh->watch, cm_wh_run, wh);
            cm_wh_run_put(wh);
        }
    } else {
        if (wh->mb != NULL) {
            wh->mb->ops->flush(wh->mb);
        } else if (wh->pend_len != 0) {
            cm_wh_forward_pending(wh);
        }
        if (wh->watch.n != 0) {
            cm_watch_flush(&wh->watch, cm_wh_unreported, wh);
        }
    }
    cm_fwdb_complete(); /* batches applied at their homes before the release goes on */
    if (wh->direct) {
        /* Plain stores into homes' memory: ordered before the flag or notice that follows. */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        wh->direct = false;
    }
}

/* ---- CM_CHECK_STORES: no store may escape the hooks ------------------------------------ */

/* Page p (just made writable) takes a store the hooks did not announce. */
static void cm_wh_open_unseen(uint64_t p)
{
    cm_cm.pte[p].flags |= CM_PTE_OPEN | CM_PTE_UNSEEN;
    cm_cm_list_dirty(p);
    cm_sc_unseen(p, cm_fault_pc());
}

/* At a release or before the page is dropped: stops the job if page p holds a store the hooks
 * did not see; closes it again. */
static cm_status_t cm_wh_settle(cm_write_t *self, uint64_t p)
{
    (void)self;
    cm_pte_t *pte = &cm_cm.pte[p];

    if (!cm_cm.check || !pte->mapped || !(pte->flags & (CM_PTE_OPEN | CM_PTE_UNSEEN))) {
        return CM_OK;
    }
    cm_sc_verify(p, pte->home == cm_cm.me, pte->home, (pte->flags & CM_PTE_DIRTY) != 0);
    if (pte->flags & CM_PTE_OPEN) {
        CM_CHECK(cm_cm_protect(p, PROT_READ));
    }
    pte->flags &= (uint8_t)~(CM_PTE_OPEN | CM_PTE_UNSEEN);
    return CM_OK;
}

/* Read-write at once: writes are seen by the hooks (delayed write notices). Under the check,
 * read-only unless the hooks just announced a store to it. */
static int cm_wh_joining(cm_write_t *self, uint64_t p, int home, bool write)
{
    cm_wh_t *wh = (cm_wh_t *)self;

    cm_pte_t *pte = &cm_cm.pte[p];
    bool announced;

    if (wh->unmapped_len != 0 && cm_cm_page(wh->unmapped_addr) == p) {
        /* The store reported before this fault: its bytes are the fetched ones until it runs. */
        if (home != cm_cm.me) {
            cm_watch_lines(&wh->watch, wh->unmapped_addr, wh->unmapped_len);
        }
        wh->unmapped_len = 0;
    }
    if (!cm_cm.check) {
        /* Homed here: read-only until its first store (unless that store already announced
         * itself), which faults and makes the page dirty. */
        if (home == cm_cm.me && !write && !(pte->flags & (CM_PTE_DIRTY | CM_PTE_PROCESSED))) {
            return PROT_READ;
        }
        if (home == cm_cm.me && write) {
            cm_cm_mark_dirty(p);
        }
        return PROT_READ | PROT_WRITE;
    }
    announced = (pte->flags & CM_PTE_DIRTY) != 0;
    cm_sc_mapped(p, home == cm_cm.me);
    if (announced) {
        pte->flags |= CM_PTE_OPEN;
    } else if (write) {
        cm_wh_open_unseen(p);
    }
    return (announced || write) ? PROT_READ | PROT_WRITE : PROT_READ;
}

/* Mapped pages are read-only homed here until their first store, and under the check: a store
 * no hook announced. */
static cm_status_t cm_wh_write_fault(cm_write_t *self, uint64_t p)
{
    (void)self;
    if (!cm_cm.check && cm_cm.pte[p].home == cm_cm.me) {
        /* A page homed here takes its first store: dirty (delayed write notice), writable. */
        cm_cm_mark_dirty(p);
        return cm_cm_protect(p, PROT_READ | PROT_WRITE);
    }
    if (!cm_cm.check || (cm_cm.pte[p].flags & CM_PTE_OPEN)) {
        cm_error("unexpected write fault: page %" PRIu64 " is mapped read-write", p);
        return CM_ERR_INVALID;
    }
    CM_CHECK(cm_cm_protect(p, PROT_READ | PROT_WRITE));
    cm_wh_open_unseen(p);
    return CM_OK;
}

/* ---- set-up ------------------------------------------------------------------------------ */

static cm_status_t cm_wh_init(const cm_protocol_ctx_t *ctx, const cm_merge_ops_t *merge,
                              cm_write_t **self)
{
    const cm_config_t *cfg = ctx->config;
    const char *vname = cm_cm.vname;
    cm_wh_t *wh;

    /* The build the binary records (src/access/cm_hooks.c), whatever stores it happens to have. */
    if (dlsym(RTLD_DEFAULT, "cm_build_stores") == NULL) {
        cm_error("CM_VARIANT=%s forwards writes in software, but this program was built without "
                 "store checks: build it with cmcc%s", vname,
                 cm_cm.load_checks ? " --accesses" : "");
        return CM_ERR_UNSUPPORTED;
    }
    wh = calloc(1, sizeof(*wh));
    if (wh == NULL) {
        cm_error("cashmere: out of memory for the hooked writes");
        return CM_ERR_NO_MEMORY;
    }
    *self = &wh->base;
    if (merge != NULL) {
        CM_CHECK(merge->init((unsigned)cfg->merge_lines, cm_wh_forward_range, wh, &wh->mb));
    }
    wh->loads = cm_cm.load_checks;
    wh->release = (cfg->forward == CM_FORWARD_RELEASE);
    if (cfg->forward_batch < 256 || cfg->forward_batch > (1u << 20)) {
        cm_error("CM_FORWARD_BATCH=%zu: a batch is 256 bytes to 1 MiB", (size_t)cfg->forward_batch);
        return CM_ERR_INVALID;
    }
    if (cfg->forward == CM_FORWARD_BATCH || cfg->forward == CM_FORWARD_AUTO) {
        if (cm_cm.whole_pages) {
            CM_CHECK(cm_fwdb_init(cfg->forward == CM_FORWARD_BATCH, (size_t)cfg->forward_batch));
        } else if (cfg->forward == CM_FORWARD_BATCH) {
            cm_error("CM_FORWARD=batch needs whole-page fills (CHS*): under %s a line fill would "
                     "bring back bytes older than ours still waiting in a batch", vname);
            return CM_ERR_UNSUPPORTED;
        }
    }
    cm_cm.write_note = wh->release     ? "forwarded at the release, a put per run of changed "
                                           "bytes (CM_FORWARD=release)"
                       : cm_fwdb_active() ? "forwarded as stored, batched per home across the "
                                            "network (CM_FORWARD=batch)"
                                          : "forwarded as stored (CM_FORWARD=store)";
    CM_CHECK(cm_watch_init(&wh->watch, cm_cm.app, cm_cm.net, cm_cm.npages << cm_cm.shift));
    if (cm_cm.check) {
        CM_CHECK(cm_sc_init(cm_cm.app, cm_cm.net, cm_cm.npages, cm_cm.ps));
    }
    cm_wh_hook = wh;
    return CM_OK;
}

static void cm_wh_fini(cm_write_t *self)
{
    cm_wh_t *wh = (cm_wh_t *)self;

    cm_fwdb_fini();
    if (wh->mb != NULL) {
        wh->mb->ops->fini(wh->mb);
    }
    cm_watch_fini(&wh->watch);
    if (cm_cm.check) {
        cm_sc_fini();
    }
    if (cm_wh_hook == wh) {
        cm_wh_hook = NULL;
    }
    free(wh);
}

static void cm_wh_stats(cm_write_t *self, cm_stats_t *s)
{
    cm_wh_t *wh = (cm_wh_t *)self;

    s->merge_flushes = (wh->mb != NULL) ? wh->mb->line_flushes : 0;
    s->folded_stores = wh->watch.found;
}

static void cm_wh_stats_reset(cm_write_t *self)
{
    cm_wh_t *wh = (cm_wh_t *)self;

    if (wh->mb != NULL) {
        wh->mb->line_flushes = 0;
    }
    wh->watch.found     = 0;
}

const cm_write_ops_t cm_write_hooks_ops = {
    .name        = "hooks",
    .init        = cm_wh_init,
    .fini        = cm_wh_fini,
    .joining     = cm_wh_joining,
    .write_fault = cm_wh_write_fault,
    .armed       = cm_wh_armed,
    .store       = cm_wh_store,
    .loaded      = cm_wh_loaded,
    .flush       = cm_wh_flush,
    .settle      = cm_wh_settle,
    .stats       = cm_wh_stats,
    .stats_reset = cm_wh_stats_reset,
};
