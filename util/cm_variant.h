/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The variant table (util/cm_variant_table.h) as data the runtime and the
 * tools read: per variant, the mechanism behind each dimension, the build it
 * needs and what the fabric must offer; per mechanism, a name, what it does
 * and whether this build implements it. Nothing else looks at the letters.
 */
#ifndef CM_VARIANT_H
#define CM_VARIANT_H

#include "util/cm_variant_table.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char       *name;   /* e.g. "CHSM" */
    cm_fill_kind_t   fill;
    cm_write_kind_t  write;
    cm_merge_kind_t  merge;
    cm_build_kind_t  build;
    cm_fabric_need_t fabric;
    const char       *note;   /* where letters collapse into one mechanism; else "" */
} cm_variant_info_t;

extern const cm_variant_info_t cm_variants[CM_VARIANT_COUNT];

/* A mechanism of one dimension: short name (machine readable), what it does, and whether
 * this build has it. */
typedef struct {
    const char *name;
    const char *doc;
    bool       implemented;
} cm_mechanism_info_t;

extern const cm_mechanism_info_t cm_fill_mechanisms[CM_FILL_COUNT];
extern const cm_mechanism_info_t cm_write_mechanisms[CM_WRITE_COUNT];
extern const cm_mechanism_info_t cm_merge_mechanisms[CM_MERGE_COUNT];

/* Every mechanism of the row is implemented. */
bool cm_variant_implemented(cm_variant_t v);

/* The build's short name ("plain", "stores", "accesses") and the suffix cmrun appends to a
 * program's name to find that build ("", ".hooks", ...). */
const char *cm_build_name(cm_build_kind_t b);
const char *cm_build_suffix(cm_build_kind_t b);

/* What realizes letter pos (0-3) of variant v, in a few words (stats header, cm_info). */
const char *cm_variant_mechanism(cm_variant_t v, int pos);

/* The comma-separated names of the implemented variants, into buf. */
void cm_variant_list_implemented(char *buf, size_t len);

#endif
