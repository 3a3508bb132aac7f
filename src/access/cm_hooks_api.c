/* SPDX-License-Identifier: BSD-3-Clause */
/* The runtime's side of the store hooks (see cm_hooks_api.h). */
#include "config.h"
#include "src/access/cm_hooks_api.h"
#include "src/access/cm_libc.h"
#include "src/access/cm_replica_heap.h"

static volatile uintptr_t *cm_hooks_lo;
static volatile uintptr_t *cm_hooks_span;
static cm_hook_handler_t volatile *cm_hooks_hk_handler; /* the hooks' copy */
static cm_hook_handler_t volatile *cm_hooks_hk_load;    /* the hooks' copy */
static cm_hook_handler_t cm_hooks_handler;
static cm_hook_handler_t cm_hooks_wrote;
static cm_hook_handler_t cm_hooks_load;
static uintptr_t cm_hooks_saved_span;
static int cm_hooks_paused;

void cm_hooks_register(volatile uintptr_t *lo, volatile uintptr_t *span,
                       cm_hook_handler_t volatile *handler, cm_hook_handler_t volatile *load)
{
    cm_hooks_lo         = lo;
    cm_hooks_span       = span;
    cm_hooks_hk_handler = handler;
    cm_hooks_hk_load    = load;
}

void cm_hooks_set_range(uintptr_t lo, uintptr_t span, cm_hook_handler_t handler)
{
    if (cm_hooks_lo == NULL) {
        return;
    }
    *cm_hooks_span   = 0; /* never a moment with a new base and an old span */
    cm_hooks_handler = handler;
    cm_hooks_wrote   = NULL;
    cm_hooks_load    = NULL;
    cm_libc_reads(false);
    *cm_hooks_hk_load = NULL;
    *cm_hooks_hk_handler = handler;
    *cm_hooks_lo     = lo;
    cm_hooks_saved_span = (handler != NULL) ? span : 0;
    *cm_hooks_span   = cm_hooks_paused ? 0 : cm_hooks_saved_span;
}

void cm_hooks_set_access(cm_hook_handler_t load, cm_hook_handler_t wrote)
{
    cm_hooks_wrote = wrote;
    cm_hooks_load  = load;
    cm_libc_reads(load != NULL);
    if (cm_hooks_hk_load != NULL) {
        *cm_hooks_hk_load = load;
    }
}

void cm_hooks_pause(int paused)
{
    cm_hooks_paused = paused;
    if (cm_hooks_span != NULL) {
        *cm_hooks_span = paused ? 0 : cm_hooks_saved_span;
    }
}

/* Reports of the runtime's own accesses, like the hooks' own, stop while paused: the region's
 * application view is then a private stand-in whose bytes must reach no home. */
void cm_hook_store(uintptr_t addr, size_t len)
{
    cm_hook_handler_t h = (cm_hooks_wrote != NULL) ? cm_hooks_wrote : cm_hooks_handler;

    if (h != NULL && !cm_hooks_paused) {
        CM_RT_ENTER();
        h(addr, len);
        CM_RT_LEAVE();
    }
}

void cm_hook_load(uintptr_t addr, size_t len)
{
    cm_hook_handler_t h = cm_hooks_load;

    if (h != NULL && !cm_hooks_paused) {
        CM_RT_ENTER();
        h(addr, len);
        CM_RT_LEAVE();
    }
}
