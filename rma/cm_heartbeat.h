/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Heartbeats: every process hears from every peer at least once per timeout
 * (CM_PEER_TIMEOUT), or the job ends, saying which host and rank went silent.
 * A thread of its own sends and receives the heartbeats, so a process that
 * computes outside the library for minutes is still heard; see cm_heartbeat.c
 * for why UCX's own error handling cannot bound this.
 */
#ifndef CM_HEARTBEAT_H
#define CM_HEARTBEAT_H

#include "cm.h"
#include "rma/cm_boot.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct cm_heartbeat cm_heartbeat_t;

/*
 * Once peers are lost, one process per host (the lowest rank there that is
 * still heard) prints one line naming them, host by host; the others stay
 * silent a second longer, so that a lost host costs one line per surviving
 * host, not one per process. Then each calls lost(arg), from the heartbeat
 * thread (it records the failure; it must return at once), and exits with
 * status 1.
 */
typedef void (*cm_heartbeat_lost_fn_t)(void *arg);

typedef struct {
    uint64_t               timeout_ns; /* silence that loses a peer; 0: no heartbeats */
    cm_heartbeat_lost_fn_t lost;       /* or NULL */
    void                   *arg;
} cm_heartbeat_params_t;

/* Opens this process's heartbeat socket and publishes its address and host name (cm_boot_put):
 * call before the exchange that the other layers' addresses go through. *w is NULL for a job of
 * one process; with a timeout of 0 it only knows the peers' hosts. */
cm_status_t cm_heartbeat_publish(cm_boot_t *boot, const cm_heartbeat_params_t *params,
                                 cm_heartbeat_t **w);

/* After that exchange: reads the peers' addresses and starts the thread. */
cm_status_t cm_heartbeat_start(cm_heartbeat_t *w);

/* At the end of the job, once no peer can still wait for this one: tells the peers this
 * process is leaving (they no longer expect it), stops the thread and frees. NULL: nothing. */
void cm_heartbeat_stop(cm_heartbeat_t *w);

/* When the last datagram from rank came (cm_time_ns), or 0: none yet, or w is NULL. Any thread. */
uint64_t cm_heartbeat_heard_ns(const cm_heartbeat_t *w, int rank);

/* The transport found rank gone (what: the operation and UCX's word for it): one line naming
 * it and its host, then as for a silent peer (lost(), exit status 1). w may be NULL. */
__attribute__((noreturn)) void cm_heartbeat_lost_peer(cm_heartbeat_t *w, int rank,
                                                      const char *what);

#endif
