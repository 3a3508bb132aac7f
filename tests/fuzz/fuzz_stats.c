/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: cm_stats's reader (src/tools/cm_stats_table.c). The input is a statistics
 * file; it is added to a table as cm_stats does, per run and per process, and the table is
 * printed as CSV. Anything but a cashmere-stats/1 file must be an error with a reason and
 * leave the table as it was; nothing may crash or touch memory out of bounds.
 */
#include "config.h"
#include "src/tools/cm_stats_table.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *null = fopen("/dev/null", "w");
    char *text = malloc(size ? size : 1);

    if (text == NULL || null == NULL) {
        abort();
    }
    memcpy(text, data, size);
    for (int per_process = 0; per_process < 2; per_process++) {
        cm_stats_table_t t;
        char err[512] = "";
        size_t rows, columns, *cols;

        cm_stats_table_init(&t, per_process);
        rows    = t.nrows;
        columns = t.ncolumns;
        if (cm_stats_table_add(&t, "fuzz.json", text, size, per_process, err, sizeof(err)) !=
            CM_OK) {
            if (err[0] == '\0' || t.nrows != rows || t.ncolumns != columns) {
                abort(); /* an error says why and changes nothing */
            }
        }
        cols = malloc((t.ncolumns ? t.ncolumns : 1) * sizeof(*cols));
        if (cols == NULL) {
            abort();
        }
        for (size_t c = 0; c < t.ncolumns; c++) {
            cols[c] = c;
        }
        cm_stats_table_print(null, &t, cols, t.ncolumns);
        free(cols);
        cm_stats_table_free(&t);
    }
    fclose(null);
    free(text);
    return 0;
}
