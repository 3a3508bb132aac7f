/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_stats's reader: statistics files into one table (a row per file, or per process), and
 * the table as CSV (RFC 4180). See cm_stats.c for the columns.
 */
#ifndef CM_STATS_TABLE_H
#define CM_STATS_TABLE_H

#include "util/cm_json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CM_STATS_SCHEMA "cashmere-stats/1"

typedef struct {
    char   **cells; /* by column; NULL: empty */
    size_t ncells;
} cm_stats_row_t;

typedef struct {
    char           **columns;
    size_t         ncolumns;
    cm_stats_row_t *rows;
    size_t         nrows;
} cm_stats_table_t;

/* An empty table with the schema's columns (and the process's, with per_process). */
void cm_stats_table_init(cm_stats_table_t *t, bool per_process);
void cm_stats_table_free(cm_stats_table_t *t);

/*
 * The rows of one statistics file (len bytes of text, named name in the "file" column and in
 * errors). Anything but a well-formed cashmere-stats/1 file: CM_ERR_INVALID, the table as it
 * was, and one line saying why in err.
 */
cm_status_t cm_stats_table_add(cm_stats_table_t *t, const char *name, const char *text,
                               size_t len, bool per_process, char *err, size_t errlen);

/* The column named name, added at the end when new: its index. */
size_t cm_stats_column(cm_stats_table_t *t, const char *name);

/* The header and the rows, columns cols[0..ncols) in that order. */
void cm_stats_table_print(FILE *out, const cm_stats_table_t *t, const size_t *cols,
                          size_t ncols);

/* realloc to n elements of size bytes, or the tool ends saying it is out of memory. */
void *cm_stats_grow(void *p, size_t n, size_t size);

#endif
