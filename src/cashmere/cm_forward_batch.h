/* SPDX-License-Identifier: BSD-3-Clause */
/* Batched write-through: runs forwarded to a home gathered into one message (see the .c). */
#ifndef CM_FORWARD_BATCH_H
#define CM_FORWARD_BATCH_H

#include "cm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Active-message ids (the one-sided layer's; TreadMarks, which uses the low ones, never runs
 * beside Cashmere; cm_bench uses 30 and 31). */
#define CM_FWDB_AM_BATCH 26
#define CM_FWDB_AM_ACK   27

/* on[pe]: forwarding to home pe is batched; cap: bytes of a batch. Collective in effect: every
 * process registers the handlers (a home applies what others send it). */
cm_status_t cm_fwdb_init(const bool *on, size_t cap);
void cm_fwdb_fini(void);
bool cm_fwdb_batched(int home);
/* The bytes of [addr, addr + len) (app addresses, one page) as they are now, for home. */
void cm_fwdb_append(int home, uintptr_t addr, size_t len);
/* Sends what is gathered and waits until every home has applied all it was sent. */
void cm_fwdb_complete(void);
uint64_t cm_fwdb_batches(void);

#endif
