/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libc functions that write into memory the caller names, interposed so that
 * a write into the shared region is never silently lost (and, where they also
 * read shared memory, the bytes read are made current first: cm_libc_reads.c).
 *
 * The store hooks see only stores compiled into the program. When the program
 * hands a shared buffer to libc (strcpy, sprintf, fgets, fread, scanf, qsort)
 * libc's own stores land in the local copy of the page; under software write
 * forwarding they would never reach the home. And when the kernel writes
 * (read, recv) into a page the protocol keeps protected, the call fails with
 * EFAULT. Each wrapper here therefore (1) for kernel writes, first makes the
 * destination pages writable by touching them from user space, so that the
 * protocol's fault handler maps them as for any store; (2) calls libc; (3)
 * reports the bytes actually written, as a store hook would (cm_hook_store:
 * forwarded under the S-write variants, nothing to do where writes are
 * detected by page protection).
 *
 * libcashmere exports these names, so every caller in the process reaches
 * them; outside the shared region they cost one range check. memcpy, memmove
 * and memset are interposed by the hooks themselves (src/access/cm_hooks.c).
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/access/cm_hooks_api.h"
#include "src/access/cm_libc.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <wchar.h>

/* The real function, looked up once (RTLD_NEXT: libc's). */
#define CM_LIBC_REAL(name) \
    static __typeof__(name) *cm_real_##name; \
    if (__builtin_expect(cm_real_##name == NULL, 0)) { \
        cm_real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name); \
    }

cm_libc_region_t cm_libc_region_;

void cm_libc_region(void *base, size_t size, size_t page)
{
    cm_libc_region_.lo   = (uintptr_t)base;
    cm_libc_region_.hi   = (uintptr_t)base + size;
    cm_libc_region_.page = page;
}

/* The part of [p, p+n) inside the shared region's application view, as [*s, *e); false if none. */
static bool cm_libc_clip(const void *p, size_t n, uintptr_t *s, uintptr_t *e)
{
    uintptr_t a = (uintptr_t)p, lo = cm_libc_region_.lo, hi = cm_libc_region_.hi;

    if (n == 0 || a >= hi || a + n <= lo) {
        return false;
    }
    *s = (a > lo) ? a : lo;
    *e = (a + n < hi) ? a + n : hi;
    return true;
}

void cm_libc_wrote(const void *p, size_t n)
{
    uintptr_t s, e;

    if (cm_libc_clip(p, n, &s, &e)) {
        cm_hook_store(s, e - s);
    }
}

/* The kernel is about to write [p, p+n): make every shared page of it writable (and, under
 * software line fills, its lines current: it may write only part of them) first. */
static void cm_libc_prepare(void *p, size_t n)
{
    uintptr_t s, e, page = cm_libc_region_.page;

    if (!cm_libc_clip(p, n, &s, &e)) {
        return;
    }
    cm_libc_loading((void *)s, e - s);
    for (uintptr_t q = s; q < e; q = (q | (page - 1)) + 1) {
        /* Rewrites the byte with its own value: faults the page in for writing, changes nothing. */
        volatile char *c = (volatile char *)q;
        *c = *c;
    }
}

/* A kernel read returned r into d: reports what arrived, returns r. */
static ssize_t cm_libc_got(const void *d, ssize_t r)
{
    if (r > 0) {
        cm_libc_wrote(d, (size_t)r);
    }
    return r;
}

/* ---- strings ---------------------------------------------------------------- */

char *strcpy(char *d, const char *s)
{
    CM_LIBC_REAL(strcpy);
    cm_libc_loading_str(s, SIZE_MAX);
    cm_libc_loading(d, strlen(s) + 1);
    cm_real_strcpy(d, s);
    cm_libc_wrote(d, strlen(d) + 1);
    return d;
}

char *stpcpy(char *d, const char *s)
{
    char *e;
    CM_LIBC_REAL(stpcpy);
    cm_libc_loading_str(s, SIZE_MAX);
    cm_libc_loading(d, strlen(s) + 1);
    e = cm_real_stpcpy(d, s);
    cm_libc_wrote(d, (size_t)(e - d) + 1);
    return e;
}

