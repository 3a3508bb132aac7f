/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: the splitter of CM_LAUNCHER_ARGS (cm_split_words, run by cmrun through
 * `cm_info --split-args`). Any input: words or an error with a reason, no crash. And a
 * property: the words, each quoted back ('...', a ' written '\''), split into the same words.
 */
#include "config.h"
#include "util/cm_split.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), *quoted, err[128] = "", err2[128] = "";
    char **words, **again;
    size_t n, m, len = 0;

    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0'; /* a C string, as the environment gives it: stops at the first NUL */
    if (cm_split_words(text, &words, &n, err, sizeof(err)) != CM_OK) {
        if (err[0] == '\0') {
            abort();
        }
        free(text);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        len += 4 * strlen(words[i]) + 3;
    }
    quoted = malloc(len + 1);
    if (quoted == NULL) {
        abort();
    }
    len = 0;
    for (size_t i = 0; i < n; i++) {
        quoted[len++] = '\'';
        for (const char *c = words[i]; *c != '\0'; c++) {
            if (*c == '\'') {
                memcpy(quoted + len, "'\\''", 4);
                len += 4;
            } else {
                quoted[len++] = *c;
            }
        }
        quoted[len++] = '\'';
        quoted[len++] = ' ';
    }
    quoted[len] = '\0';
    if (cm_split_words(quoted, &again, &m, err2, sizeof(err2)) != CM_OK || m != n) {
        abort();
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(words[i], again[i]) != 0) {
            abort();
        }
    }
    cm_split_free(again, m);
    cm_split_free(words, n);
    free(quoted);
    free(text);
    return 0;
}
