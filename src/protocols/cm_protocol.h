/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a coherence protocol provides to the runtime. The application calls
 * the same cm.h API under every protocol; cm_init picks one (CM_PROTOCOL).
 */
#ifndef CM_PROTOCOL_H
#define CM_PROTOCOL_H

#include "cm.h"
#include "util/cm_stats.h"

#include <stdbool.h>

typedef struct {
    const char *name;
    /* After the segments exist; sets the application view's protections. Collective. */
    cm_status_t (*init)(void);
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
} cm_protocol_t;

extern const cm_protocol_t cm_protocol_cashmere;
extern const cm_protocol_t cm_protocol_treadmarks;
extern const cm_protocol_t cm_protocol_none;

#endif
