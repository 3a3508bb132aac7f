/* SPDX-License-Identifier: BSD-3-Clause */
/* A fake one-sided layer: ranks as threads of one process (fake_rma.h). */
#define _GNU_SOURCE
#include "config.h"
#include "tests/unit/fake_rma.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FAKE_MAX_PROCS 64

struct cm_rma {
    fake_world_t *w;
    int          rank;
    cm_rma_am_handler_t am_fn[CM_RMA_AM_MAX_ID];   /* handlers, run by the sender (at once) */
    void         *am_arg[CM_RMA_AM_MAX_ID];
    uint64_t     issued;   /* adds not waited for, counted as UCX counts them (cm_rma_issued) */
    uint64_t     ordered;  /* ... of which a fence or a flush of all came after */
};

struct fake_world {
    int           nprocs;
    size_t        size;
    char          *base[FAKE_MAX_PROCS];
    struct cm_rma rma[FAKE_MAX_PROCS];
    bool          mapped;   /* peers' copies reachable by plain loads and stores */
    fake_counts_t counts;
};

fake_world_t *fake_world_create(int nprocs, size_t size)
{
    fake_world_t *w = calloc(1, sizeof(*w));

    if (w == NULL || nprocs < 1 || nprocs > FAKE_MAX_PROCS) {
        abort();
    }
    w->nprocs = nprocs;
    w->size   = size;
    for (int r = 0; r < nprocs; r++) {
        /* Shared: a mapped world aliases ranges of a copy elsewhere (cm_rma_alias). */
        w->base[r] = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (w->base[r] == MAP_FAILED) {
            abort();
        }
        w->rma[r] = (struct cm_rma){.w = w, .rank = r};
    }
    return w;
}

void fake_world_destroy(fake_world_t *w)
{
    for (int r = 0; r < w->nprocs; r++) {
        munmap(w->base[r], w->size);
    }
    free(w);
}

void fake_world_map_peers(fake_world_t *w, bool mapped)
{
    w->mapped = mapped;
}

cm_rma_t *fake_rma(fake_world_t *w, int r)
{
    return &w->rma[r];
}

char *fake_base(fake_world_t *w, int r)
{
    return w->base[r];
}

void fake_counts(fake_world_t *w, fake_counts_t *c)
{
    c->puts    = __atomic_load_n(&w->counts.puts, __ATOMIC_SEQ_CST);
    c->gets    = __atomic_load_n(&w->counts.gets, __ATOMIC_SEQ_CST);
    c->atomics = __atomic_load_n(&w->counts.atomics, __ATOMIC_SEQ_CST);
    c->flushes = __atomic_load_n(&w->counts.flushes, __ATOMIC_SEQ_CST);
    c->fences  = __atomic_load_n(&w->counts.fences, __ATOMIC_SEQ_CST);
    c->msgs    = __atomic_load_n(&w->counts.msgs, __ATOMIC_SEQ_CST);
}

typedef struct {
    fake_world_t *w;
    int          r;
    void         (*fn)(int r, void *arg);
    void         *arg;
} fake_thread_t;

static void *fake_thread(void *p)
{
    fake_thread_t *t = p;

    t->fn(t->r, t->arg);
    return NULL;
}

void fake_run(fake_world_t *w, void (*fn)(int r, void *arg), void *arg)
{
    pthread_t th[FAKE_MAX_PROCS];
    fake_thread_t t[FAKE_MAX_PROCS];

    for (int r = 0; r < w->nprocs; r++) {
        t[r] = (fake_thread_t){w, r, fn, arg};
        if (pthread_create(&th[r], NULL, fake_thread, &t[r]) != 0) {
            abort();
        }
    }
    for (int r = 0; r < w->nprocs; r++) {
        pthread_join(th[r], NULL);
    }
}

