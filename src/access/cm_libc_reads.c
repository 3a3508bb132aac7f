/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libc functions that read memory the caller names, interposed so that a read
 * of the shared region sees current data under software line fills.
 *
 * With the NS variants a page's local copy holds valid and invalid lines side
 * by side; a program built with load checks makes a line current before each
 * of its own loads, but libc and the kernel are not built with them. A shared
 * string printed, written to a file or parsed would be read as the local copy
 * holds it: after an acquire, possibly lines older than the last release
 * (RAYTRACE's image through fwrite, a table printed with printf's %s). Each
 * wrapper here first reports the bytes the call will read (cm_hook_load:
 * nothing to do unless the variant fills lines in software), then calls libc.
 * printf's family reads strings through %s: while loads need the runtime, %s
 * is taken over with glibc's register_printf_specifier, so every printf,
 * fprintf, sprintf and dprintf reports a shared string before printing it.
 *
 * Functions that also write (qsort, the copies of cm_libc.c, the scanf family)
 * report the read side here or there before calling libc.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/access/cm_hooks_api.h"
#include "src/access/cm_libc.h"

#include <dlfcn.h>
#include <printf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <wchar.h>

#define CM_LIBC_REAL(name) \
    static __typeof__(name) *cm_real_##name; \
    if (__builtin_expect(cm_real_##name == NULL, 0)) { \
        cm_real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name); \
    }

/* Strings are made current 64 aligned bytes at a time, up to their terminator. */
#define CM_LIBC_CHUNK 64

static volatile bool cm_libc_reads_on; /* a load handler is set: reads need reporting */

void cm_libc_loading(const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p, lo = cm_libc_region_.lo, hi = cm_libc_region_.hi;

    if (!cm_libc_reads_on || n == 0 || a >= hi || a + n <= lo) {
        return;
    }
    if (a < lo) {
        n -= lo - a;
        a = lo;
    }
    if (a + n > hi) {
        n = hi - a;
    }
    cm_hook_load(a, n);
}

void cm_libc_loading_str(const char *s, size_t max)
{
    uintptr_t a = (uintptr_t)s, lo = cm_libc_region_.lo, hi = cm_libc_region_.hi;

    if (!cm_libc_reads_on || s == NULL || a < lo || a >= hi) {
        return;
    }
    while (max > 0 && a < hi) {
        size_t n = CM_LIBC_CHUNK - (a & (CM_LIBC_CHUNK - 1));
        const volatile char *c = (const volatile char *)a;
        n = (n < max) ? n : max;
        n = (n < hi - a) ? n : hi - a;
        cm_hook_load(a, n);
        for (size_t i = 0; i < n; i++) {
            if (c[i] == '\0') {
                return;
            }
        }
        a += n;
        max -= n;
    }
}

/* ---- printf's %s ------------------------------------------------------------- */

/* %s (and %ls), as glibc prints them, after the string is made current. */
static int cm_libc_printf_s(FILE *f, const struct printf_info *info, const void *const *args)
{
    size_t len, pad;
    int prec = info->prec, width = info->width;

    if (info->is_long) {
        const wchar_t *w = *(const wchar_t *const *)args[0];
        size_t nw = (w == NULL) ? 0 : (prec >= 0) ? wcsnlen(w, (size_t)prec) : wcslen(w);
        cm_libc_loading(w, (nw + 1) * sizeof(wchar_t));
        /* %S is %ls under another name, and not taken over. */
        return fprintf(f, info->left ? "%-*.*S" : "%*.*S", width, prec, w);
    }
    {
        const char *s = *(const char *const *)args[0];
        if (s == NULL) {
            s = (prec < 0 || prec >= 6) ? "(null)" : "";
        }
        cm_libc_loading_str(s, (prec >= 0) ? (size_t)prec : SIZE_MAX);
        len = (prec >= 0) ? strnlen(s, (size_t)prec) : strlen(s);
        pad = (width > 0 && (size_t)width > len) ? (size_t)width - len : 0;
        for (size_t i = 0; !info->left && i < pad; i++) {
            if (putc_unlocked(' ', f) == EOF) {
                return -1;
            }
        }
        if (len > 0 && fwrite_unlocked(s, 1, len, f) != len) {
            return -1;
        }
        for (size_t i = 0; info->left && i < pad; i++) {
            if (putc_unlocked(' ', f) == EOF) {
                return -1;
            }
        }
        return (int)(len + pad);
    }
}

static int cm_libc_printf_s_arginfo(const struct printf_info *info, size_t n, int *types,
                                    int *size)
{
    if (n > 0) {
        types[0] = info->is_long ? PA_WSTRING : PA_STRING;
        size[0]  = sizeof(const char *);
    }
    return 1;
}

bool cm_libc_reads_active(void)
{
    return cm_libc_reads_on;
}

void cm_libc_reads(bool on)
{
    static bool registered;

    if (on && !registered) {
        /* Once per process: glibc keeps the handler for good (the slower positional path for
         * every printf is the price, paid only where loads need the runtime). */
        registered = register_printf_specifier('s', cm_libc_printf_s,
                                               cm_libc_printf_s_arginfo) == 0;
    }
    cm_libc_reads_on = on;
}

/* ---- output: streams and the kernel ------------------------------------------ */

size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
    CM_LIBC_REAL(fwrite);
    cm_libc_loading(p, size * n);
    return cm_real_fwrite(p, size, n, f);
}

#undef fwrite_unlocked
size_t fwrite_unlocked(const void *p, size_t size, size_t n, FILE *f)
{
    CM_LIBC_REAL(fwrite_unlocked);
    cm_libc_loading(p, size * n);
    return cm_real_fwrite_unlocked(p, size, n, f);
}

