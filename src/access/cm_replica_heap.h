/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The replica heap (src/access/cm_replica_heap.c): while every process replicates
 * process 0's initialization (PARMACS, up to CREATE), what the program
 * allocates with malloc & co. on its main thread comes from a deterministic
 * allocator at a fixed address, so the same computation gets the same
 * pointers in every process. The runtime's own allocations (UCX, PMIx, the
 * library) differ between processes and stay with libc: every entry into the
 * runtime from the application's thread is bracketed by CM_RT_ENTER/LEAVE.
 */
#ifndef CM_REPLICA_HEAP_H
#define CM_REPLICA_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Depth of runtime calls on this thread (0: the application is running). */
extern __thread int cm_rh_depth __attribute__((tls_model("initial-exec")));

#define CM_RT_ENTER() (cm_rh_depth++)
#define CM_RT_LEAVE() (cm_rh_depth--)

/* Fixed place of the heap: the same in every process. */
#define CM_RH_BASE    ((uintptr_t)0x180000000000ul)  /* 24 TiB: above AddressSanitizer's shadow */
#define CM_RH_RESERVE ((size_t)1 << 40)              /* address space only, committed as used */

/*
 * From now on the calling thread's allocations (outside the runtime) come
 * from the replica heap. Fails with a one-line error if the range is taken.
 */
void cm_rh_activate(void);
/* Back to libc for new allocations; blocks already handed out stay valid. */
void cm_rh_deactivate(void);
bool cm_rh_active(void);
/* A digest of the replica heap's history (every block's place and size, handed out or freed, in
 * order): equal in two processes when their programs allocated alike. */
uint64_t cm_rh_digest(void);
/* Whether ptr is a replica-heap block (for tests). */
bool cm_rh_owns(const void *ptr);

#endif
