/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Store hooks, linked into programs built with cmcc (libcashmere_hooks.a).
 * Compiled without instrumentation and without builtins.
 *
 * GCC's AddressSanitizer instrumentation (docs/ARCHITECTURE.md, "Access checks") calls
 * __asan_report_store<N>_noabort(addr) before a store whose shadow byte is
 * armed (inline checks, the default) or __asan_store<N>(addr) before every
 * store (callback mode); either is a range check against the shared region
 * and, for a shared store, a call into the runtime, which forwards the stored
 * bytes to the page's home. The remaining entry points of the ABI the
 * compiler references are no-ops.
 *
 * memcpy, memmove and memset are interposed: a copy into the shared region is
 * reported once it has happened; both ranges are reported to the load handler
 * before (software line fills make the source, and lines the copy writes in
 * part, current). (GCC itself turns small fixed-size copies
 * into instrumented stores; calls remain for the rest.)
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/access/cm_hooks_api.h"

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
static cm_hook_handler_t volatile cm_hk_load_handler; /* NULL unless loads need the runtime */

static inline int cm_hk_in(uintptr_t a)
{
    return a - cm_hk_lo < cm_hk_span;
}

/* [a, a+n) overlaps the region: reports the overlapping part to handler h. */
static inline void cm_hk_clip(uintptr_t a, size_t n, cm_hook_handler_t h)
{
    uintptr_t lo = cm_hk_lo, hi = lo + cm_hk_span;
    if (n != 0 && a < hi && a + n > lo) {
        uintptr_t s = (a > lo) ? a : lo, e = (a + n < hi) ? a + n : hi;
        h(s, e - s);
    }
}

static inline void cm_hk_range(uintptr_t a, size_t n)
{
    cm_hk_clip(a, n, cm_hk_handler);
}

/* Bytes about to be read (loads with load checks, copies' sources): only where the runtime
 * asked for loads (software line fills, the NS variants). */
static inline void cm_hk_load_range(uintptr_t a, size_t n)
{
    cm_hook_handler_t h = cm_hk_load_handler;
    if (__builtin_expect(h != NULL, 0)) {
        cm_hk_clip(a, n, h);
    }
}

CM_HOOK_EXPORT void __asan_init(void)
{
    static int registered;
    if (!registered) {
        registered = 1;
        cm_hooks_register(&cm_hk_lo, &cm_hk_span, &cm_hk_handler, &cm_hk_load_handler);
    }
}

/*
 * The build, recorded in the binary: every cmcc link asks for this symbol (-u), which
 * brings this object in (memcpy/memmove/memset and the registration below) even into a
 * program with no instrumented store of its own. The runtime looks the name up, cmrun
 * (cm_info --build) finds the text in the file: neither infers the build from the
 * instrumentation a program happens to contain.
 */
__attribute__((visibility("default"))) extern const char cm_build_stores[];
const char cm_build_stores[] = "CASHMERE_BUILD=stores";

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

/* A load of n bytes at a (programs built with load checks): a shared one goes to the load
 * handler, where the runtime set one. */
static inline void cm_hk_load(uintptr_t a, size_t n)
{
    if (__builtin_expect(cm_hk_in(a), 0)) {
        cm_hook_handler_t h = cm_hk_load_handler;
        if (h != NULL) {
            h(a, n);
        }
    }
}

/* Callback mode (CMCC_CHECKS=callback) calls __asan_store<n> before every store. Inline checks
 * (the default) read the shadow (src/access/cm_shadow.c) and call __asan_report_store<n>_noabort only
 * for a store whose shadow byte is armed; the range check stays there too: the region may be
 * paused (PARMACS output muting) while its shadow is armed. */
#define CM_HOOK_STORE(n) \
    CM_HOOK_EXPORT void __asan_store##n(uintptr_t a) { cm_hk_store(a, n); } \
    CM_HOOK_EXPORT void __asan_store##n##_noabort(uintptr_t a) { cm_hk_store(a, n); } \
    CM_HOOK_EXPORT void __asan_report_store##n##_noabort(uintptr_t a) { cm_hk_store(a, n); } \
    CM_HOOK_EXPORT void __asan_load##n(uintptr_t a) { cm_hk_load(a, n); } \
    CM_HOOK_EXPORT void __asan_load##n##_noabort(uintptr_t a) { cm_hk_load(a, n); } \
    CM_HOOK_EXPORT void __asan_report_load##n##_noabort(uintptr_t a) { cm_hk_load(a, n); }

CM_HOOK_STORE(1)
CM_HOOK_STORE(2)
CM_HOOK_STORE(4)
CM_HOOK_STORE(8)
CM_HOOK_STORE(16)