int fputs(const char *s, FILE *f)
{
    CM_LIBC_REAL(fputs);
    cm_libc_loading_str(s, SIZE_MAX);
    return cm_real_fputs(s, f);
}

#undef fputs_unlocked
int fputs_unlocked(const char *s, FILE *f)
{
    CM_LIBC_REAL(fputs_unlocked);
    cm_libc_loading_str(s, SIZE_MAX);
    return cm_real_fputs_unlocked(s, f);
}

int puts(const char *s)
{
    CM_LIBC_REAL(puts);
    cm_libc_loading_str(s, SIZE_MAX);
    return cm_real_puts(s);
}

ssize_t write(int fd, const void *p, size_t n)
{
    CM_LIBC_REAL(write);
    cm_libc_loading(p, n);
    return cm_real_write(fd, p, n);
}

ssize_t pwrite(int fd, const void *p, size_t n, off_t off)
{
    CM_LIBC_REAL(pwrite);
    cm_libc_loading(p, n);
    return cm_real_pwrite(fd, p, n, off);
}

ssize_t pwrite64(int fd, const void *p, size_t n, off_t off)
{
    return pwrite(fd, p, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    CM_LIBC_REAL(writev);
    for (int i = 0; i < cnt; i++) {
        cm_libc_loading(iov[i].iov_base, iov[i].iov_len);
    }
    return cm_real_writev(fd, iov, cnt);
}

ssize_t send(int fd, const void *p, size_t n, int flags)
{
    CM_LIBC_REAL(send);
    cm_libc_loading(p, n);
    return cm_real_send(fd, p, n, flags);
}

ssize_t sendto(int fd, const void *p, size_t n, int flags, const struct sockaddr *to,
               socklen_t len)
{
    CM_LIBC_REAL(sendto);
    cm_libc_loading(p, n);
    return cm_real_sendto(fd, p, n, flags, to, len);
}

/* ---- strings read --------------------------------------------------------------- */

char *strchr(const char *s, int c)
{
    CM_LIBC_REAL(strchr);
    cm_libc_loading_str(s, SIZE_MAX);
    return cm_real_strchr(s, c);
}

char *strrchr(const char *s, int c)
{
    CM_LIBC_REAL(strrchr);
    cm_libc_loading_str(s, SIZE_MAX);
    return cm_real_strrchr(s, c);
}

char *strstr(const char *h, const char *n)
{
    CM_LIBC_REAL(strstr);
    cm_libc_loading_str(h, SIZE_MAX);
    cm_libc_loading_str(n, SIZE_MAX);
    return cm_real_strstr(h, n);
}

size_t strspn(const char *s, const char *accept)
{
    CM_LIBC_REAL(strspn);
    cm_libc_loading_str(s, SIZE_MAX);
    cm_libc_loading_str(accept, SIZE_MAX);
    return cm_real_strspn(s, accept);
}

size_t strcspn(const char *s, const char *reject)
{
    CM_LIBC_REAL(strcspn);
    cm_libc_loading_str(s, SIZE_MAX);
    cm_libc_loading_str(reject, SIZE_MAX);
    return cm_real_strcspn(s, reject);
}

char *strpbrk(const char *s, const char *accept)
{
    CM_LIBC_REAL(strpbrk);
    cm_libc_loading_str(s, SIZE_MAX);
    cm_libc_loading_str(accept, SIZE_MAX);
    return cm_real_strpbrk(s, accept);
}

char *strdup(const char *s)
{
    CM_LIBC_REAL(strdup);
    cm_libc_loading_str(s, SIZE_MAX);
    return cm_real_strdup(s);
}

char *strndup(const char *s, size_t n)
{
    CM_LIBC_REAL(strndup);
    cm_libc_loading_str(s, n);
    return cm_real_strndup(s, n);
}

void *memchr(const void *s, int c, size_t n)
{
    CM_LIBC_REAL(memchr);
    cm_libc_loading(s, n);
    return cm_real_memchr(s, c, n);
}

/* Numbers parsed from a shared string: the whole string current (it ends where the number
 * does, or at its terminator). */
#define CM_LIBC_STRTO(type, name) \
    type name(const char *s, char **end, int base) \
    { \
        CM_LIBC_REAL(name); \
        cm_libc_loading_str(s, SIZE_MAX); \
        return cm_real_##name(s, end, base); \
    }
CM_LIBC_STRTO(long, strtol)
CM_LIBC_STRTO(unsigned long, strtoul)
CM_LIBC_STRTO(long long, strtoll)
CM_LIBC_STRTO(unsigned long long, strtoull)

double strtod(const char *s, char **end)
{
    CM_LIBC_REAL(strtod);
    cm_libc_loading_str(s, SIZE_MAX);
    return cm_real_strtod(s, end);
}

float strtof(const char *s, char **end)
{
    CM_LIBC_REAL(strtof);
    cm_libc_loading_str(s, SIZE_MAX);
    return cm_real_strtof(s, end);
}

int atoi(const char *s)
{
    cm_libc_loading_str(s, SIZE_MAX);
    return (int)strtol(s, NULL, 10);
}

long atol(const char *s)
{
    cm_libc_loading_str(s, SIZE_MAX);
    return strtol(s, NULL, 10);
}

double atof(const char *s)
{
    cm_libc_loading_str(s, SIZE_MAX);
    return strtod(s, NULL);
}

/* ---- searching a shared table ------------------------------------------------------ */

void *bsearch(const void *key, const void *base, size_t n, size_t size,
              int (*cmp)(const void *, const void *))
{
    CM_LIBC_REAL(bsearch);
    cm_libc_loading(key, size);
    cm_libc_loading(base, n * size);
    return cm_real_bsearch(key, base, n, size, cmp);
}
