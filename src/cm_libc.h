/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by the libc interposers (src/cm_libc.c, src/cm_libc_scanf.c): bytes
 * [p, p+n) were written by libc or the kernel; the part in the shared region
 * is reported as a store (forwarded under the S-write variants).
 */
#ifndef CM_LIBC_H
#define CM_LIBC_H

#include <stddef.h>

void cm_libc_wrote(const void *p, size_t n) __attribute__((visibility("hidden")));

#endif
