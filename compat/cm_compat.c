/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the TreadMarks and PARMACS layers (cm_compat.h). */
#include "config.h"
#include "compat/cm_compat.h"
#include "src/access/cm_hooks_api.h"
#include "src/runtime/cm_region.h"

#include "util/cm_log.h"

#include <inttypes.h>

/* CM_LOCKS of the running job. */
static unsigned cm_compat_nlocks(void)
{
    cm_region_t r;

    if (!cm_region_get(&r)) {
        cm_fatal(1, "a TreadMarks or PARMACS call before the runtime started");
    }
    return r.nlocks;
}

int cm_compat_lock_id(int which)
{
    return (int)cm_compat_nlocks() - which;
}

unsigned cm_compat_user_locks(void)
{
    unsigned n = cm_compat_nlocks();

    return (n > CM_COMPAT_RESERVED) ? n - CM_COMPAT_RESERVED : 0;
}

int cm_compat_word_lock(const volatile void *addr)
{
    uint64_t h = ((uint64_t)(uintptr_t)addr >> 3) * 0x9e3779b97f4a7c15ull;
    return (int)cm_compat_user_locks() + (int)(h >> 54); /* 10 bits: CM_COMPAT_WORD_LOCKS */
}

void cm_compat_check_locks(const char *layer)
{
    unsigned n = cm_compat_nlocks();

    if (n <= CM_COMPAT_RESERVED) {
        cm_fatal(1, "CM_LOCKS=%u is too small for the %s layer: it reserves %d lock ids "
                 "of its own", n, layer, CM_COMPAT_RESERVED);
    }
}

void cm_compat_cond_wait(int held, int seq_lock, volatile uint64_t *seq)
{
    uint64_t seen, armed;

    if (seq_lock != held) {
        cm_lock_acquire(seq_lock);
    }
    seen  = cm_compat_load(seq);
    armed = cm_region_sleep_arm(seq_lock);
    if (seq_lock != held) {
        cm_lock_release(seq_lock);
    }
    cm_lock_release(held);
    cm_region_wait_begin("a signal of the condition variable at %x (word of lock %b)",
                         (uint64_t)(uintptr_t)seq, (uint64_t)seq_lock);
    for (;;) {
        cm_region_sleep(armed);
        cm_lock_acquire(seq_lock);
        if (cm_compat_load(seq) != seen) {
            break;
        }
        armed = cm_region_sleep_arm(seq_lock);
        cm_lock_release(seq_lock);
    }
    cm_region_wait_end();
    if (seq_lock != held) {
        cm_lock_release(seq_lock);
        cm_lock_acquire(held);
    }
}

void cm_compat_cond_signal(int seq_lock, volatile uint64_t *seq)
{
    cm_lock_acquire(seq_lock);
    cm_compat_store(seq, cm_compat_load(seq) + 1);
    cm_lock_release(seq_lock);
    cm_region_wake(seq_lock);
}

void cm_compat_loading(const volatile void *addr, size_t len)
{
    cm_hook_load((uintptr_t)addr, len);
}

void cm_compat_stored(volatile void *addr, size_t len)
{
    cm_hook_store((uintptr_t)addr, len);
}

uint64_t cm_compat_load(const volatile void *word)
{
    cm_compat_loading(word, sizeof(uint64_t));
    return *(const volatile uint64_t *)word;
}

void cm_compat_store(volatile void *word, uint64_t value)
{
    cm_compat_loading(word, sizeof(uint64_t)); /* line fills: the rest of the line current first */
    *(volatile uint64_t *)word = value;
    cm_compat_stored(word, sizeof(uint64_t));
}