/* Rank pe's copy of [addr, addr + len), addr being in the caller's copy. */
static char *fake_at(cm_rma_t *rma, int pe, const void *addr, size_t len)
{
    fake_world_t *w = rma->w;
    uintptr_t off = (uintptr_t)addr - (uintptr_t)w->base[rma->rank];

    if (pe < 0 || pe >= w->nprocs || off > w->size || len > w->size - off) {
        fprintf(stderr, "fake rma: rank %d: %zu bytes at %p on rank %d are outside the area\n",
                rma->rank, len, addr, pe);
        abort();
    }
    return w->base[pe] + off;
}

static void fake_count(uint64_t *c)
{
    __atomic_fetch_add(c, 1, __ATOMIC_SEQ_CST);
}

int cm_rma_rank(const cm_rma_t *rma)
{
    return rma->rank;
}

int cm_rma_nprocs(const cm_rma_t *rma)
{
    return rma->w->nprocs;
}

/* Unless the world is mapped, every peer is reached through operations only. */
void *cm_rma_ptr(cm_rma_t *rma, int pe, const void *addr)
{
    return rma->w->mapped ? fake_at(rma, pe, addr, 1) : NULL;
}

void *cm_rma_store_ptr(cm_rma_t *rma, int pe, const void *addr)
{
    return cm_rma_ptr(rma, pe, addr);
}

bool cm_rma_all_mapped(const cm_rma_t *rma)
{
    return rma->w->mapped;
}

/* As the real layer's: the same pages as pe's copy, at dst (mremap of a shared mapping with
 * old size 0 duplicates it). */
cm_status_t cm_rma_alias(cm_rma_t *rma, int pe, const void *addr, void *dst, size_t len)
{
    void *p;

    if (!rma->w->mapped) {
        return CM_ERR_UNSUPPORTED;
    }
    p = (void *)syscall(SYS_mremap, fake_at(rma, pe, addr, len), (size_t)0, len,
                        MREMAP_MAYMOVE | MREMAP_FIXED, dst);
    return (p == dst) ? CM_OK : CM_ERR_NO_MEMORY;
}

void cm_rma_describe_peer(cm_rma_t *rma, int pe, char *buf, size_t len)
{
    snprintf(buf, len, "fake %s", (rma->w->mapped || pe == rma->rank) ? "mapped" : "remote");
}

/* A put or get: counted, then copied at once, ordered with everything around it. */
static cm_status_t fake_copy(uint64_t *count, void *dst, const void *src, size_t len)
{
    fake_count(count);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    memcpy(dst, src, len);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return CM_OK;
}

cm_status_t cm_rma_put(cm_rma_t *rma, int pe, void *addr, const void *src, size_t len)
{
    return fake_copy(&rma->w->counts.puts, fake_at(rma, pe, addr, len), src, len);
}

cm_status_t cm_rma_put_nbi(cm_rma_t *rma, int pe, void *addr, const void *src, size_t len)
{
    return cm_rma_put(rma, pe, addr, src, len);
}

cm_status_t cm_rma_put_u64_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value)
{
    fake_count(&rma->w->counts.puts);
    __atomic_store_n((uint64_t *)(void *)fake_at(rma, pe, addr, 8), value, __ATOMIC_SEQ_CST);
    return CM_OK;
}

cm_status_t cm_rma_signal_u64(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value,
                              uint64_t buf[2])
{
    (void)buf;
    return cm_rma_put_u64_nbi(rma, pe, addr, value);
}

cm_status_t cm_rma_get(cm_rma_t *rma, int pe, void *dst, const void *addr, size_t len)
{
    return fake_copy(&rma->w->counts.gets, dst, fake_at(rma, pe, addr, len), len);
}

cm_status_t cm_rma_get_nbi(cm_rma_t *rma, int pe, void *dst, const void *addr, size_t len)
{
    return cm_rma_get(rma, pe, dst, addr, len);
}

