/* SPDX-License-Identifier: BSD-3-Clause */
/* What this build of the library is: its version and the commit it was built from. */
#ifndef CM_BUILD_H
#define CM_BUILD_H

/* "0.1.0" (PACKAGE_VERSION). */
const char *cm_build_version(void);

/* `git describe --always --dirty` of the source tree at build time ("552b4ff",
 * "552b4ff-dirty"), the commit a release tarball was made from, or "unknown". */
const char *cm_build_commit(void);

#endif