char *strncpy(char *d, const char *s, size_t n)
{
    CM_LIBC_REAL(strncpy);
    cm_libc_loading_str(s, n);
    cm_libc_loading(d, n);
    cm_real_strncpy(d, s, n);
    cm_libc_wrote(d, n);
    return d;
}

char *stpncpy(char *d, const char *s, size_t n)
{
    char *e;
    CM_LIBC_REAL(stpncpy);
    cm_libc_loading_str(s, n);
    cm_libc_loading(d, n);
    e = cm_real_stpncpy(d, s, n);
    cm_libc_wrote(d, n);
    return e;
}

char *strcat(char *d, const char *s)
{
    size_t at;
    CM_LIBC_REAL(strcat);
    cm_libc_loading_str(d, SIZE_MAX);
    cm_libc_loading_str(s, SIZE_MAX);
    at = strlen(d);
    cm_libc_loading(d + at, strlen(s) + 1);
    cm_real_strcat(d, s);
    cm_libc_wrote(d + at, strlen(d + at) + 1);
    return d;
}

char *strncat(char *d, const char *s, size_t n)
{
    size_t at;
    CM_LIBC_REAL(strncat);
    cm_libc_loading_str(d, SIZE_MAX);
    cm_libc_loading_str(s, n);
    at = strlen(d);
    cm_libc_loading(d + at, strnlen(s, n) + 1);
    cm_real_strncat(d, s, n);
    cm_libc_wrote(d + at, strlen(d + at) + 1);
    return d;
}

void *memccpy(void *d, const void *s, int c, size_t n)
{
    void *e;
    CM_LIBC_REAL(memccpy);
    cm_libc_loading(s, n);
    cm_libc_loading(d, n);
    e = cm_real_memccpy(d, s, c, n);
    cm_libc_wrote(d, e ? (size_t)((char *)e - (char *)d) : n);
    return e;
}

void bzero(void *d, size_t n)
{
    memset(d, 0, n);
    cm_libc_wrote(d, n);
}

/* ---- formatted output --------------------------------------------------------- */

int vsprintf(char *d, const char *fmt, va_list ap)
{
    int r;
    CM_LIBC_REAL(vsprintf);
    if (cm_libc_reads_active()) {
        va_list len_ap;
        va_copy(len_ap, ap);
        r = vsnprintf(NULL, 0, fmt, len_ap); /* how much will be written: current first */
        va_end(len_ap);
        if (r >= 0) {
            cm_libc_loading(d, (size_t)r + 1);
        }
    }
    r = cm_real_vsprintf(d, fmt, ap);
    if (r >= 0) {
        cm_libc_wrote(d, (size_t)r + 1);
    }
    return r;
}

int vsnprintf(char *d, size_t n, const char *fmt, va_list ap)
{
    int r;
    CM_LIBC_REAL(vsnprintf);
    cm_libc_loading(d, n);
    r = cm_real_vsnprintf(d, n, fmt, ap);
    if (r >= 0 && n > 0) {
        cm_libc_wrote(d, ((size_t)r < n) ? (size_t)r + 1 : n);
    }
    return r;
}

int sprintf(char *d, const char *fmt, ...)
{
    va_list ap;
    int r;
    va_start(ap, fmt);
    r = vsprintf(d, fmt, ap);
    va_end(ap);
    return r;
}

int snprintf(char *d, size_t n, const char *fmt, ...)
{
    va_list ap;
    int r;
    va_start(ap, fmt);
    r = vsnprintf(d, n, fmt, ap);
    va_end(ap);
    return r;
}

/* _FORTIFY_SOURCE builds call the checking forms; their checks are libc's business. */
int __vsprintf_chk(char *d, int flag, size_t dlen, const char *fmt, va_list ap)
{
    (void)flag;
    return (dlen == (size_t)-1) ? vsprintf(d, fmt, ap) : vsnprintf(d, dlen, fmt, ap);
}

int __sprintf_chk(char *d, int flag, size_t dlen, const char *fmt, ...)
{
    va_list ap;
    int r;
    va_start(ap, fmt);
    r = __vsprintf_chk(d, flag, dlen, fmt, ap);
    va_end(ap);
    return r;
}

int __vsnprintf_chk(char *d, size_t n, int flag, size_t dlen, const char *fmt, va_list ap)
{
    (void)flag;
    (void)dlen;
    return vsnprintf(d, n, fmt, ap);
}

