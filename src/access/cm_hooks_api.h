/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The contract between the runtime and the store hooks that `cmcc` compiles
 * into a program (src/access/cm_hooks.c, libcashmere_hooks.a). The compiler's
 * instrumentation calls __asan_store<N>(addr) before every store; the hook
 * checks addr against [*lo, *lo + *span) in a few instructions and passes a
 * shared store straight to the runtime's handler. The range and handler
 * variables live in the program (fast to reach: no PLT, no second call); the
 * hooks hand their addresses over at start-up.
 */
#ifndef CM_HOOKS_API_H
#define CM_HOOKS_API_H

#include <stddef.h>
#include <stdint.h>

/* A store of len bytes at addr in the range is about to happen (or, for copies, happened). */
typedef void (*cm_hook_handler_t)(uintptr_t addr, size_t len);

/* Called by the hooks' constructor: where the range check reads lo and span, and the handlers
 * of stores and of loads. */
void cm_hooks_register(volatile uintptr_t *lo, volatile uintptr_t *span,
                       cm_hook_handler_t volatile *handler, cm_hook_handler_t volatile *load);

/*
 * Runtime: stores in [lo, lo + span) go to handler; span 0 turns the hooks off. The hooks call
 * the handler from application code as it runs: it brackets with CM_RT_ENTER/LEAVE whatever
 * may allocate.
 */
void cm_hooks_set_range(uintptr_t lo, uintptr_t span, cm_hook_handler_t handler);

/*
 * Runtime: loads in the range (programs built with load checks, cmcc --accesses), and both
 * ranges of copies, go to load before they happen; stores the runtime reports after the fact
 * (cm_hook_store) go to wrote instead of the store handler. NULL, NULL: loads need nothing,
 * a store is a store. Set after cm_hooks_set_range, which clears them.
 */
void cm_hooks_set_access(cm_hook_handler_t load, cm_hook_handler_t wrote);

/* For stores the runtime reports itself (interposed libc calls): calls the handler. */
void cm_hook_store(uintptr_t addr, size_t len);

/*
 * For loads the runtime makes itself on the program's behalf (shared words the compat layers
 * read, buffers libc reads): [addr, addr + len) is about to be read, so the load handler, where
 * one is set (software line fills), makes those bytes current first. Code outside the program
 * has no load checks of its own: without this it reads whatever the local copy holds.
 */
void cm_hook_load(uintptr_t addr, size_t len);

/* While paused, the hooks report nothing (a process computing on a private stand-in of the region). */
void cm_hooks_pause(int paused);

#endif
