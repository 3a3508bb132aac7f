/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CM_CHECK_STORES=yes: finds stores into the shared region that the store
 * hooks never saw, and stops the job naming them, instead of letting them be
 * lost.
 *
 * Under software write forwarding (the S variants) a store reaches a page's
 * home only if the hooks see it: code built with cmcc, the interposed
 * memcpy/memset family and the libc functions of cm_libc.c. Anything else (a
 * library built without cmcc, inline assembly, a raw system call) writes
 * only the local copy. Two checks catch it, both at page granularity of
 * protection and byte granularity of data:
 *
 * - Pages are mapped read-only until a hooked store opens them (the hook runs
 *   before the store), and closed again at each release. A write fault on a
 *   page no hooked store opened is a store the hooks did not see: the page is
 *   opened, marked UNSEEN and the faulting instruction remembered. libc
 *   wrappers that write first and report after land here too, legitimately.
 * - Every page homed elsewhere keeps a twin (its contents when mapped or at
 *   the last release) and a bit per byte the hooks reported. At the release
 *   (or before the page is dropped) a byte that changed without being
 *   reported was written behind the hooks' back: the job stops. Pages homed
 *   here receive other processes' forwarded stores, so a twin says nothing
 *   there; but their data is the master copy, and the only thing an unseen
 *   store can lose is the write notice: so an UNSEEN home page that no
 *   hooked store marked dirty before the release is the error.
 *
 * A system call that writes into a page still read-only fails with EFAULT
 * (the kernel does not fault on the process's behalf); the interposed read
 * family opens the pages first.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/protocols/cashmere/cm_store_check.h"
#include "util/cm_log.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static struct {
    char     *app;     /* the application view (addresses the hooks report) */
    char     *net;     /* the network view of the same pages: readable whatever their protection */
    size_t   ps;
    unsigned shift;
    uint64_t npages;
    uint8_t  *twins;   /* npages * ps, touched only for pages homed elsewhere */
    uint8_t  *masks;   /* npages * ps/8: bytes the hooks reported since the twin */
    uint64_t *pcs;     /* per page: the first unseen store's instruction, 0 if none */
    size_t   bytes;
} cm_sc;

static inline uint8_t *cm_sc_twin(uint64_t p)
{
    return cm_sc.twins + (p << cm_sc.shift);
}

static inline uint8_t *cm_sc_mask(uint64_t p)
{
    return cm_sc.masks + (p << (cm_sc.shift - 3));
}

cm_status_t cm_sc_init(char *app, char *net, uint64_t npages, size_t ps)
{
    void *m;

    cm_sc.app    = app;
    cm_sc.net    = net;
    cm_sc.ps     = ps;
    cm_sc.shift  = (unsigned)__builtin_ctzll(ps);
    cm_sc.npages = npages;
    cm_sc.bytes  = npages * (ps + ps / 8 + sizeof(uint64_t));
    /* Reserved, not committed: only pages mapped from elsewhere are ever touched. Nothing is
     * allocated in the fault handler, which may interrupt malloc. */
    m = mmap(NULL, cm_sc.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
             -1, 0);
    if (m == MAP_FAILED) {
        cm_error("CM_CHECK_STORES: cannot reserve %zu bytes for twins of %" PRIu64 " pages",
                 cm_sc.bytes, npages);
        cm_sc.bytes = 0;
        return CM_ERR_NO_MEMORY;
    }
    cm_sc.twins = m;
    cm_sc.masks = cm_sc.twins + npages * ps;
    cm_sc.pcs   = (uint64_t *)(cm_sc.masks + npages * (ps / 8));
    return CM_OK;
}

void cm_sc_fini(void)
{
    if (cm_sc.bytes != 0) {
        munmap(cm_sc.twins, cm_sc.bytes);
        cm_sc.bytes = 0;
    }
}

