/* SPDX-License-Identifier: BSD-3-Clause */
/* cm_status_t as words (include/cm.h): every layer reports errors with these. */
#include "config.h"
#include "cm.h"

#include <stddef.h>

static const char *const cm_status_strings[] = {
    [0] = "success",
    [1] = "invalid argument or configuration",
    [2] = "out of memory",
    [3] = "address range in use",
    [4] = "unsupported",
    [5] = "transport error",
    [6] = "process manager (PMIx) error",
    [7] = "a peer process failed",
    [8] = "I/O error",
};

const char *cm_status_string(cm_status_t status)
{
    int i = -(int)status;
    if (i < 0 || (size_t)i >= sizeof(cm_status_strings) / sizeof(cm_status_strings[0])) {
        return "unknown status";
    }
    return cm_status_strings[i];
}
