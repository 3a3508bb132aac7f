/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Software line fills (the NS of NS**: no page copy, reads served in software).
 *
 * The program is built with load and store checks (cmcc --accesses, PROG.access):
 * every access reads the shadow byte of its 8 bytes and calls the runtime where
 * it is armed. Here a shared page is a set of CM_LINE_SIZE lines (64 B by
 * default), each valid or not, and an invalid line's shadow is armed. A check
 * that lands on an invalid line fetches that line from the page's home with one
 * RMA get and disarms it (its shadow then says only what the write mechanism
 * needs for stores). So a page is never copied whole and never unmapped:
 *
 *  - first access to a page not in our sharing set: the check joins the
 *    directory as a fault would (cm_cm_join), every line invalid, then fills
 *    the line it touched;
 *  - self-invalidation at acquire re-arms every line and keeps the mapping (a
 *    write mechanism that learns of writes from faults gets the page
 *    read-only again: the offload engine of NSH*);
 *  - a store to an invalid line fills the line first (write allocate): a
 *    compiled check comes once for a read-modify-write (`x += 2` is one
 *    check), so the stored bytes must be current too. Bytes libc or the
 *    runtime already wrote for the program (reported after the fact,
 *    cm_hook_store) are ours: the line is fetched around them;
 *  - the home's own pages are its master copy: always valid;
 *  - a page swept line by line comes whole: on a page none of whose lines was
 *    valid, the CM_LINE_PAGE_FILL-th miss (2 by default) brings every missing
 *    line in one page-sized get (each installed as a line fill would be),
 *    instead of one transfer per line.
 *
 * Code without checks reaching a page no check joined faults (the region is
 * protected until joined) and gets the whole page. It can read a line that
 * self-invalidation re-armed without any check: loads of shared data must be
 * compiled with checks or made through the interposed copies (memcpy, memmove,
 * memset), as with the paper's instrumented binaries.
 */
#include "config.h"
#include "src/protocols/cashmere/cm_cm_int.h"
#include "src/access/cm_shadow.h"
#include "util/cm_mem.h"
#include "util/cm_time.h"

#include <dlfcn.h>
#include <stdlib.h>

typedef struct {
    cm_fill_t base; /* first: the instance the ops get as self */
    size_t   line;     /* bytes per line */
    unsigned lshift;   /* log2(line) */
    size_t   lines;    /* per page */
    size_t   words;    /* 64-bit words of valid bits per page */
    uint64_t *valid;   /* per page: a bit per line, set once filled (or homed here) */
    uint8_t  *misses;  /* per page: line misses since none of its lines was valid (saturating) */
    unsigned page_fill;/* CM_LINE_PAGE_FILL: the miss that brings the rest of the page (0: never) */
    uint8_t  *buf;     /* one page, as fetched */
} cm_fl_t;

static inline uint64_t *cm_fl_valid(cm_fl_t *fl, uint64_t p)
{
    return fl->valid + p * fl->words;
}

static inline bool cm_fl_is_valid(cm_fl_t *fl, uint64_t p, size_t i)
{
    return (cm_fl_valid(fl, p)[i / 64] >> (i % 64)) & 1;
}

static void cm_fl_set_all(cm_fl_t *fl, uint64_t p, bool valid)
{
    uint64_t *v = cm_fl_valid(fl, p);

    memset(v, valid ? 0xff : 0, fl->words * sizeof(uint64_t));
}

