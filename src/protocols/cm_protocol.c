/* SPDX-License-Identifier: BSD-3-Clause */
/* What every protocol does alike around the one-sided layer: see cm_protocol.h. */
#include "config.h"
#include "src/protocols/cm_protocol.h"

void cm_protocol_stats_rma(cm_rma_t *rma, const cm_rma_stats_t *base, cm_stats_t *s,
                           cm_rma_stats_t *since)
{
    cm_rma_stats_t r;

    cm_rma_get_stats(rma, &r);
    cm_rma_stats_since(&r, base);
    s->puts           = r.puts;
    s->gets           = r.gets;
    s->atomics        = r.atomics;
    s->bytes_put      = r.bytes_put;
    s->bytes_got      = r.bytes_got;
    s->off_host_ops   = r.off_host_ops;
    s->off_host_bytes = r.off_host_bytes;
    s->wait_blocks    = r.wait_blocks;
    s->wait_missed    = r.wait_missed;
    s->wake_bells     = r.wake_bells;
    s->arm_caught     = r.arm_caught;
    s->net_interrupts = r.interrupts;
    s->waits          = r.waits;
    if (since != NULL) {
        *since = r;
    }
}

cm_status_t cm_protocol_event(cm_rma_t *rma, cm_status_t (*fn)(void), uint64_t *waits,
                              uint64_t *ns)
{
    cm_status_t status;

    cm_rma_hold_begin(rma);
    status = CM_RMA_COUNT_WAITS(waits, CM_STATS_IN_PHASE(ns, fn()));
    cm_rma_hold_end(rma);
    return status;
}
