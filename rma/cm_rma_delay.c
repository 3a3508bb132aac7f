/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "rma/cm_rma_delay.h"

void cm_rma_delay_init(cm_rma_delay_t *d, const cm_rma_delay_cfg_t *cfg)
{
    d->latency_ns   = cfg->latency_ns;
    d->overhead_ns  = cfg->overhead_ns;
    d->occupancy_ns = cfg->occupancy_ns;
    d->interrupt_ns = cfg->interrupt_ns;
    d->packet       = cfg->packet ? cfg->packet : 4096;
    d->ns_per_byte  = (cfg->bandwidth > 0) ? 1e9 / cfg->bandwidth : 0;
    d->link_free_ns = 0;
    d->enabled      = cm_rma_delay_any(d);
}