CM_HOOK_EXPORT void __asan_storeN(uintptr_t a, size_t n) { cm_hk_range(a, n); }
CM_HOOK_EXPORT void __asan_report_store_n_noabort(uintptr_t a, size_t n) { cm_hk_range(a, n); }
CM_HOOK_EXPORT void __asan_storeN_noabort(uintptr_t a, size_t n) { cm_hk_range(a, n); }
CM_HOOK_EXPORT void __asan_loadN(uintptr_t a, size_t n) { cm_hk_load_range(a, n); }
CM_HOOK_EXPORT void __asan_loadN_noabort(uintptr_t a, size_t n) { cm_hk_load_range(a, n); }
CM_HOOK_EXPORT void __asan_report_load_n_noabort(uintptr_t a, size_t n) { cm_hk_load_range(a, n); }

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
    cm_hk_load_range((uintptr_t)s, n);
    cm_hk_load_range((uintptr_t)d, n); /* line fills: the lines written in part, current first */
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
    cm_hk_load_range((uintptr_t)s, n);
    cm_hk_load_range((uintptr_t)d, n); /* line fills: the lines written in part, current first */
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
    cm_hk_load_range((uintptr_t)d, n);
    cm_hk_memset(d, c, n);
    cm_hk_range((uintptr_t)d, n);
    return d;
}

/* ---- reads: memcmp, bcmp, strlen, strnlen, strcmp, strncmp --------------------- */

/* Built with load checks, the program calls these instead of letting GCC expand them into
 * loads without checks (-fno-builtin-<name> in the access build); lines are made current
 * before libc reads them. Strings are filled 64 aligned bytes at a time up to their end. */
typedef int (*cm_hk_cmp_fn_t)(const void *, const void *, size_t);
typedef size_t (*cm_hk_len_fn_t)(const char *);
typedef size_t (*cm_hk_nlen_fn_t)(const char *, size_t);
typedef int (*cm_hk_scmp_fn_t)(const char *, const char *);
typedef int (*cm_hk_sncmp_fn_t)(const char *, const char *, size_t);

#define CM_HK_CHUNK 64

/* Reports the string at s to the load handler up to its terminator (or max bytes). */
static void cm_hk_load_str(const char *s, size_t max)
{
    uintptr_t a = (uintptr_t)s;

    if (cm_hk_load_handler == NULL || !cm_hk_in(a)) {
        return;
    }
    while (max > 0 && cm_hk_in(a)) {
        size_t n = CM_HK_CHUNK - (a & (CM_HK_CHUNK - 1));
        const volatile char *c = (const volatile char *)a;
        n = (n < max) ? n : max;
        cm_hk_load_range(a, n);
        for (size_t i = 0; i < n; i++) {
            if (c[i] == '\0') {
                return;
            }
        }
        a += n;
        max -= n;
    }
}

#define CM_HK_REAL(type, var, name) \
    static type var; \
    if (__builtin_expect(var == NULL, 0)) { \
        var = (type)dlsym(RTLD_NEXT, name); \
    }

CM_HOOK_EXPORT int memcmp(const void *a, const void *b, size_t n)
{
    CM_HK_REAL(cm_hk_cmp_fn_t, real, "memcmp");
    cm_hk_load_range((uintptr_t)a, n);
    cm_hk_load_range((uintptr_t)b, n);
    return real(a, b, n);
}

CM_HOOK_EXPORT int bcmp(const void *a, const void *b, size_t n)
{
    CM_HK_REAL(cm_hk_cmp_fn_t, real, "bcmp");
    cm_hk_load_range((uintptr_t)a, n);
    cm_hk_load_range((uintptr_t)b, n);
    return real(a, b, n);
}

CM_HOOK_EXPORT size_t strlen(const char *s)
{
    CM_HK_REAL(cm_hk_len_fn_t, real, "strlen");
    cm_hk_load_str(s, SIZE_MAX);
    return real(s);
}

CM_HOOK_EXPORT size_t strnlen(const char *s, size_t max)
{
    CM_HK_REAL(cm_hk_nlen_fn_t, real, "strnlen");
    cm_hk_load_str(s, max);
    return real(s, max);
}

CM_HOOK_EXPORT int strcmp(const char *a, const char *b)
{
    CM_HK_REAL(cm_hk_scmp_fn_t, real, "strcmp");
    cm_hk_load_str(a, SIZE_MAX);
    cm_hk_load_str(b, SIZE_MAX);
    return real(a, b);
}

CM_HOOK_EXPORT int strncmp(const char *a, const char *b, size_t n)
{
    CM_HK_REAL(cm_hk_sncmp_fn_t, real, "strncmp");
    cm_hk_load_str(a, n);
    cm_hk_load_str(b, n);
    return real(a, b, n);
}
