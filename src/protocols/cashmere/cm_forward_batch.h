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

/* Batches forwarding to every home reached through RMA (every_home), or to those reached over
 * TCP only; cap: bytes of a batch. Collective: registers the handlers everywhere (a home
 * applies what others send it), then a barrier. */
cm_status_t cm_fwdb_init(bool every_home, size_t cap);
void cm_fwdb_fini(void);
bool cm_fwdb_batched(int home);
/* Whether forwarding to any home is batched. */
bool cm_fwdb_active(void);
/* The bytes of [addr, addr + len) (app addresses, one page) as they are now, for home. */
void cm_fwdb_append(int home, uintptr_t addr, size_t len);
/* Sends what is gathered and waits until every home has applied all it was sent. */
void cm_fwdb_complete(void);

#endif
