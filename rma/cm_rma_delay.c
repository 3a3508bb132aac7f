/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "rma/cm_rma_delay.h"

void cm_rma_delay_init(cm_rma_delay_t *d, uint64_t latency_ns, double bandwidth, uint64_t overhead_ns)
{
    d->latency_ns   = latency_ns;
    d->overhead_ns  = overhead_ns;
    d->ns_per_byte  = (bandwidth > 0) ? 1e9 / bandwidth : 0;
    d->enabled      = latency_ns != 0 || overhead_ns != 0 || bandwidth > 0;
    d->link_free_ns = 0;
}
