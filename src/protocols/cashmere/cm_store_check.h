/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CM_CHECK_STORES: stores into the shared region that the store hooks never
 * saw stop the job with a message naming them (src/protocols/cashmere/cm_store_check.c). Used by
 * the software write-forwarding protocol; page numbers are the protocol's.
 */
#ifndef CM_STORE_CHECK_H
#define CM_STORE_CHECK_H

#include "cm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* app: the application view of the shared region; net: its network view (same pages). */
cm_status_t cm_sc_init(char *app, char *net, uint64_t npages, size_t ps);
void cm_sc_fini(void);

/* Page p was just mapped (its contents arrived); home: it is homed here. */
void cm_sc_mapped(uint64_t p, bool home);

/* The hooks saw (or libc reported) a store to [addr, addr+len), inside one mapped region. */
void cm_sc_stored(uintptr_t addr, size_t len);

/* A write fault on page p that no hooked store announced; pc: the faulting instruction. */
void cm_sc_unseen(uint64_t p, uintptr_t pc);

/* At a release, or before page p is dropped: stops the job if p holds a store the hooks did not
 * see (reported: a hooked store marked p dirty since the last release). Otherwise resets p's
 * record to its current contents. */
void cm_sc_verify(uint64_t p, bool home, int home_rank, bool reported);

#endif
