/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "locks/cm_sleep.h"

size_t cm_sleep_map_bytes(uint32_t nprocs)
{
    return (size_t)CM_SLEEP_SLOTS * ((nprocs + 63) / 64) * sizeof(uint64_t);
}

/* A wake: runs in whichever thread progresses the worker. */
static void cm_sleep_on_wake(void *arg, int src, const void *data, size_t len)
{
    cm_sleep_t *s = arg;

    (void)src, (void)data, (void)len;
    __atomic_fetch_add(&s->nap, 1, __ATOMIC_RELEASE);
}

cm_status_t cm_sleep_init(cm_sleep_t *s, cm_rma_t *rma, uint64_t *maps)
{
    uint32_t n = (uint32_t)cm_rma_nprocs(rma);

    *s = (cm_sleep_t){.rma = rma, .maps = maps, .words = (n + 63) / 64,
                      .armed = CM_SLEEP_NONE};
    return cm_rma_am_set_handler(rma, CM_SLEEP_AM_WAKE, cm_sleep_on_wake, s,
                                 "a wake of a sleeper on a lock's word");
}

/* Adds delta (our bit, or its negation) to our word of slot's map in every other process,
 * not waited for. */
static cm_status_t cm_sleep_add(cm_sleep_t *s, uint32_t slot, uint64_t delta)
{
    int me = cm_rma_rank(s->rma), n = cm_rma_nprocs(s->rma);
    uint64_t *word = &s->maps[(size_t)slot * s->words + (uint32_t)me / 64];
    cm_status_t status;

    for (int pe = 0; pe < n; pe++) {
        if (pe != me && (status = cm_rma_add_nbi(s->rma, pe, word, delta)) != CM_OK) {
            return status;
        }
    }
    return CM_OK;
}

cm_status_t cm_sleep_arm(cm_sleep_t *s, uint32_t lock, uint64_t *seen)
{
    uint64_t bit = 1ull << (cm_rma_rank(s->rma) % 64);
    uint32_t slot = lock % CM_SLEEP_SLOTS;
    cm_status_t status;

    /* Before the bits: a wake that lands after this read is never lost. */
    *seen = __atomic_load_n(&s->nap, __ATOMIC_ACQUIRE);
    if (s->armed == slot) {
        return CM_OK;
    }
    if (s->armed != CM_SLEEP_NONE && (status = cm_sleep_add(s, s->armed, -bit)) != CM_OK) {
        return status;
    }
    s->armed = CM_SLEEP_NONE;
    if ((status = cm_sleep_add(s, slot, bit)) != CM_OK ||
        (status = cm_rma_flush_all(s->rma)) != CM_OK) {
        return status;
    }
    s->armed = slot;
    return CM_OK;
}

typedef struct {
    cm_sleep_t *s;
    uint64_t   seen;
} cm_sleep_nap_t;

static bool cm_sleep_woken(void *arg)
{
    const cm_sleep_nap_t *n = arg;

    return __atomic_load_n(&n->s->nap, __ATOMIC_ACQUIRE) != n->seen;
}

void cm_sleep_wait(cm_sleep_t *s, uint64_t seen, const cm_rma_why_t *why)
{
    cm_sleep_nap_t n = {s, seen};

    s->sleeps++;
    cm_rma_wait_events(s->rma, cm_sleep_woken, &n, why);
}

cm_status_t cm_sleep_wake(cm_sleep_t *s, uint32_t lock)
{
    int me = cm_rma_rank(s->rma);
    const uint64_t *map = &s->maps[(size_t)(lock % CM_SLEEP_SLOTS) * s->words];
    cm_status_t status;

    for (uint32_t w = 0; w < s->words; w++) {
        uint64_t bits = __atomic_load_n(&map[w], __ATOMIC_ACQUIRE);

        while (bits != 0) {
            int pe = (int)(w * 64) + __builtin_ctzll(bits);

            bits &= bits - 1;
            if (pe == me) {
                continue;
            }
            status = cm_rma_am_post(s->rma, pe, CM_SLEEP_AM_WAKE, &lock, sizeof(lock));
            if (status != CM_OK) {
                return status;
            }
            s->wakes++;
        }
    }
    return CM_OK;
}
