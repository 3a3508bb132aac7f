/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The replica heap (see cm_replica_heap.h).
 *
 * Why: under the PARMACS macros every process runs main up to CREATE, and the
 * workers then use what process 0 built. In one threaded address space (or
 * after the ANL macros' fork) a pointer process 0 stores anywhere is valid for
 * every worker; here it is valid only if the same allocation got the same
 * address in every process. glibc's heap cannot promise that: the runtime's
 * own allocations (UCX, PMIx) interleave with the program's and differ per
 * rank. So while replication lasts, the program's allocations come from this
 * allocator: a fixed address range, and a result that depends only on the
 * sequence of calls.
 *
 * How: libcashmere exports malloc, free and the rest of glibc's replaceable
 * allocation functions. Outside replication (and for other threads, and for
 * the runtime itself) they forward to glibc's __libc_* entry points; a block
 * is ours if its address is in our range, whoever frees it and whenever.
 *
 * The allocator: a bump pointer over a reserved range, committed in steps;
 * exact-size free lists (16-byte classes up to 4 KiB) and a first-fit list
 * above. Every block has a 16-byte header holding its size.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/access/cm_replica_heap.h"
#include "util/cm_log.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* glibc's own allocator, under names that stay reachable when malloc is replaced. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

#define CM_RH_HDR      16
#define CM_RH_GRAIN    16
#define CM_RH_SMALL    4096
#define CM_RH_COMMIT   ((size_t)64 << 20)
#define CM_RH_MAGIC    0x6361736868656170ul /* "cashheap" */

typedef struct cm_rh_block {
    size_t size;   /* usable bytes after the header */
    size_t check;  /* size ^ CM_RH_MAGIC: catches a foreign or corrupted pointer */
} cm_rh_hdr_t;

typedef struct cm_rh_free {
    struct cm_rh_free *next;
} cm_rh_free_t;

__thread int cm_rh_depth __attribute__((tls_model("initial-exec")));
static __thread bool cm_rh_mine __attribute__((tls_model("initial-exec")));

static struct {
    volatile bool  active;
    bool           reserved;
    char           *top;        /* next unused byte */
    char           *committed;  /* end of the read-write part */
    cm_rh_free_t   *small[CM_RH_SMALL / CM_RH_GRAIN + 1];
    cm_rh_free_t   *large;      /* first fit, in the order blocks were freed */
    uint64_t       digest;      /* of every allocation and free, in order (cm_rh_digest) */
    pthread_mutex_t lock;
} cm_rh = {.lock = PTHREAD_MUTEX_INITIALIZER};

static inline bool cm_rh_in(const void *p)
{
    return (uintptr_t)p - CM_RH_BASE < CM_RH_RESERVE;
}

bool cm_rh_owns(const void *ptr)
{
    return ptr != NULL && cm_rh_in(ptr);
}

bool cm_rh_active(void)
{
    return cm_rh.active;
}

void cm_rh_activate(void)
{
    pthread_mutex_lock(&cm_rh.lock);
    if (!cm_rh.reserved) {
        void *p = mmap((void *)CM_RH_BASE, CM_RH_RESERVE, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
        if (p != (void *)CM_RH_BASE) {
            cm_fatal(1, "cannot reserve the replica heap at %#lx (%s): the address range is "
                     "taken", (unsigned long)CM_RH_BASE,
                     p == MAP_FAILED ? strerror(errno) : "placed elsewhere");
        }
        cm_rh.reserved  = true;
        cm_rh.top       = p;
        cm_rh.committed = p;
    }
    cm_rh_mine   = true;
    cm_rh.active = true;
    pthread_mutex_unlock(&cm_rh.lock);
}

void cm_rh_deactivate(void)
{
    cm_rh.active = false;
}

/* The calling thread's allocation goes to the replica heap. */
static inline bool cm_rh_take(void)
{
    return __builtin_expect(cm_rh.active, 0) && cm_rh_mine && cm_rh_depth == 0;
}

/* One more event in the digest: the block's place and size, whether it came or went. */
static inline void cm_rh_mix(const void *p, size_t size, bool freed)
{
    uint64_t x = ((uint64_t)((uintptr_t)p - CM_RH_BASE) << 1 | freed) ^ ((uint64_t)size << 44);

    cm_rh.digest = (cm_rh.digest ^ x) * 0x100000001b3ul; /* FNV-1a's prime */
}

uint64_t cm_rh_digest(void)
{
    uint64_t d;

    pthread_mutex_lock(&cm_rh.lock);
    d = cm_rh.digest;
    pthread_mutex_unlock(&cm_rh.lock);
    return d;
}

static inline cm_rh_hdr_t *cm_rh_hdr(void *p)
{
    cm_rh_hdr_t *h = (cm_rh_hdr_t *)((char *)p - CM_RH_HDR);
    if (h->check != (h->size ^ CM_RH_MAGIC)) {
        cm_fatal(1, "free/realloc(%p): not a block of the replica heap, or its header was "
                 "overwritten", p);
    }
    return h;
}

/* Bump allocation of a block whose data is aligned to align; called locked. */
static void *cm_rh_bump(size_t size, size_t align)
{
    uintptr_t data = ((uintptr_t)cm_rh.top + CM_RH_HDR + align - 1) & ~(uintptr_t)(align - 1);
    char *end = (char *)data + size;
    cm_rh_hdr_t *h;

    if ((uintptr_t)end - CM_RH_BASE > CM_RH_RESERVE || end < (char *)data) {
        errno = ENOMEM;
        return NULL;
    }
    if (end > cm_rh.committed) {
        size_t need = (size_t)(end - cm_rh.committed);
        need = (need + CM_RH_COMMIT - 1) / CM_RH_COMMIT * CM_RH_COMMIT;
        if ((uintptr_t)cm_rh.committed + need - CM_RH_BASE > CM_RH_RESERVE) {
            need = CM_RH_BASE + CM_RH_RESERVE - (uintptr_t)cm_rh.committed;
        }
        if (mprotect(cm_rh.committed, need, PROT_READ | PROT_WRITE) != 0) {
            errno = ENOMEM;
            return NULL;
        }
        cm_rh.committed += need;
    }
    /* A gap left by alignment becomes a free block when it can hold one. */
    if (data - CM_RH_HDR - (uintptr_t)cm_rh.top >= CM_RH_HDR + CM_RH_GRAIN) {
        cm_rh_hdr_t *g = (cm_rh_hdr_t *)cm_rh.top;
        size_t gsize = data - CM_RH_HDR - (uintptr_t)cm_rh.top - CM_RH_HDR;
        cm_rh_free_t *f = (cm_rh_free_t *)(g + 1);
        g->size  = gsize;
        g->check = gsize ^ CM_RH_MAGIC;
        if (gsize <= CM_RH_SMALL) {
            f->next = cm_rh.small[gsize / CM_RH_GRAIN];
            cm_rh.small[gsize / CM_RH_GRAIN] = f;
        } else {
            f->next   = cm_rh.large;
            cm_rh.large = f;
        }
    }
    h = (cm_rh_hdr_t *)(data - CM_RH_HDR);
    h->size  = size;
    h->check = size ^ CM_RH_MAGIC;
    cm_rh.top = end;
    return (void *)data;
}

static void *cm_rh_alloc(size_t n, size_t align)
{
    size_t size = (n + CM_RH_GRAIN - 1) / CM_RH_GRAIN * CM_RH_GRAIN;
    void *p = NULL;

    if (size == 0) {
        size = CM_RH_GRAIN;
    }
    if (size < n) {
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&cm_rh.lock);
    if (align <= CM_RH_GRAIN) {
        if (size <= CM_RH_SMALL) {
            cm_rh_free_t *f = cm_rh.small[size / CM_RH_GRAIN];
            if (f != NULL) {
                cm_rh.small[size / CM_RH_GRAIN] = f->next;
                p = f;
            }
        } else {
            for (cm_rh_free_t **pp = &cm_rh.large; *pp != NULL; pp = &(*pp)->next) {
                cm_rh_hdr_t *h = (cm_rh_hdr_t *)((char *)*pp - CM_RH_HDR);
                if (h->size >= size && h->size <= 2 * size) {
                    p = *pp;
                    *pp = (*pp)->next;
                    break;
                }
            }
        }
    }
    if (p == NULL) {
        p = cm_rh_bump(size, align < CM_RH_GRAIN ? CM_RH_GRAIN : align);
    }
    if (p != NULL) {
        cm_rh_mix(p, size, false);
    }
    pthread_mutex_unlock(&cm_rh.lock);
    return p;
}

static void cm_rh_free(void *p)
{
    cm_rh_hdr_t *h = cm_rh_hdr(p);
    cm_rh_free_t *f = p;

    pthread_mutex_lock(&cm_rh.lock);
    cm_rh_mix(p, h->size, true);
    if (h->size <= CM_RH_SMALL) {
        f->next = cm_rh.small[h->size / CM_RH_GRAIN];
        cm_rh.small[h->size / CM_RH_GRAIN] = f;
    } else {
        f->next   = cm_rh.large;
        cm_rh.large = f;
    }
    pthread_mutex_unlock(&cm_rh.lock);
}

/* ---- glibc's replaceable allocation functions ----------------------------- */

void *malloc(size_t n)
{
    return cm_rh_take() ? cm_rh_alloc(n, CM_RH_GRAIN) : __libc_malloc(n);
}

void free(void *p)
{
    if (__builtin_expect(cm_rh_in(p), 0)) {
        cm_rh_free(p);
        return;
    }
    __libc_free(p);
}

void *calloc(size_t n, size_t size)
{
    size_t total;
    void *p;

    if (!cm_rh_take()) {
        return __libc_calloc(n, size);
    }
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    p = cm_rh_alloc(total, CM_RH_GRAIN);
    if (p != NULL) {
        memset(p, 0, total);
    }
    return p;
}

static size_t cm_rh_libc_usable(void *p)
{
    static size_t (*usable)(void *);
    if (usable == NULL) {
        usable = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    }
    return usable ? usable(p) : 0;
}

void *realloc(void *p, size_t n)
{
    size_t old;
    void *q;

    if (p == NULL) {
        return malloc(n);
    }
    if (!cm_rh_in(p) && !cm_rh_take()) {
        return __libc_realloc(p, n);
    }
    if (n == 0) {
        free(p);
        return NULL;
    }
    old = malloc_usable_size(p);
    if (cm_rh_in(p) && old >= n && old <= 2 * n + CM_RH_SMALL) {
        return p;
    }
    q = malloc(n);
    if (q != NULL) {
        memcpy(q, p, old < n ? old : n);
        free(p);
    }
    return q;
}

void *reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, total);
}

void *memalign(size_t align, size_t n)
{
    if (!cm_rh_take()) {
        return __libc_memalign(align, n);
    }
    if (align == 0 || (align & (align - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    return cm_rh_alloc(n, align);
}

void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    void *p;
    if (align < sizeof(void *) || (align & (align - 1)) != 0) {
        return EINVAL;
    }
    p = memalign(align, n);
    if (p == NULL) {
        return ENOMEM;
    }
    *out = p;
    return 0;
}

void *valloc(size_t n)
{
    return memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

void *pvalloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return memalign(page, (n + page - 1) / page * page);
}

size_t malloc_usable_size(void *p)
{
    if (p == NULL) {
        return 0;
    }
    return cm_rh_in(p) ? cm_rh_hdr(p)->size : cm_rh_libc_usable(p);
}
