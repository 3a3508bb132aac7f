/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Delay injection for communication-parameter studies (CM_NET_LATENCY,
 * CM_NET_BANDWIDTH, CM_NET_OVERHEAD). A LogGP-like model of the issuing
 * process's network interface:
 *
 *   overhead  the issuer's CPU is busy for `overhead` per operation;
 *   bandwidth bytes leave through one link at `ns_per_byte`, one operation
 *             after the other (transfers queue behind each other);
 *   latency   added once per operation (a put's remote completion, a get or
 *             an atomic are all one round trip).
 *
 * The model only computes times; rma/ realizes them by really waiting in the
 * issuing process, so what an application sees is real elapsed time.
 */
#ifndef CM_RMA_DELAY_H
#define CM_RMA_DELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t latency_ns;
    uint64_t overhead_ns;
    double   ns_per_byte;   /* 0: no bandwidth cap */
    bool     enabled;       /* any of the above is non-zero */
    uint64_t link_free_ns;  /* when the issuer's link finishes its queued bytes */
} cm_rma_delay_t;

/* bandwidth in bytes/s, 0 = unlimited. */
void cm_rma_delay_init(cm_rma_delay_t *d, uint64_t latency_ns, double bandwidth, uint64_t overhead_ns);

/*
 * Charges one operation of `bytes` issued at `now`. Returns the time at which
 * it may be reported complete; *cpu_until is when the issuer's CPU is free
 * again (now + overhead).
 */
static inline uint64_t cm_rma_delay_charge(cm_rma_delay_t *d, uint64_t now, size_t bytes,
                                           uint64_t *cpu_until)
{
    uint64_t start, end, busy = __atomic_load_n(&d->link_free_ns, __ATOMIC_RELAXED);

    *cpu_until = now + d->overhead_ns;
    /* Two threads may issue (the application's and an offload thread): the link's queue is
     * updated atomically, so neither's bytes are lost from it. */
    do {
        start = (busy > *cpu_until) ? busy : *cpu_until;
        end   = start + (uint64_t)((double)bytes * d->ns_per_byte + 0.5);
    } while (!__atomic_compare_exchange_n(&d->link_free_ns, &busy, end, false, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return end + d->latency_ns;
}

#endif
