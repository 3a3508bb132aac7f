/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a coherence protocol provides to the runtime. The application calls
 * the same cm.h API under every protocol; cm_init picks one (CM_PROTOCOL).
 */
#ifndef CM_PROTOCOL_H
#define CM_PROTOCOL_H

#include "cm.h"
#include "rma/cm_rma.h"
#include "src/protocols/cm_meta.h"
#include "util/cm_config.h"
#include "util/cm_stats.h"

#include <stdbool.h>

/*
 * All a protocol knows of the runtime, handed to its init (and by it to its mechanisms'):
 * no protocol or mechanism reads the runtime's state. The runtime keeps it, and what it
 * points to, alive until the protocol's fini.
 */
typedef struct {
    int                    rank;
    int                    nprocs;
    cm_rma_t               *rma;
    char                   *app;       /* the shared region as the application sees it */
    char                   *net;       /* the same memory as the network sees it (never protected) */
    size_t                 size;       /* bytes of the region */
    size_t                 page_size;
    uint64_t               npages;
    char                   *meta_base; /* this process's metadata segment (same VA everywhere) */
    const cm_meta_layout_t *meta;      /* where each protocol structure lies in it */
    const cm_config_t      *config;
    /* The two-level protocol's: the job's hosts (NULL for the others) and the shared region's
     * segment (whose host leader's file a host's processes map). */
    const cm_rma_hosts_t   *hosts;
    cm_rma_seg_t           *shared_seg;
} cm_protocol_ctx_t;

typedef struct {
    const char *name;
    /* The most processes a job may have under it; 0: the one-sided layer's limit. */
    int max_procs;
    /* After the segments exist; sets the application view's protections. Collective. */
    cm_status_t (*init)(const cm_protocol_ctx_t *ctx);
    /* Before the one-sided layer goes away. Collective. */
    void (*fini)(void);
    /* An access to the application view of the shared region faulted. */
    cm_status_t (*fault)(void *addr, bool write);
    cm_status_t (*lock_acquire)(unsigned id);
    cm_status_t (*lock_release)(unsigned id);
    cm_status_t (*barrier)(void);
    /* Ends the initialization phase (collective). */
    cm_status_t (*init_done)(void);
    /* This process's counters so far. */
    void (*stats)(cm_stats_t *s);
    void (*stats_reset)(void);
    /* One line per dimension: which mechanism realizes it (stats header, cm_info). */
    const char *(*describe)(void);
    /* Introspection for tests and tools: the rank currently holding addr's master copy. */
    cm_status_t (*page_home)(const void *addr, int *home);
    /* Optional: maps the application's view of the region back after PARMACS's stand-in
     * (cm_region_restore), every page as at start; NULL: the process's own file, no access. */
    cm_status_t (*restore_view)(void);
} cm_protocol_t;

/*
 * The one-sided layer's counters since base (a statistics reset) into the members of s every
 * protocol reports alike (operations, bytes, what crossed hosts, waits); *since (if not NULL)
 * gets them all, for a protocol's own (its messages).
 */
void cm_protocol_stats_rma(cm_rma_t *rma, const cm_rma_stats_t *base, cm_stats_t *s,
                           cm_rma_stats_t *since);

/* A protocol event (a release, an acquire): its operations issued under one hold of the worker
 * (cm_rma_hold_begin), its waits and time counted in *waits and *ns. */
cm_status_t cm_protocol_event(cm_rma_t *rma, cm_status_t (*fn)(void), uint64_t *waits,
                              uint64_t *ns);

extern const cm_protocol_t cm_protocol_cashmere;
extern const cm_protocol_t cm_protocol_treadmarks;
extern const cm_protocol_t cm_protocol_none;
extern const cm_protocol_t cm_protocol_twolevel;

#endif
