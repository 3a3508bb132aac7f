/* SPDX-License-Identifier: BSD-3-Clause */
/* The build's identity (util/cm_build.h); cm_commit.h is generated at every make. */
#include "config.h"
#include "util/cm_build.h"
#include "util/cm_commit.h"

const char *cm_build_version(void)
{
    return PACKAGE_VERSION;
}

const char *cm_build_commit(void)
{
    return CM_BUILD_COMMIT;
}
