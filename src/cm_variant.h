/*
 * The paper's protocol variants: four letters, one per dimension, and how this
 * implementation realizes each letter (DESIGN.md section 6). Shared by the
 * protocol (stats header) and cm_info.
 */
#ifndef CM_VARIANT_H
#define CM_VARIANT_H

#include "src/cm_config.h"

#include <stdbool.h>

typedef struct {
    const char *name;        /* e.g. "CHSM" */
    bool       implemented;
} cm_variant_info_t;

/* Indexed by cm_variant_t (the CM_VARIANT enum). */
extern const cm_variant_info_t cm_variants[];
extern const int cm_nvariants;

/* Does the variant need a program built with the store hooks (cmcc)? */
bool cm_variant_needs_hooks(cm_variant_t v);

/* What realizes letter `pos` (0-3) of variant v, in a few words. */
const char *cm_variant_mechanism(cm_variant_t v, int pos);

#endif
