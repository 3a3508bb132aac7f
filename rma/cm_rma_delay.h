/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Delay injection for communication-parameter studies (CM_NET_*): a model of
 * the issuing process's network interface after LogGP and the parameters of
 * Bilas & Singh's study (../shared/seeds/bilas-singh-comm-params.txt):
 *
 *   overhead   the issuer's CPU is busy for `overhead` per operation or message;
 *   occupancy  the interface is busy for `occupancy` per packet of `packet`
 *              bytes (at least one per operation), one packet after the other;
 *   bandwidth  bytes leave through one link at `ns_per_byte`; occupancy and
 *              bytes share the interface's one queue, so transfers queue
 *              behind each other;
 *   latency    a round trip: added once per one-sided operation (a put's
 *              remote completion, a get or an atomic), half of it to a one-way
 *              message (a request and its reply make one latency, as a get);
 *   interrupt  the time from a request's arrival to the start of its handler,
 *              spent by the target's CPU: charged where a CPU at the target
 *              runs the request (rma/cm_rma_am.c, emulated one-sided
 *              operations), nowhere else.
 *
 * The model only computes times; rma/ realizes them by really waiting, so what
 * an application sees is real elapsed time.
 */
#ifndef CM_RMA_DELAY_H
#define CM_RMA_DELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The settings (CM_NET_LATENCY, _BANDWIDTH, _OVERHEAD, _OCCUPANCY, _PACKET, _INTERRUPT). */
typedef struct {
    uint64_t latency_ns;
    double   bandwidth;    /* bytes/s, 0 = unlimited */
    uint64_t overhead_ns;
    uint64_t occupancy_ns; /* per packet */
    size_t   packet;       /* bytes per packet; 0: 4096 */
    uint64_t interrupt_ns;
} cm_rma_delay_cfg_t;

typedef struct {
    uint64_t latency_ns;
    uint64_t overhead_ns;
    uint64_t occupancy_ns;
    uint64_t interrupt_ns;
    size_t   packet;
    double   ns_per_byte;   /* 0: no bandwidth cap */
    bool     enabled;       /* any of the above is non-zero */
    uint64_t link_free_ns;  /* when the issuer's interface finishes its queued packets */
} cm_rma_delay_t;

void cm_rma_delay_init(cm_rma_delay_t *d, const cm_rma_delay_cfg_t *cfg);

/* Is any delay configured (whether or not paused: `enabled` says that)? */
static inline bool cm_rma_delay_any(const cm_rma_delay_t *d)
{
    return d->latency_ns != 0 || d->overhead_ns != 0 || d->ns_per_byte > 0 ||
           d->occupancy_ns != 0 || d->interrupt_ns != 0;
}

/* The interface's time for one operation of `bytes`: its packets' occupancy and its bytes. */
static inline uint64_t cm_rma_delay_wire(const cm_rma_delay_t *d, size_t bytes)
{
    uint64_t packets = (bytes == 0) ? 1 : (bytes + d->packet - 1) / d->packet;

    return packets * d->occupancy_ns + (uint64_t)((double)bytes * d->ns_per_byte + 0.5);
}

/*
 * Queues one operation of `bytes` issued at `now` on the interface. Returns when its last
 * byte has left; *cpu_until is when the issuer's CPU is free again (now + overhead).
 */
static inline uint64_t cm_rma_delay_queue(cm_rma_delay_t *d, uint64_t now, size_t bytes,
                                          uint64_t *cpu_until)
{
    uint64_t start, end, busy = __atomic_load_n(&d->link_free_ns, __ATOMIC_RELAXED);
    uint64_t wire = cm_rma_delay_wire(d, bytes);

    *cpu_until = now + d->overhead_ns;
    /* Two threads may issue (the application's and an offload or progress thread): the
     * queue is updated atomically, so neither's packets are lost from it. */
    do {
        start = (busy > *cpu_until) ? busy : *cpu_until;
        end   = start + wire;
    } while (!__atomic_compare_exchange_n(&d->link_free_ns, &busy, end, false, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return end;
}

/* A one-sided operation: when it may be reported complete (one round trip after it left). */
static inline uint64_t cm_rma_delay_charge(cm_rma_delay_t *d, uint64_t now, size_t bytes,
                                           uint64_t *cpu_until)
{
    return cm_rma_delay_queue(d, now, bytes, cpu_until) + d->latency_ns;
}

/* A one-way message: when it may be delivered at its target (half a round trip after it
 * left; a request and its reply together take one latency, as a get does). */
static inline uint64_t cm_rma_delay_message(cm_rma_delay_t *d, uint64_t now, size_t bytes,
                                            uint64_t *cpu_until)
{
    return cm_rma_delay_queue(d, now, bytes, cpu_until) + d->latency_ns / 2;
}

#endif
