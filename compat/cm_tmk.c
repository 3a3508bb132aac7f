/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TreadMarks interface (include/tmk.h) over the runtime. Allocation is
 * non-collective (cm_malloc_local), locks and barriers are the protocol's.
 *
 * Tmk_distribute: the original sent the object to every process and waited
 * for their replies. Here it is appended, under a reserved lock, to a log in
 * shared memory; every process applies the entries it has not seen at its
 * next synchronization, which carries release consistency like any other
 * shared data. A global's address differs between processes (ASLR), so an
 * entry names the loaded object and the offset inside it.
 */
#define _GNU_SOURCE
#include "config.h"
#include "tmk.h"
#include "compat/cm_compat.h"
#include "util/cm_log.h"
#include "src/runtime/cm_region.h"

#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TMK_LOG_BYTES  (1u << 20)
#define TMK_COND_SLOTS 4096 /* (lock, cond) pairs hash here; a collision only wakes a waiter early */

struct Tmk tmk_;

typedef struct {
    uint64_t used;                      /* bytes of entries in data */
    uint64_t cond_seq[TMK_COND_SLOTS];  /* condition-variable sequence numbers */
    char     data[];
} tmk_shared_t;

typedef struct {
    uint32_t len;       /* bytes of the object */
    uint32_t name_len;  /* bytes of the object file's name, with its NUL */
    uint64_t offset;    /* of the object inside its loaded file */
    int32_t  from;
    uint32_t pad;
} tmk_entry_t;

static tmk_shared_t *tmk_sh;
static uint64_t tmk_seen;
static int tmk_ctl_lock;

static void tmk_require(const char *fn)
{
    if (tmk_sh == NULL) {
        cm_fatal(1, "%s called before Tmk_startup", fn);
    }
}

static uint64_t tmk_round8(uint64_t x)
{
    return (x + 7) & ~(uint64_t)7;
}

/* Finds the loaded object whose writable segment holds [addr, addr+len). */
typedef struct {
    uintptr_t addr;
    size_t len;
    const char *name;   /* in: the object to find by name (apply); out: its name (distribute) */
    uintptr_t base;
    int found;
} tmk_find_t;

static int tmk_find_addr(struct dl_phdr_info *info, size_t size, void *arg)
{
    tmk_find_t *f = arg;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && f->addr >= lo && f->addr + f->len <= hi) {
            f->name  = info->dlpi_name ? info->dlpi_name : "";
            f->base  = info->dlpi_addr;
            f->found = 1;
            return 1;
        }
    }
    return 0;
}

static int tmk_find_name(struct dl_phdr_info *info, size_t size, void *arg)
{
    tmk_find_t *f = arg;
    (void)size;
    if (strcmp(info->dlpi_name ? info->dlpi_name : "", f->name) == 0) {
        f->base  = info->dlpi_addr;
        f->found = 1;
        return 1;
    }
    return 0;
}

/* Applies the distributed objects this process has not seen yet; the caller holds the log's lock. */
static void tmk_apply_locked(void)
{
    uint64_t used = cm_compat_load(&tmk_sh->used);

    if (used > tmk_seen) {
        cm_compat_loading(tmk_sh->data + tmk_seen, used - tmk_seen);
    }
    while (tmk_seen < used) {
        tmk_entry_t e;
        const char *name;
        tmk_find_t f = {0};
        memcpy(&e, tmk_sh->data + tmk_seen, sizeof(e));
        name = tmk_sh->data + tmk_seen + sizeof(e);
        if (e.from != cm_rank()) {
            f.name = name;
            dl_iterate_phdr(tmk_find_name, &f);
            if (!f.found) {
                cm_fatal(1, "Tmk_distribute: object file '%s' of process %d is not loaded here",
                         name, e.from);
            }
            memcpy((void *)(f.base + e.offset), name + e.name_len, e.len);
        }
        tmk_seen += tmk_round8(sizeof(e) + e.name_len + e.len);
    }
}

static void tmk_apply(void)
{
    if (cm_compat_load(&tmk_sh->used) == tmk_seen) {
        return; /* a racy but harmless peek: a stale value is caught at the next sync */
    }
    cm_lock_acquire(tmk_ctl_lock);
    tmk_apply_locked();
    cm_lock_release(tmk_ctl_lock);
}

void Tmk_startup(int argc, char *const *argv)
{
    char **av = (char **)argv;
    cm_region_t r;

    if (tmk_sh != NULL) {
        return;
    }
    cm_init(&argc, &av);
    if (!cm_region_get(&r)) {
        cm_fatal(1, "Tmk_startup: the runtime did not start");
    }
    tmk_.proc_id   = (unsigned)cm_rank();
    tmk_.nprocs    = (unsigned)cm_nprocs();
    tmk_.page_size = (unsigned)r.page_size;
    tmk_.npages    = (unsigned)r.npages;
    cm_compat_check_locks("TreadMarks");
    tmk_ctl_lock   = cm_compat_lock_id(CM_COMPAT_LOCK_CTL);
    tmk_sh         = cm_malloc(sizeof(tmk_shared_t) + TMK_LOG_BYTES);
}