static uint64_t *fake_word(cm_rma_t *rma, int pe, uint64_t *addr)
{
    fake_count(&rma->w->counts.atomics);
    return (uint64_t *)(void *)fake_at(rma, pe, addr, 8);
}

cm_status_t cm_rma_swap(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old)
{
    *old = __atomic_exchange_n(fake_word(rma, pe, addr), value, __ATOMIC_SEQ_CST);
    return CM_OK;
}

cm_status_t cm_rma_cswap(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t compare, uint64_t value,
                         uint64_t *old)
{
    uint64_t expected = compare;

    __atomic_compare_exchange_n(fake_word(rma, pe, addr), &expected, value, false,
                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    *old = expected;
    return CM_OK;
}

cm_status_t cm_rma_fadd(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old)
{
    *old = __atomic_fetch_add(fake_word(rma, pe, addr), value, __ATOMIC_SEQ_CST);
    return CM_OK;
}

cm_status_t cm_rma_add_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value)
{
    __atomic_fetch_add(fake_word(rma, pe, addr), value, __ATOMIC_SEQ_CST);
    rma->issued++; /* landed at once here, but a caller must not rely on it */
    return CM_OK;
}

void cm_rma_hold_begin(cm_rma_t *rma)
{
    (void)rma; /* no progress thread here */
}

void cm_rma_hold_end(cm_rma_t *rma)
{
    (void)rma;
}

uint64_t cm_rma_issued(cm_rma_t *rma)
{
    return rma->issued;
}

bool cm_rma_ordered(cm_rma_t *rma, uint64_t mark)
{
    return rma->ordered >= mark;
}

cm_status_t cm_rma_fadd_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old)
{
    *old = __atomic_fetch_add(fake_word(rma, pe, addr), value, __ATOMIC_SEQ_CST);
    return CM_OK;
}

cm_status_t cm_rma_swap_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value, uint64_t *old)
{
    return cm_rma_swap(rma, pe, addr, value, old);
}

cm_status_t cm_rma_cswap_nbi(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t compare,
                             uint64_t value, uint64_t *old)
{
    return cm_rma_cswap(rma, pe, addr, compare, value, old);
}

cm_status_t cm_rma_get_fetch(cm_rma_t *rma, int pe, void *dst, const void *addr, size_t len,
                             cm_rma_fetch_t *f)
{
    memset(f, 0, sizeof(*f));
    return cm_rma_get(rma, pe, dst, addr, len);
}

cm_status_t cm_rma_swap_fetch(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value,
                              uint64_t *old, cm_rma_fetch_t *f)
{
    memset(f, 0, sizeof(*f));
    return cm_rma_swap(rma, pe, addr, value, old);
}

cm_status_t cm_rma_fadd_fetch(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t value,
                              uint64_t *old, cm_rma_fetch_t *f)
{
    memset(f, 0, sizeof(*f));
    return cm_rma_fadd(rma, pe, addr, value, old);
}

cm_status_t cm_rma_cswap_fetch(cm_rma_t *rma, int pe, uint64_t *addr, uint64_t compare,
                               uint64_t value, uint64_t *old, cm_rma_fetch_t *f)
{
    memset(f, 0, sizeof(*f));
    return cm_rma_cswap(rma, pe, addr, compare, value, old);
}

cm_status_t cm_rma_fetch_wait(cm_rma_t *rma, cm_rma_fetch_t *f)
{
    (void)rma, (void)f;
    return CM_OK;
}

cm_status_t cm_rma_fence(cm_rma_t *rma)
{
    rma->ordered = rma->issued;
    fake_count(&rma->w->counts.fences);
    return CM_OK;
}

cm_status_t cm_rma_flush(cm_rma_t *rma, int pe)
{
    (void)pe;
    fake_count(&rma->w->counts.flushes);
    return CM_OK;
}

cm_status_t cm_rma_flush_all(cm_rma_t *rma)
{
    rma->ordered = rma->issued;
    fake_count(&rma->w->counts.flushes);
    return CM_OK;
}

