/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A command line split into words as a POSIX shell splits it, with nothing expanded: what
 * cmrun does to CM_LAUNCHER_ARGS (through `cm_info --split-args`), so that options with
 * spaces can be quoted ("--mca plm_rsh_args '-p 2222'") and nothing in them is ever run.
 */
#ifndef CM_SPLIT_H
#define CM_SPLIT_H

#include "cm.h"

#include <stddef.h>

/*
 * Blanks (space, tab, newline) separate words; '...' keeps everything inside; "..." keeps
 * everything but \" \\ \$ \` (the backslash escapes these four, and stays before any other
 * character); outside quotes a backslash keeps the next character. Quotes join what touches
 * them into one word, and '' is an empty word. $, `, ;, * and the rest are plain characters.
 * On success *words holds *n NUL-terminated words (cm_split_free). An unbalanced quote or a
 * backslash at the end: CM_ERR_INVALID and why in err.
 */
cm_status_t cm_split_words(const char *s, char ***words, size_t *n, char *err, size_t errlen);

void cm_split_free(char **words, size_t n);

#endif
