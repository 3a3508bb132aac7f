/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON, the little the project needs: one string writer, which every JSON the library and
 * its tools write goes through (statistics, cm_bench --json), and a parser into a tree for
 * the tools that read those files back (cm_stats). Numbers are kept as the text written, so
 * that 64-bit counters survive the round trip exactly.
 */
#ifndef CM_JSON_H
#define CM_JSON_H

#include "cm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * Writes s as a JSON string: quoted, with '"', '\\' and every control character escaped,
 * and each byte that is not part of well-formed UTF-8 replaced by U+FFFD, so that the
 * output is valid JSON whatever s holds (a host name, a program's arguments). NULL writes
 * null.
 */
void cm_json_string(FILE *out, const char *s);

/* `"key": `: a member name (through cm_json_string) and its colon. */
void cm_json_key(FILE *out, const char *key);

typedef enum {
    CM_JSON_NULL,
    CM_JSON_FALSE,
    CM_JSON_TRUE,
    CM_JSON_NUMBER,
    CM_JSON_STRING,
    CM_JSON_ARRAY,
    CM_JSON_OBJECT
} cm_json_type_t;

typedef struct cm_json cm_json_t;
struct cm_json {
    cm_json_type_t type;
    char           *key;   /* the member's name, inside an object; else NULL */
    char           *text;  /* a string (decoded, NUL-terminated) or a number as written */
    cm_json_t      *child; /* first element or member of an array or object */
    cm_json_t      *next;  /* next element or member of the parent */
};

/*
 * Parses len bytes of text (one JSON value, surrounded by white space only) into a tree
 * for cm_json_free. On malformed input: CM_ERR_INVALID and "line N: what" in err. Nesting
 * deeper than 64 levels is refused. Strings must be valid UTF-8 and hold no NUL.
 */
cm_status_t cm_json_parse(const char *text, size_t len, cm_json_t **out, char *err, size_t errlen);

void cm_json_free(cm_json_t *v);

/* The member key of object obj, or NULL (also when obj is not an object). */
const cm_json_t *cm_json_get(const cm_json_t *obj, const char *key);

#endif
