/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scanf family, interposed like the functions of src/access/cm_libc.c: scanf
 * stores each converted value through a pointer argument, possibly into the
 * shared region (a SPLASH program reading its parameters straight into a
 * G_MALLOC'ed struct). Before libc converts, the format is walked with a copy
 * of the arguments and every destination made current (software line fills:
 * a line filled after the call would bring the home's bytes over the other
 * fields the same call wrote into it); after, it is walked again and the bytes
 * of every assignment made are reported as stores.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/access/cm_libc.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

typedef int (*cm_vsscanf_fn_t)(const char *, const char *, va_list);
typedef int (*cm_vfscanf_fn_t)(FILE *, const char *, va_list);

/* Reports the first `assigned` assignments of a conversion that returned it (after: stores),
 * or, before the call (assigned < 0), makes every destination current: strings of unknown
 * length as far as their width or their first byte (the rest is reported, kept, after). */
static void cm_scanf_report(const char *f, va_list ap, int assigned)
{
    const bool before = assigned < 0;

    int done = 0;

    while (*f != '\0' && (before || done < assigned)) {
        bool suppress = false, alloc = false;
        size_t width = 0;
        int len = 0; /* -2 hh, -1 h, 0, 1 l, 2 ll/q/j/z/t, 3 L */
        void *p;
        size_t n = 0;

        if (*f++ != '%') {
            continue;
        }
        if (*f == '%') {
            f++;
            continue;
        }
        if (*f == '*') {
            suppress = true;
            f++;
        }
        /* A positional %N$ form: not used by scanf callers in practice; stop rather than guess. */
        while (*f >= '0' && *f <= '9') {
            width = width * 10 + (size_t)(*f++ - '0');
        }
        if (*f == '$') {
            return;
        }
        if (*f == 'm') { /* allocate: the argument is a char ** (C99 scanf: %a is a float) */
            alloc = true;
            f++;
        }
        for (;;) {
            if (*f == 'h') {
                len = (len == -1) ? -2 : -1;
            } else if (*f == 'l') {
                len = (len == 1) ? 2 : 1;
            } else if (*f == 'q' || *f == 'j' || *f == 'z' || *f == 't') {
                len = 2;
            } else if (*f == 'L') {
                len = 3;
            } else {
                break;
            }
            f++;
        }
        if (*f == '\0') {
            return;
        }
        {
            char c = *f++;
            if (c == '[') {
                if (*f == '^') {
                    f++;
                }
                if (*f == ']') {
                    f++;
                }
                while (*f != '\0' && *f != ']') {
                    f++;
                }
                if (*f == ']') {
                    f++;
                }
            }
            if (suppress) {
                continue;
            }
            p = va_arg(ap, void *);
            switch (c) {
            case 'd': case 'i': case 'o': case 'u': case 'x': case 'X': case 'n':
                n = (len == -2) ? 1 : (len == -1) ? 2 : (len == 0) ? sizeof(int) : 8;
                break;
            case 'a': case 'A': case 'e': case 'E': case 'f': case 'F': case 'g': case 'G':
                n = (len == 0) ? sizeof(float) : (len == 3) ? sizeof(long double) : sizeof(double);
                break;
            case 'p':
                n = sizeof(void *);
                break;
            case 'c': case 'C':
                n = alloc ? sizeof(void *)
                          : (width ? width : 1) * ((len == 1 || c == 'C') ? sizeof(wchar_t) : 1);
                break;
            case 's': case 'S': case '[':
                if (alloc) {
                    n = sizeof(void *);
                } else if (before) {
                    n = (width ? width + 1 : 1) * ((len == 1 || c == 'S') ? sizeof(wchar_t) : 1);
                } else if (len == 1 || c == 'S') {
                    n = (wcslen((const wchar_t *)p) + 1) * sizeof(wchar_t);
                } else {
                    n = strlen((const char *)p) + 1;
                }
                break;
            default:
                return; /* unknown conversion: libc stopped there too */
            }
            if (before) {
                cm_libc_loading(p, n);
                continue;
            }
            cm_libc_wrote(p, n);
            if (c != 'n') {
                done++;
            }
        }
    }
}

/* The destinations current before libc writes them (a copy of the arguments: ap is untouched). */
static void cm_scanf_prefill(const char *fmt, va_list ap)
{
    va_list pre;

    if (!cm_libc_reads_active()) {
        return;
    }
    va_copy(pre, ap);
    cm_scanf_report(fmt, pre, -1);
    va_end(pre);
}

static cm_vsscanf_fn_t cm_scanf_real_s(void)
{
    static cm_vsscanf_fn_t fn;
    if (fn == NULL) {
        fn = (cm_vsscanf_fn_t)dlsym(RTLD_NEXT, "__isoc99_vsscanf");
    }
    return fn;
}

static cm_vfscanf_fn_t cm_scanf_real_f(void)
{
    static cm_vfscanf_fn_t fn;
    if (fn == NULL) {
        fn = (cm_vfscanf_fn_t)dlsym(RTLD_NEXT, "__isoc99_vfscanf");
    }
    return fn;
}

static int cm_vsscanf(const char *s, const char *fmt, va_list ap)
{
    va_list again;
    int r;

    cm_libc_loading_str(s, SIZE_MAX); /* a shared string parsed: current first */
    va_copy(again, ap);
    cm_scanf_prefill(fmt, again);
    r = cm_scanf_real_s()(s, fmt, ap);
    if (r > 0) {
        cm_scanf_report(fmt, again, r);
    }
    va_end(again);
    return r;
}

static int cm_vfscanf(FILE *f, const char *fmt, va_list ap)
{
    va_list again;
    int r;

    va_copy(again, ap);
    cm_scanf_prefill(fmt, again);
    r = cm_scanf_real_f()(f, fmt, ap);
    if (r > 0) {
        cm_scanf_report(fmt, again, r);
    }
    va_end(again);
    return r;
}

/*
 * Each entry point is defined under its exported name with an asm label: the
 * headers redirect the plain names (sscanf) to the C99 ones (__isoc99_sscanf),
 * and both are interposed.
 */
#define CM_SCANF_V(id, sym) \
    int cm_scanf_##id(const char *s, const char *fmt, va_list ap) __asm__(sym); \
    int cm_scanf_##id(const char *s, const char *fmt, va_list ap) { return cm_vsscanf(s, fmt, ap); }
#define CM_SCANF_S(id, sym) \
    int cm_scanf_##id(const char *s, const char *fmt, ...) __asm__(sym); \
    int cm_scanf_##id(const char *s, const char *fmt, ...) \
    { \
        va_list ap; \
        int r; \
        va_start(ap, fmt); \
        r = cm_vsscanf(s, fmt, ap); \
        va_end(ap); \
        return r; \
    }
#define CM_SCANF_VF(id, sym) \
    int cm_scanf_##id(FILE *f, const char *fmt, va_list ap) __asm__(sym); \
    int cm_scanf_##id(FILE *f, const char *fmt, va_list ap) { return cm_vfscanf(f, fmt, ap); }
#define CM_SCANF_F(id, sym) \
    int cm_scanf_##id(FILE *f, const char *fmt, ...) __asm__(sym); \
    int cm_scanf_##id(FILE *f, const char *fmt, ...) \
    { \
        va_list ap; \
        int r; \
        va_start(ap, fmt); \
        r = cm_vfscanf(f, fmt, ap); \
        va_end(ap); \
        return r; \
    }
#define CM_SCANF_VI(id, sym) \
    int cm_scanf_##id(const char *fmt, va_list ap) __asm__(sym); \
    int cm_scanf_##id(const char *fmt, va_list ap) { return cm_vfscanf(stdin, fmt, ap); }
#define CM_SCANF_I(id, sym) \
    int cm_scanf_##id(const char *fmt, ...) __asm__(sym); \
    int cm_scanf_##id(const char *fmt, ...) \
    { \
        va_list ap; \
        int r; \
        va_start(ap, fmt); \
        r = cm_vfscanf(stdin, fmt, ap); \
        va_end(ap); \
        return r; \
    }

CM_SCANF_V(vsscanf, "vsscanf")
CM_SCANF_V(vsscanf99, "__isoc99_vsscanf")
CM_SCANF_S(sscanf, "sscanf")
CM_SCANF_S(sscanf99, "__isoc99_sscanf")
CM_SCANF_VF(vfscanf, "vfscanf")
CM_SCANF_VF(vfscanf99, "__isoc99_vfscanf")
CM_SCANF_F(fscanf, "fscanf")
CM_SCANF_F(fscanf99, "__isoc99_fscanf")
CM_SCANF_VI(vscanf, "vscanf")
CM_SCANF_VI(vscanf99, "__isoc99_vscanf")
CM_SCANF_I(scanf, "scanf")
CM_SCANF_I(scanf99, "__isoc99_scanf")
