/*
 * The process-wide runtime state behind cm.h, for the library's modules and
 * the bundled tools (cm_bench, cm_info). Not installed.
 */
#ifndef CM_RUNTIME_H
#define CM_RUNTIME_H

#include "cm.h"
#include "rma/cm_boot.h"
#include "rma/cm_rma.h"
#include "src/cm_config.h"

#include <stdbool.h>

typedef struct {
    bool         initialized;
    int          rank;
    int          nprocs;
    cm_config_t  config;
    cm_boot_t    *boot;
    cm_rma_t     *rma;
    void         *shared_base;  /* the shared region, same VA everywhere */
    size_t       shared_size;
    cm_rma_seg_t *shared_seg;
    void         *meta_base;    /* this process's metadata segment, same VA everywhere */
    size_t       meta_size;
    cm_rma_seg_t *meta_seg;
} cm_runtime_t;

extern cm_runtime_t cm_rt;

/* Where the metadata segment goes for a given configuration (just below the shared region). */
cm_status_t cm_runtime_layout(const cm_config_t *cfg, long page_size, uintptr_t *meta_base,
                              size_t *meta_size, size_t *shared_size);

#endif
