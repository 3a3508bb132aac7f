/* Helpers for the multi-process tests: a failed check ends the whole job non-zero. */
#ifndef MP_COMMON_H
#define MP_COMMON_H

#include "cm.h"
#include "src/cm_runtime.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MP_CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            char mp_msg_[1024]; \
            snprintf(mp_msg_, sizeof(mp_msg_), __VA_ARGS__); \
            cm_abort(1, "FAIL %s:%d: %s (%s)", __FILE__, __LINE__, mp_msg_, #cond); \
        } \
    } while (0)

#define MP_OK(call) \
    do { \
        cm_status_t mp_st_ = (call); \
        MP_CHECK(mp_st_ == CM_OK, "%s returned %s", #call, cm_status_string(mp_st_)); \
    } while (0)

#endif
