/* SPDX-License-Identifier: BSD-3-Clause */
/* Shell-like word splitting without expansion (see cm_split.h). */
#include "config.h"
#include "util/cm_split.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cm_split_free(char **words, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(words[i]);
    }
    free(words);
}

cm_status_t cm_split_words(const char *s, char ***words_p, size_t *n_p, char *err, size_t errlen)
{
    size_t len = strlen(s), n = 0, wlen = 0;
    char **words = NULL, *word = malloc(len + 1);
    bool have = false; /* a word is open (it may be empty: '') */
    char quote = '\0';

    *words_p = NULL;
    *n_p     = 0;
    if (word == NULL) {
        goto err_nomem;
    }
    for (size_t i = 0; i <= len; i++) {
        char c = s[i];

        if (c == '\0' || (quote == '\0' && (c == ' ' || c == '\t' || c == '\n'))) {
            if (c == '\0' && quote != '\0') {
                snprintf(err, errlen, "unbalanced %c quote", quote);
                goto err_free;
            }
            if (have) {
                char **more = realloc(words, (n + 1) * sizeof(*words));

                if (more == NULL) {
                    goto err_nomem;
                }
                words = more;
                words[n] = malloc(wlen + 1);
                if (words[n] == NULL) {
                    goto err_nomem;
                }
                memcpy(words[n], word, wlen);
                words[n++][wlen] = '\0';
            }
            have = false;
            wlen = 0;
        } else if (quote == '\'') {
            if (c == '\'') {
                quote = '\0';
            } else {
                word[wlen++] = c;
            }
        } else if (quote == '"') {
            if (c == '"') {
                quote = '\0';
            } else if (c == '\\' && strchr("\\\"$`", s[i + 1]) != NULL && s[i + 1] != '\0') {
                word[wlen++] = s[++i];
            } else {
                word[wlen++] = c;
            }
        } else if (c == '\'' || c == '"') {
            quote = c;
            have  = true;
        } else if (c == '\\') {
            if (s[i + 1] == '\0') {
                snprintf(err, errlen, "a backslash at the end");
                goto err_free;
            }
            word[wlen++] = s[++i];
            have = true;
        } else {
            word[wlen++] = c;
            have = true;
        }
    }
    free(word);
    *words_p = words;
    *n_p     = n;
    return CM_OK;

err_nomem:
    snprintf(err, errlen, "out of memory");
err_free:
    free(word);
    cm_split_free(words, n);
    return CM_ERR_INVALID;
}