void cm_sc_mapped(uint64_t p, bool home)
{
    /* The mask stays: the hooks may have announced the store that faulted. verify clears it. */
    cm_sc.pcs[p] = 0;
    if (!home) {
        memcpy(cm_sc_twin(p), cm_sc.net + (p << cm_sc.shift), cm_sc.ps);
    }
}

void cm_sc_stored(uintptr_t addr, size_t len)
{
    uintptr_t off = addr - (uintptr_t)cm_sc.app, end = off + len;

    /* Whole bytes of the mask where the range covers them, bits at the edges. */
    while (off < end && (off & 7) != 0) {
        cm_sc.masks[off >> 3] |= (uint8_t)(1u << (off & 7));
        off++;
    }
    if (end - off >= 8) {
        memset(cm_sc.masks + (off >> 3), 0xff, (end - off) >> 3);
        off += (end - off) & ~(uintptr_t)7;
    }
    while (off < end) {
        cm_sc.masks[off >> 3] |= (uint8_t)(1u << (off & 7));
        off++;
    }
}

void cm_sc_unseen(uint64_t p, uintptr_t pc)
{
    if (cm_sc.pcs[p] == 0) {
        cm_sc.pcs[p] = pc != 0 ? pc : 1;
    }
}

/* "at 0x... (function in object)" for the instruction pc, or "" when none was recorded. */
static void cm_sc_where(uint64_t pc, char *buf, size_t size)
{
    Dl_info info;

    buf[0] = '\0';
    if (pc <= 1) {
        return;
    }
    if (dladdr((void *)(uintptr_t)pc, &info) != 0 && info.dli_fname != NULL) {
        snprintf(buf, size, " by the instruction at %#" PRIx64 " (%s in %s)", pc,
                 info.dli_sname != NULL ? info.dli_sname : "?", info.dli_fname);
    } else {
        snprintf(buf, size, " by the instruction at %#" PRIx64, pc);
    }
}

void cm_sc_verify(uint64_t p, bool home, int home_rank, bool reported)
{
    const uint8_t *page = (const uint8_t *)cm_sc.net + (p << cm_sc.shift);
    char where[512];
    size_t first = cm_sc.ps, last = 0, n = 0;

    cm_sc_where(cm_sc.pcs[p], where, sizeof(where));
    if (home) {
        if (cm_sc.pcs[p] != 0 && !reported) {
            cm_fatal(1, "CM_CHECK_STORES: page %" PRIu64 " (homed here, at %p) was written%s, a "
                     "store the store hooks did not see: no other process would be told of it. "
                     "Build that code with cmcc, or write through private memory and copy",
                     p, (const void *)page, where);
        }
        memset(cm_sc_mask(p), 0, cm_sc.ps / 8);
        cm_sc.pcs[p] = 0;
        return;
    }
    if (memcmp(page, cm_sc_twin(p), cm_sc.ps) != 0) {
        const uint8_t *twin = cm_sc_twin(p), *mask = cm_sc_mask(p);
        for (size_t i = 0; i < cm_sc.ps; i++) {
            if (page[i] != twin[i] && !(mask[i >> 3] & (1u << (i & 7)))) {
                if (first == cm_sc.ps) {
                    first = i;
                }
                last = i;
                n++;
            }
        }
        if (n != 0) {
            cm_fatal(1, "CM_CHECK_STORES: %zu byte(s) at %p..%p (page %" PRIu64 ", homed on rank "
                     "%d) changed%s without a store the hooks saw: they would never reach the "
                     "home. Written by code not built with cmcc or by the kernel (a raw system "
                     "call): build it with cmcc, or write through private memory and copy",
                     n, (const void *)(page + first), (const void *)(page + last), p, home_rank,
                     where[0] != '\0' ? where : " since the last release");
        }
        memcpy(cm_sc_twin(p), page, cm_sc.ps);
    }
    memset(cm_sc_mask(p), 0, cm_sc.ps / 8);
    cm_sc.pcs[p] = 0;
}
