/*
 * Store hooks, linked into programs built with cmcc (libcashmere_hooks.a).
 * Compiled without instrumentation and without builtins.
 *
 * GCC's AddressSanitizer instrumentation (DESIGN.md section 6) calls
 * __asan_report_store<N>_noabort(addr) before a store whose shadow byte is
 * armed (inline checks, the default) or __asan_store<N>(addr) before every
 * store (callback mode); either is a range check against the shared region
 * and, for a shared store, a call into the runtime, which forwards the stored
 * bytes to the page's home. The remaining entry points of the ABI the
 * compiler references are no-ops.
 *
 * memcpy, memmove and memset are interposed: a copy into the shared region is
 * reported once it has happened. (GCC itself turns small fixed-size copies
 * into instrumented stores; calls remain for the rest.)
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/cm_hooks_api.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#define CM_HOOK_EXPORT __attribute__((visibility("default")))

/* Entry points whose names and signatures the compiler and libc define: no headers to include. */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

/* The shared region as the hooks see it: set by the runtime through cm_hooks_register. */
static volatile uintptr_t cm_hk_lo;
static volatile uintptr_t cm_hk_span;
static cm_hook_handler_t volatile cm_hk_handler;

static inline int cm_hk_in(uintptr_t a)
{
    return a - cm_hk_lo < cm_hk_span;
}

/* [a, a+n) overlaps the region: reports the overlapping part. */
static inline void cm_hk_range(uintptr_t a, size_t n)
{
    uintptr_t lo = cm_hk_lo, hi = lo + cm_hk_span;
    if (n != 0 && a < hi && a + n > lo) {
        uintptr_t s = (a > lo) ? a : lo, e = (a + n < hi) ? a + n : hi;
        cm_hk_handler(s, e - s);
    }
}

CM_HOOK_EXPORT void __asan_init(void)
{
    static int registered;
    if (!registered) {
        registered = 1;
        cm_hooks_register(&cm_hk_lo, &cm_hk_span, &cm_hk_handler);
    }
}

/* Inline-check objects have no module constructor calling __asan_init: register here. */
__attribute__((constructor)) static void cm_hk_ctor(void)
{
    __asan_init();
}

CM_HOOK_EXPORT void __asan_version_mismatch_check_v8(void) {}
CM_HOOK_EXPORT void __asan_handle_no_return(void) {}

/* A store of n bytes at a: a shared one goes to the runtime's handler (set with the span). */
static inline void cm_hk_store(uintptr_t a, size_t n)
{
    if (__builtin_expect(cm_hk_in(a), 0)) {
        cm_hk_handler(a, n);
    }
}

/* Callback mode (CMCC_CHECKS=callback) calls __asan_store<n> before every store. Inline checks
 * (the default) read the shadow (src/cm_shadow.c) and call __asan_report_store<n>_noabort only
 * for a store whose shadow byte is armed; the range check stays there too: the region may be
 * paused (PARMACS output muting) while its shadow is armed. */
#define CM_HOOK_STORE(n) \
    CM_HOOK_EXPORT void __asan_store##n(uintptr_t a) { cm_hk_store(a, n); } \
    CM_HOOK_EXPORT void __asan_store##n##_noabort(uintptr_t a) { cm_hk_store(a, n); } \
    CM_HOOK_EXPORT void __asan_report_store##n##_noabort(uintptr_t a) { cm_hk_store(a, n); } \
    CM_HOOK_EXPORT void __asan_load##n(uintptr_t a) { (void)a; } \
    CM_HOOK_EXPORT void __asan_load##n##_noabort(uintptr_t a) { (void)a; }

CM_HOOK_STORE(1)
CM_HOOK_STORE(2)
CM_HOOK_STORE(4)
CM_HOOK_STORE(8)
CM_HOOK_STORE(16)

CM_HOOK_EXPORT void __asan_storeN(uintptr_t a, size_t n) { cm_hk_range(a, n); }
CM_HOOK_EXPORT void __asan_report_store_n_noabort(uintptr_t a, size_t n) { cm_hk_range(a, n); }
CM_HOOK_EXPORT void __asan_storeN_noabort(uintptr_t a, size_t n) { cm_hk_range(a, n); }
CM_HOOK_EXPORT void __asan_loadN(uintptr_t a, size_t n) { (void)a; (void)n; }
CM_HOOK_EXPORT void __asan_loadN_noabort(uintptr_t a, size_t n) { (void)a; (void)n; }

/* ---- memcpy / memmove / memset ----------------------------------------------- */

typedef void *(*cm_hk_copy_fn_t)(void *, const void *, size_t);
typedef void *(*cm_hk_set_fn_t)(void *, int, size_t);

static cm_hk_copy_fn_t cm_hk_memcpy, cm_hk_memmove;
static cm_hk_set_fn_t cm_hk_memset;

/* Used only while libc's versions are being looked up: plain loops, never turned into calls. */
__attribute__((optimize("no-tree-loop-distribute-patterns")))
static void *cm_hk_slow_move(void *d, const void *s, size_t n)
{
    volatile unsigned char *dd = d;
    const volatile unsigned char *ss = s;
    if (dd < ss) {
        for (size_t i = 0; i < n; i++) {
            dd[i] = ss[i];
        }
    } else {
        for (size_t i = n; i > 0; i--) {
            dd[i - 1] = ss[i - 1];
        }
    }
    return d;
}

__attribute__((optimize("no-tree-loop-distribute-patterns")))
static void *cm_hk_slow_set(void *d, int c, size_t n)
{
    volatile unsigned char *dd = d;
    for (size_t i = 0; i < n; i++) {
        dd[i] = (unsigned char)c;
    }
    return d;
}

static void cm_hk_resolve(void)
{
    static volatile int resolving;
    if (resolving) {
        return;
    }
    resolving = 1;
    cm_hk_memcpy  = (cm_hk_copy_fn_t)dlsym(RTLD_NEXT, "memcpy");
    cm_hk_memmove = (cm_hk_copy_fn_t)dlsym(RTLD_NEXT, "memmove");
    cm_hk_memset  = (cm_hk_set_fn_t)dlsym(RTLD_NEXT, "memset");
    resolving = 0;
}

CM_HOOK_EXPORT void *memcpy(void *d, const void *s, size_t n)
{
    if (__builtin_expect(cm_hk_memcpy == NULL, 0)) {
        cm_hk_resolve();
        if (cm_hk_memcpy == NULL) {
            return cm_hk_slow_move(d, s, n);
        }
    }
    cm_hk_memcpy(d, s, n);
    cm_hk_range((uintptr_t)d, n);
    return d;
}

CM_HOOK_EXPORT void *memmove(void *d, const void *s, size_t n)
{
    if (__builtin_expect(cm_hk_memmove == NULL, 0)) {
        cm_hk_resolve();
        if (cm_hk_memmove == NULL) {
            return cm_hk_slow_move(d, s, n);
        }
    }
    cm_hk_memmove(d, s, n);
    cm_hk_range((uintptr_t)d, n);
    return d;
}

CM_HOOK_EXPORT void *memset(void *d, int c, size_t n)
{
    if (__builtin_expect(cm_hk_memset == NULL, 0)) {
        cm_hk_resolve();
        if (cm_hk_memset == NULL) {
            return cm_hk_slow_set(d, c, n);
        }
    }
    cm_hk_memset(d, c, n);
    cm_hk_range((uintptr_t)d, n);
    return d;
}
