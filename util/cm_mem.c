/* SPDX-License-Identifier: BSD-3-Clause */
/* Reserved, lazily committed arrays (see cm_mem.h). */
#include "config.h"
#include "util/cm_mem.h"

#include <string.h>
#include <sys/mman.h>

void *cm_mem_reserve(size_t len)
{
    void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    return (p == MAP_FAILED) ? NULL : p;
}

void cm_mem_zero(void *p, size_t len)
{
    /* Private anonymous memory reads as zeros after MADV_DONTNEED, and costs nothing again. */
    if (len != 0 && madvise(p, len, MADV_DONTNEED) != 0) {
        memset(p, 0, len);
    }
}

void cm_mem_release(void *p, size_t len)
{
    if (p != NULL) {
        munmap(p, len ? len : 1);
    }
}