unsigned cm_rma_progress(cm_rma_t *rma)
{
    (void)rma;
    return 0;
}

static bool fake_holds(uint64_t v, cm_rma_cmp_t cmp, uint64_t value)
{
    switch (cmp) {
    case CM_CMP_EQ: return v == value;
    case CM_CMP_NE: return v != value;
    case CM_CMP_GT: return v > value;
    case CM_CMP_GE: return v >= value;
    case CM_CMP_LT: return v < value;
    case CM_CMP_LE: return v <= value;
    }
    return false;
}

/* Two cores run four ranks: a waiter yields to the thread it waits for. */
void cm_rma_wait_u64(cm_rma_t *rma, volatile uint64_t *addr, cm_rma_cmp_t cmp, uint64_t value,
                     const cm_rma_why_t *why)
{
    (void)rma, (void)why;
    while (!fake_holds(__atomic_load_n(addr, __ATOMIC_SEQ_CST), cmp, value)) {
        sched_yield();
    }
}

void cm_rma_wait_until(cm_rma_t *rma, cm_rma_ready_fn_t ready, void *arg, const cm_rma_why_t *why)
{
    (void)rma, (void)why;
    while (!ready(arg)) {
        sched_yield();
    }
}

/* Active messages are delivered at once: the sender runs the target's handler (as a UCX
 * handler, it must be thread-safe). A message to a rank with no handler for it fails. The
 * layer's own barrier is not faked: a test that reaches it fails here, said why. */
cm_status_t cm_rma_am_set_handler(cm_rma_t *rma, unsigned id, cm_rma_am_handler_t fn, void *arg,
                                  const char *name)
{
    (void)name;
    if (id >= CM_RMA_AM_MAX_ID) {
        return CM_ERR_INVALID;
    }
    rma->am_arg[id] = arg;
    __atomic_store_n(&rma->am_fn[id], fn, __ATOMIC_RELEASE);
    return CM_OK;
}

/* No delays are injected here: a request is a message like another. */
cm_status_t cm_rma_am_set_request(cm_rma_t *rma, unsigned id)
{
    return (id < CM_RMA_AM_MAX_ID && rma->am_fn[id] != NULL) ? CM_OK : CM_ERR_INVALID;
}

cm_status_t cm_rma_am_post(cm_rma_t *rma, int pe, unsigned id, const void *data, size_t len)
{
    struct cm_rma *to = &rma->w->rma[pe];
    cm_rma_am_handler_t fn = id < CM_RMA_AM_MAX_ID ? __atomic_load_n(&to->am_fn[id], __ATOMIC_ACQUIRE) : NULL;

    if (fn == NULL) {
        fprintf(stderr, "fake rma: a message %u to rank %d, which has no handler for it\n", id, pe);
        return CM_ERR_INVALID;
    }
    fake_count(&rma->w->counts.msgs);
    fn(to->am_arg[id], rma->rank, data, len);
    return CM_OK;
}

cm_status_t cm_rma_barrier(cm_rma_t *rma)
{
    (void)rma;
    fprintf(stderr, "fake rma: the layer's barrier is not faked (locks/cm_barrier.c is)\n");
    return CM_ERR_UNSUPPORTED;
}

bool cm_rma_peer_tcp_only(cm_rma_t *rma, int pe, char *buf, size_t len)
{
    (void)rma, (void)pe;
    snprintf(buf, len, "fake");
    return false;
}

void cm_rma_wait_events(cm_rma_t *rma, cm_rma_ready_fn_t ready, void *arg, const cm_rma_why_t *why)
{
    cm_rma_wait_until(rma, ready, arg, why);
}

/* Stuck-wait frames are not watched here. */
void cm_rma_why_push(cm_rma_t *rma, const cm_rma_why_t *why)
{
    (void)rma, (void)why;
}

void cm_rma_why_pop(cm_rma_t *rma)
{
    (void)rma;
}
