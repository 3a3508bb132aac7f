/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "locks/cm_sleep.h"
#include "util/cm_log.h"

#include <stdlib.h>

size_t cm_sleep_map_bytes(uint32_t locks_per_proc, uint32_t nprocs)
{
    return (size_t)locks_per_proc * ((nprocs + 63) / 64) * sizeof(uint64_t);
}

cm_status_t cm_sleep_init(cm_sleep_t *s, cm_rma_t *rma, char *maps, uint64_t *nap)
{
    uint32_t n = (uint32_t)cm_rma_nprocs(rma);

    *s = (cm_sleep_t){.rma = rma, .maps = maps, .nap = nap, .words = (n + 63) / 64,
                      .armed = CM_SLEEP_NONE};
    s->map_buf = calloc(s->words, sizeof(uint64_t));
    if (s->map_buf == NULL) {
        cm_error("sleep maps: out of memory for %u words", s->words);
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

void cm_sleep_fini(cm_sleep_t *s)
{
    free(s->map_buf);
    s->map_buf = NULL;
}

/* Lock l's map at its home. */
static uint64_t *cm_sleep_map(cm_sleep_t *s, uint32_t lock, int *home)
{
    uint32_t n = (uint32_t)cm_rma_nprocs(s->rma);

    *home = (int)(lock % n);
    return (uint64_t *)(void *)(s->maps + (size_t)(lock / n) * s->words * sizeof(uint64_t));
}

/* Adds delta (our bit, or its negation) to our word of lock's map, not waited for. */
static cm_status_t cm_sleep_add(cm_sleep_t *s, uint32_t lock, uint64_t delta)
{
    int me = cm_rma_rank(s->rma), home;
    uint64_t *map = cm_sleep_map(s, lock, &home);

    return cm_rma_add_nbi(s->rma, home, &map[me / 64], delta);
}

cm_status_t cm_sleep_arm(cm_sleep_t *s, uint32_t lock, uint64_t *seen)
{
    uint64_t bit = 1ull << (cm_rma_rank(s->rma) % 64);
    cm_status_t status;

    /* Before the bit: a wake that lands after this read is never lost. */
    *seen = __atomic_load_n(s->nap, __ATOMIC_ACQUIRE);
    if (s->armed == lock) {
        return CM_OK;
    }
    if (s->armed != CM_SLEEP_NONE && (status = cm_sleep_add(s, s->armed, -bit)) != CM_OK) {
        return status;
    }
    s->armed = CM_SLEEP_NONE;
    if ((status = cm_sleep_add(s, lock, bit)) != CM_OK ||
        (status = cm_rma_flush_all(s->rma)) != CM_OK) {
        return status;
    }
    s->armed = lock;
    return CM_OK;
}

void cm_sleep_wait(cm_sleep_t *s, uint64_t seen, const cm_rma_why_t *why)
{
    s->sleeps++;
    cm_rma_wait_u64(s->rma, s->nap, CM_CMP_NE, seen, why);
}

cm_status_t cm_sleep_wake(cm_sleep_t *s, uint32_t lock)
{
    int me = cm_rma_rank(s->rma), n = cm_rma_nprocs(s->rma), home;
    uint64_t *map = cm_sleep_map(s, lock, &home);
    cm_status_t status;

    status = cm_rma_get(s->rma, home, s->map_buf, map, s->words * sizeof(uint64_t));
    if (status != CM_OK) {
        return status;
    }
    for (int pe = 0; pe < n; pe++) {
        if (pe == me || !(s->map_buf[pe / 64] >> (pe % 64) & 1)) {
            continue;
        }
        /* Unique: our rank and a serial, so never the value a sleeper saw before. */
        s->serial++;
        status = cm_rma_put_u64_nbi(s->rma, pe, s->nap,
                                    ((uint64_t)(me + 1) << 40) | (s->serial & ((1ull << 40) - 1)));
        if (status != CM_OK) {
            return status;
        }
        s->wakes++;
    }
    return CM_OK;
}