static cm_status_t cm_fl_init(const cm_protocol_ctx_t *ctx, cm_fill_t **self)
{
    const cm_config_t *cfg = ctx->config;
    cm_fl_t *fl;
    const char *vname = cm_cm.vname;

    if (dlsym(RTLD_DEFAULT, "cm_hooks_loads") == NULL) {
        cm_error("CM_VARIANT=%s checks loads in software, but this program was built without "
                 "load checks: build it with cmcc --accesses", vname);
        return CM_ERR_UNSUPPORTED;
    }
    if (cfg->line_size < 8 || cfg->line_size > cm_cm.ps ||
        (cfg->line_size & (cfg->line_size - 1)) != 0) {
        cm_error("CM_LINE_SIZE=%" PRIu64 ": a power of two from 8 to the page size (%zu)",
                 (uint64_t)cfg->line_size, cm_cm.ps);
        return CM_ERR_INVALID;
    }
    fl = calloc(1, sizeof(*fl));
    if (fl == NULL) {
        cm_error("cashmere: out of memory for the line fill");
        return CM_ERR_NO_MEMORY;
    }
    *self      = &fl->base;
    fl->line   = (size_t)cfg->line_size;
    fl->lshift = (unsigned)__builtin_ctzll(cfg->line_size);
    fl->lines  = cm_cm.ps >> fl->lshift;
    fl->words  = (fl->lines + 63) / 64;
    fl->page_fill = (unsigned)cfg->line_page_fill;
    /* Per page of the region, reserved: committed where pages are touched. */
    fl->valid  = cm_mem_reserve(cm_cm.npages * fl->words * sizeof(uint64_t));
    fl->misses = cm_mem_reserve(cm_cm.npages);
    fl->buf    = malloc(cm_cm.ps);
    if (fl->valid == NULL || fl->misses == NULL || fl->buf == NULL) {
        cm_error("cashmere: out of memory for the line map of %" PRIu64 " pages", cm_cm.npages);
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

static void cm_fl_fini(cm_fill_t *self)
{
    cm_fl_t *fl = (cm_fl_t *)self;

    cm_mem_release(fl->valid, cm_cm.npages * fl->words * sizeof(uint64_t));
    cm_mem_release(fl->misses, cm_cm.npages);
    free(fl->buf);
    free(fl);
}

static cm_status_t cm_fl_map(cm_fill_t *self, uint64_t p, int home, bool claimed_home, bool whole)
{
    cm_fl_t *fl = (cm_fl_t *)self;

    /* Homed here (or just moved here, copied in while its entry was held): the master copy. */
    if (claimed_home || home == cm_cm.me) {
        cm_fl_set_all(fl, p, true);
        return CM_OK;
    }
    if (whole) {
        /* Joined by code without checks: it reads the page as it is, so all of it now. */
        uint64_t t0 = cm_trace_begin();
        CM_CHECK(cm_rma_get(cm_cm.rma, home, cm_cm_net(p), cm_cm_net(p), cm_cm.ps));
        cm_cm_fetched(p, home, t0);
        cm_fl_set_all(fl, p, true);
        return CM_OK;
    }
    cm_fl_set_all(fl, p, false);
    fl->misses[p] = 0;
    return CM_OK;
}

static cm_status_t cm_fl_drop(cm_fill_t *self, uint64_t p)
{
    cm_fl_t *fl = (cm_fl_t *)self;

    cm_fl_set_all(fl, p, false); /* the shadow is painted again by the caller */
    fl->misses[p] = 0;
    if (cm_cm.write->ops->faults_on_write) {
        return cm_cm_protect(p, PROT_READ); /* the next store must be seen again */
    }
    return CM_OK;
}

static void cm_fl_get(uint64_t p, void *dst, const char *net, size_t len)
{
    cm_status_t status = cm_rma_get(cm_cm.rma, cm_cm.pte[p].home, dst, net, len);

    if (status != CM_OK) {
        cm_fatal(1, "line fill of %zu bytes from rank %u failed: %s", len, cm_cm.pte[p].home,
                 cm_status_string(status));
    }
}

/* [addr, addr + len) of page p (home elsewhere) from its home, into our copy (network view) but
 * for [keep_lo, keep_hi), stored here. Straight into our copy where nothing of ours is in the
 * range; else through a buffer, installed: the offload engine takes the bytes into its twin at
 * the same moment they appear in the page. */
static void cm_fl_fetch(cm_fl_t *fl, uint64_t p, uintptr_t addr, size_t len, uintptr_t keep_lo,
                        uintptr_t keep_hi)
{
    char *net = cm_cm_net(p) + (addr - (uintptr_t)cm_cm_app(p));

    if (cm_cm.write->ops->install == NULL && (keep_hi <= addr || keep_lo >= addr + len)) {
        cm_fl_get(p, net, net, len);
        return;
    }
    cm_fl_get(p, fl->buf, net, len);
    if (cm_cm.write->ops->install != NULL) {
        cm_cm.write->ops->install(cm_cm.write, addr, fl->buf, len, keep_lo, keep_hi);
    } else {
        cm_cm_install_copy(addr, fl->buf, len, keep_lo, keep_hi);
    }
}

/* Line i of page p (home elsewhere) from its home; [keep_lo, keep_hi) is ours. */
static void cm_fl_fill(cm_fl_t *fl, uint64_t p, size_t i, uintptr_t keep_lo, uintptr_t keep_hi)
{
    cm_fl_fetch(fl, p, (uintptr_t)cm_cm_app(p) + (i << fl->lshift), fl->line, keep_lo, keep_hi);
    cm_fl_valid(fl, p)[i / 64] |= 1ull << (i % 64);
    cm_cm.st.line_fills++;
}

/* Every missing line of page p (home elsewhere), each run of them in one get (usually all but
 * the one or two lines filled before), installed as line fills would be. */
static void cm_fl_fill_page(cm_fl_t *fl, uint64_t p, uintptr_t keep_lo, uintptr_t keep_hi)
{
    uintptr_t base = (uintptr_t)cm_cm_app(p);

    for (size_t i = 0; i < fl->lines;) {
        size_t j = i;
        if (cm_fl_is_valid(fl, p, i)) {
            i++;
            continue;
        }
        while (j < fl->lines && !cm_fl_is_valid(fl, p, j)) {
            j++;
        }
        cm_fl_fetch(fl, p, base + (i << fl->lshift), (j - i) << fl->lshift, keep_lo, keep_hi);
        i = j;
    }
    cm_fl_set_all(fl, p, true);
    cm_cm_fetched(p, (int)cm_cm.pte[p].home, 0);
}

static void cm_fl_access(cm_fill_t *self, uintptr_t addr, size_t len, bool store, bool wrote)
{
    cm_fl_t *fl = (cm_fl_t *)self;
    uintptr_t end = addr + len;
    uintptr_t keep_lo = wrote ? addr : 0, keep_hi = wrote ? end : 0;

    /* The common case: a load within one valid line of a page homed elsewhere. Its shadow is
     * armed all the same (the same shadow byte arms stores, which must be forwarded there), so
     * every load of such a page calls out: nothing to do but let the write mechanism watch the
     * line, as a page homed elsewhere always wants (armed). */
    if (!store && ((addr ^ (end - 1)) >> fl->lshift) == 0) {
        uint64_t p = cm_cm_page(addr);
        const cm_pte_t *pte = &cm_cm.pte[p];
        if (pte->mapped && pte->home != cm_cm.me &&
            cm_fl_is_valid(fl, p, ((addr - (uintptr_t)cm_cm.app) & (cm_cm.ps - 1)) >> fl->lshift)) {
            if (cm_cm.write->ops->loaded != NULL) {
                cm_cm.write->ops->loaded(cm_cm.write, addr, len);
            }
            return;
        }
    }
    for (uint64_t p = cm_cm_page(addr); p <= cm_cm_page(end - 1); p++) {
        uintptr_t base = (uintptr_t)cm_cm_app(p);
        uintptr_t lo = (addr > base) ? addr : base;
        uintptr_t hi = (end < base + cm_cm.ps) ? end : base + cm_cm.ps;
        bool watch = false;
        if (!cm_cm.pte[p].mapped) {
            cm_status_t status = cm_cm_join(p, store);
            if (status != CM_OK) {
                cm_fatal(1, "joining shared page %" PRIu64 " failed: %s", p,
                         cm_status_string(status));
            }
        }
        if (!store && cm_cm.write->ops->loaded != NULL && cm_cm.write->ops->armed(cm_cm.write, p)) {
            /* A load check may stand for a store the compiler folded into it: the write
             * mechanism watches the bytes (once filled: its twin is what the store changes). */
            watch = true;
        }
        if (cm_cm.pte[p].home == cm_cm.me) {
            if (watch) {
                /* Its dirty bit still wants the store. */
                cm_cm.write->ops->loaded(cm_cm.write, lo, hi - lo);
                watch = false;
            }
            continue; /* the master copy: every line valid, painted by the join */
        }
        {
            uint64_t *outer = NULL;
            bool armed = false, filled = false;
            for (size_t i = (lo - base) >> fl->lshift; i <= (hi - 1 - base) >> fl->lshift;
                 i++) {
                if (cm_fl_is_valid(fl, p, i)) {
                    continue;
                }
                if (!filled) {
                    outer  = cm_stats_phase_enter(&cm_cm.st.line_fill_ns);
                    armed  = cm_cm.write->ops->armed(cm_cm.write, p);
                    filled = true;
                }
                if (fl->misses[p] < UINT8_MAX) {
                    fl->misses[p]++;
                }
                if (fl->page_fill != 0 && fl->misses[p] >= fl->page_fill) {
                    /* Swept line by line from nothing valid: the rest comes at once. */
                    cm_fl_fill_page(fl, p, keep_lo, keep_hi);
                    cm_cm_repaint(p);
                    break;
                }
                cm_fl_fill(fl, p, i, keep_lo, keep_hi);
                cm_shadow_set_range(base + (i << fl->lshift), fl->line, armed);
            }
            if (filled) {
                cm_stats_phase_leave(outer);
            }
        }
        if (watch) {
            cm_cm.write->ops->loaded(cm_cm.write, lo, hi - lo);
            watch = false;
        }
    }
}

/* Invalid lines armed; valid ones as the write mechanism wants stores (or not joined: all). */
static void cm_fl_paint(cm_fill_t *self, uint64_t p, uint8_t *sh, size_t n, bool write_armed)
{
    cm_fl_t *fl = (cm_fl_t *)self;
    size_t per_line = fl->line / 8;

    if (!cm_cm.pte[p].mapped || write_armed) {
        memset(sh, 0xff, n);
        return;
    }
    for (size_t i = 0; i < fl->lines; i++) {
        memset(sh + i * per_line, cm_fl_is_valid(fl, p, i) ? 0 : 0xff, per_line);
    }
}

const cm_fill_ops_t cm_fill_line_ops = {
    .name   = "line",
    .init   = cm_fl_init,
    .fini   = cm_fl_fini,
    .map    = cm_fl_map,
    .drop   = cm_fl_drop,
    .access = cm_fl_access,
    .paint  = cm_fl_paint,
};
