/* SPDX-License-Identifier: BSD-3-Clause */
/* SIGSEGV-driven page faults on the application view of the shared region. */
#ifndef CM_FAULT_H
#define CM_FAULT_H

#include "cm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Faults in [lo, lo + span) call fn; others go to the previous SIGSEGV disposition. */
cm_status_t cm_fault_install(void *lo, size_t span, cm_status_t (*fn)(void *addr, bool write));
void cm_fault_uninstall(void);

/* Inside fn: the address of the instruction that faulted (0 where unknown). */
uintptr_t cm_fault_pc(void);

#endif
