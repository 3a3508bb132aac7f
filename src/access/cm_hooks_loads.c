/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Linked into a program only when it is built with load checks as well as
 * store checks (cmcc --accesses, PROG.access), which asks for this symbol: the
 * software line fills of the NS variants look it up before they trust that
 * every load of shared data reaches them (src/protocols/cashmere/cm_fill_line.c).
 */
#include "config.h"

__attribute__((visibility("default"))) extern const char cm_hooks_loads[];
const char cm_hooks_loads[] = "CASHMERE_BUILD=accesses"; /* cm_info --build finds the text */
