/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: the JSON parser the statistics tools read with (cm_json_parse). Any input:
 * a tree or an error with its line, never a crash or a read past the text; the tree is
 * walked (every string NUL-terminated, every member named) and freed.
 */
#include "config.h"
#include "util/cm_json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t walk(const cm_json_t *v, int depth)
{
    size_t n = 1;

    if (depth > 70) {
        abort(); /* the parser refuses nesting deeper than 64 */
    }
    if ((v->type == CM_JSON_STRING || v->type == CM_JSON_NUMBER) && v->text == NULL) {
        abort();
    }
    if (v->text != NULL) {
        n += strlen(v->text);
    }
    for (const cm_json_t *c = v->child; c != NULL; c = c->next) {
        if (v->type == CM_JSON_OBJECT && c->key == NULL) {
            abort(); /* a member without a name */
        }
        n += walk(c, depth + 1);
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    cm_json_t *tree = NULL;

    /* The parser takes (text, len): no terminator, so ASan sees a read one byte past. */
    char *text = malloc(size ? size : 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    if (cm_json_parse(text, size, &tree, err, sizeof(err)) == CM_OK) {
        (void)walk(tree, 0);
        (void)cm_json_get(tree, "schema");
        cm_json_free(tree);
    } else if (err[0] == '\0') {
        abort(); /* an error says why */
    }
    free(text);
    return 0;
}
