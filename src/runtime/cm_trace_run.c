/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event trace's life in the runtime (CM_TRACE, util/cm_trace.h): opened once the protocol
 * is up, the clock's offset to rank 0 recorded then and again at cm_finalize, closed after the
 * one-sided layer (and with it the progress thread) has gone, or at once when the job fails.
 */
#include "config.h"
#include "src/runtime/cm_check.h"
#include "src/runtime/cm_runtime.h"
#include "util/cm_log.h"
#include "util/cm_trace.h"

#include <inttypes.h>
#include <stdlib.h>

/* Round trips to rank 0 for each offset: the shortest wins. */
#define CM_RT_CLOCK_TRIES 100

static cm_status_t cm_rt_trace_offset(int which)
{
    cm_rma_clock_t c;

    CM_CHECK(cm_rma_clock_sync(cm_rt.rma, CM_RT_CLOCK_TRIES, &c));
    cm_trace_emit(CM_TRACE_CLOCK, c.at_ns, c.error_ns, (uint64_t)c.offset_ns, which, 0, 0);
    cm_debug("trace: clock offset to rank 0 %" PRId64 " ns, error at most %" PRIu64 " ns",
             c.offset_ns, c.error_ns);
    return CM_OK;
}

cm_status_t cm_rt_trace_start(void)
{
    if (!cm_check_tracing(&cm_rt.config)) {
        return CM_OK;
    }
    cm_rt.trace_grant = calloc(cm_rt.meta.nlocks ? cm_rt.meta.nlocks : 1, sizeof(uint64_t));
    if (cm_rt.trace_grant == NULL) {
        cm_error("CM_TRACE: out of memory");
        return CM_ERR_NO_MEMORY;
    }
    CM_CHECK(cm_trace_open(cm_rt.config.trace, cm_rt.rank, cm_rt.nprocs,
                           cm_rt.config.trace_buffer, cm_rt.page_size, cm_rt.shared_base,
                           cm_rt.proto->name));
    return cm_rt_trace_offset(0);
}

cm_status_t cm_rt_trace_clock(void)
{
    return (cm_rt.trace_grant != NULL) ? cm_rt_trace_offset(1) : CM_OK;
}

void cm_rt_trace_close(bool failed)
{
    if (cm_rt.trace_grant == NULL) {
        return;
    }
    cm_trace_close(failed);
    if (!failed) {
        free(cm_rt.trace_grant);
        cm_rt.trace_grant = NULL;
    }
}
