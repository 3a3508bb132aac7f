/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Linked into a program only when cmcc builds it with inline checks
 * (CMCC_CHECKS=inline, which asks for this symbol): the runtime looks the name
 * up before any instrumented code runs and maps the shadow the checks read
 * (src/access/cm_shadow.c).
 */
#include "config.h"

__attribute__((visibility("default"))) extern const int cm_hooks_inline;
const int cm_hooks_inline = 1;
