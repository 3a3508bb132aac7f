/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Set-up done before main (src/runtime/cm_preinit.c): one address-space layout in
 * every process, and cmrun --stdin's input on every rank from the first byte.
 */
#ifndef CM_PREINIT_H
#define CM_PREINIT_H

#include "rma/cm_boot.h"

#include <stdbool.h>

typedef struct {
    cm_boot_t *boot;        /* joined the job already (for stdin); cm_init takes it over */
    bool      stdin_done;   /* stdin holds rank 0's input */
    bool      same_layout;  /* running without address-space randomization */
    int       rank;         /* the launcher's rank of this process (PMIX_RANK), -1: none */
} cm_preinit_t;

extern cm_preinit_t cm_preinit;

#endif