int __snprintf_chk(char *d, size_t n, int flag, size_t dlen, const char *fmt, ...)
{
    va_list ap;
    int r;
    va_start(ap, fmt);
    r = __vsnprintf_chk(d, n, flag, dlen, fmt, ap);
    va_end(ap);
    return r;
}

char *__strcpy_chk(char *d, const char *s, size_t dlen)
{
    (void)dlen;
    return strcpy(d, s);
}

char *__strcat_chk(char *d, const char *s, size_t dlen)
{
    (void)dlen;
    return strcat(d, s);
}

char *__strncpy_chk(char *d, const char *s, size_t n, size_t dlen)
{
    (void)dlen;
    return strncpy(d, s, n);
}

/* ---- input: streams and the kernel -------------------------------------------- */

char *fgets(char *d, int n, FILE *f)
{
    char *r;
    CM_LIBC_REAL(fgets);
    if (n > 0) {
        cm_libc_loading(d, (size_t)n);
    }
    r = cm_real_fgets(d, n, f);
    if (r != NULL) {
        cm_libc_wrote(d, strlen(d) + 1);
    }
    return r;
}

size_t fread(void *d, size_t size, size_t n, FILE *f)
{
    size_t r;
    CM_LIBC_REAL(fread);
    cm_libc_prepare(d, size * n); /* large reads go from the kernel straight into d */
    r = cm_real_fread(d, size, n, f);
    cm_libc_wrote(d, r * size);
    return r;
}

#undef fread_unlocked
size_t fread_unlocked(void *d, size_t size, size_t n, FILE *f)
{
    size_t r;
    CM_LIBC_REAL(fread_unlocked);
    cm_libc_prepare(d, size * n);
    r = cm_real_fread_unlocked(d, size, n, f);
    cm_libc_wrote(d, r * size);
    return r;
}

ssize_t read(int fd, void *d, size_t n)
{
    CM_LIBC_REAL(read);
    cm_libc_prepare(d, n);
    return cm_libc_got(d, cm_real_read(fd, d, n));
}

ssize_t pread(int fd, void *d, size_t n, off_t off)
{
    CM_LIBC_REAL(pread);
    cm_libc_prepare(d, n);
    return cm_libc_got(d, cm_real_pread(fd, d, n, off));
}

ssize_t pread64(int fd, void *d, size_t n, off_t off)
{
    return pread(fd, d, n, off);
}

static void cm_libc_iov(const struct iovec *iov, int cnt, ssize_t done, bool before)
{
    for (int i = 0; i < cnt && (before || done > 0); i++) {
        size_t n = iov[i].iov_len;
        if (before) {
            cm_libc_prepare(iov[i].iov_base, n);
            continue;
        }
        if ((size_t)done < n) {
            n = (size_t)done;
        }
        cm_libc_wrote(iov[i].iov_base, n);
        done -= (ssize_t)n;
    }
}

ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    ssize_t r;
    CM_LIBC_REAL(readv);
    cm_libc_iov(iov, cnt, 0, true);
    r = cm_real_readv(fd, iov, cnt);
    cm_libc_iov(iov, cnt, r, false);
    return r;
}

ssize_t recv(int fd, void *d, size_t n, int flags)
{
    CM_LIBC_REAL(recv);
    cm_libc_prepare(d, n);
    return cm_libc_got(d, cm_real_recv(fd, d, n, flags));
}

ssize_t recvfrom(int fd, void *d, size_t n, int flags, struct sockaddr *from, socklen_t *len)
{
    CM_LIBC_REAL(recvfrom);
    cm_libc_prepare(d, n);
    return cm_libc_got(d, cm_real_recvfrom(fd, d, n, flags, from, len));
}

/* ---- in-place sorting --------------------------------------------------------- */

void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    CM_LIBC_REAL(qsort);
    cm_libc_loading(base, n * size);
    cm_real_qsort(base, n, size, cmp);
    cm_libc_wrote(base, n * size);
}

void qsort_r(void *base, size_t n, size_t size,
             int (*cmp)(const void *, const void *, void *), void *arg)
{
    CM_LIBC_REAL(qsort_r);
    cm_libc_loading(base, n * size);
    cm_real_qsort_r(base, n, size, cmp, arg);
    cm_libc_wrote(base, n * size);
}