void Tmk_exit(int status)
{
    tmk_require("Tmk_exit");
    cm_finalize();
    exit(status);
}

void Tmk_barrier(unsigned barrier_id)
{
    (void)barrier_id;
    tmk_require("Tmk_barrier");
    cm_barrier();
    tmk_apply();
}

static void tmk_check_lock(unsigned lock_id, const char *fn)
{
    if (lock_id >= cm_compat_user_locks()) {
        cm_fatal(1, "%s(%u): lock ids are below %u (raise CM_LOCKS)", fn, lock_id,
                 cm_compat_user_locks());
    }
}

void Tmk_lock_acquire(unsigned lock_id)
{
    tmk_require("Tmk_lock_acquire");
    tmk_check_lock(lock_id, "Tmk_lock_acquire");
    cm_lock_acquire((int)lock_id);
    tmk_apply();
}

void Tmk_lock_release(unsigned lock_id)
{
    tmk_require("Tmk_lock_release");
    tmk_check_lock(lock_id, "Tmk_lock_release");
    cm_lock_release((int)lock_id);
}

static volatile uint64_t *tmk_cond_seq(unsigned lock_id, unsigned cond_id)
{
    return &tmk_sh->cond_seq[(lock_id * TMK_NCONDS + cond_id) % TMK_COND_SLOTS];
}

/* The sequence number of (lock, cond) is guarded by the lock itself, which the caller holds. */
void Tmk_lock_cond_wait(unsigned lock_id, unsigned cond_id)
{
    tmk_require("Tmk_lock_cond_wait");
    tmk_check_lock(lock_id, "Tmk_lock_cond_wait");
    cm_compat_cond_wait((int)lock_id, (int)lock_id, tmk_cond_seq(lock_id, cond_id));
    tmk_apply();
}

void Tmk_lock_cond_signal(unsigned lock_id, unsigned cond_id)
{
    tmk_require("Tmk_lock_cond_signal");
    tmk_check_lock(lock_id, "Tmk_lock_cond_signal");
    volatile uint64_t *seq = tmk_cond_seq(lock_id, cond_id);
    cm_compat_store(seq, cm_compat_load(seq) + 1);
    /* Holding the lock: a sleeper that armed released it before we took it, so its bit is
     * read here; woken now, it queues for the lock and finds the change once we release. */
    cm_region_wake((int)lock_id);
}

void Tmk_lock_cond_broadcast(unsigned lock_id, unsigned cond_id)
{
    Tmk_lock_cond_signal(lock_id, cond_id); /* every waiter re-checks: signal wakes them all */
}

void *Tmk_malloc(unsigned size)
{
    tmk_require("Tmk_malloc");
    return cm_malloc_local(size);
}

void Tmk_free(void *ptr)
{
    tmk_require("Tmk_free");
    cm_free_local(ptr);
}

void *Tmk_sbrk(unsigned incr)
{
    tmk_require("Tmk_sbrk");
    return cm_malloc_local(incr);
}

void Tmk_distribute(const void *ptr, int size)
{
    uintptr_t a = (uintptr_t)ptr;
    cm_region_t r;
    tmk_find_t f = {.addr = (uintptr_t)ptr, .len = (size_t)size};
    tmk_entry_t e;
    uint64_t need, used;
    size_t name_len;

    tmk_require("Tmk_distribute");
    if (size <= 0 || !cm_region_get(&r)) {
        return;
    }
    if (a >= (uintptr_t)r.base && a < (uintptr_t)r.base + r.size) {
        return; /* shared memory already is the same object everywhere */
    }
    dl_iterate_phdr(tmk_find_addr, &f);
    if (!f.found) {
        cm_fatal(1, "Tmk_distribute(%p, %d): not a global variable of the program (stack and "
                 "malloc memory differ between processes)", ptr, size);
    }
    name_len = strlen(f.name) + 1;
    e.len      = (uint32_t)size;
    e.name_len = (uint32_t)name_len;
    e.offset   = a - f.base;
    e.from     = cm_rank();
    e.pad      = 0;
    need       = tmk_round8(sizeof(e) + name_len + (uint64_t)size);

    cm_lock_acquire(tmk_ctl_lock);
    tmk_apply_locked(); /* entries before ours first, so that ours is the newest here too */
    used = cm_compat_load(&tmk_sh->used);
    if (used + need > TMK_LOG_BYTES) {
        cm_fatal(1, "Tmk_distribute: more than %u bytes distributed in all", TMK_LOG_BYTES);
    }
    cm_compat_loading(tmk_sh->data + used, need); /* line fills: lines written in part */
    memcpy(tmk_sh->data + used, &e, sizeof(e));
    memcpy(tmk_sh->data + used + sizeof(e), f.name, name_len);
    memcpy(tmk_sh->data + used + sizeof(e) + name_len, ptr, (size_t)size);
    cm_compat_stored(tmk_sh->data + used, need);
    cm_compat_store(&tmk_sh->used, used + need);
    tmk_seen = used + need;
    cm_lock_release(tmk_ctl_lock);
}
