/* SPDX-License-Identifier: BSD-3-Clause */
/* The JSON parser (util/cm_json.h): recursive descent, RFC 8259, into a tree. */
#include "config.h"
#include "util/cm_json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CM_JSON_MAX_DEPTH 64

typedef struct {
    const char *p, *end, *start;
    char       *err;
    size_t     errlen;
    bool       failed;
} cm_json_parser_t;

static void cm_json_fail(cm_json_parser_t *ps, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void cm_json_fail(cm_json_parser_t *ps, const char *fmt, ...)
{
    va_list ap;
    int line = 1;
    size_t used;

    if (ps->failed) {
        return;
    }
    ps->failed = true;
    for (const char *q = ps->start; q < ps->p && q < ps->end; q++) {
        line += (*q == '\n');
    }
    used = (size_t)snprintf(ps->err, ps->errlen, "line %d: ", line);
    if (used < ps->errlen) {
        va_start(ap, fmt);
        vsnprintf(ps->err + used, ps->errlen - used, fmt, ap);
        va_end(ap);
    }
}

static void cm_json_skip_ws(cm_json_parser_t *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) {
        ps->p++;
    }
}

static cm_json_t *cm_json_new(cm_json_type_t type)
{
    cm_json_t *v = calloc(1, sizeof(*v));
    if (v != NULL) {
        v->type = type;
    }
    return v;
}

static int cm_json_hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') {
            v |= c - '0';
        } else if (c >= 'a' && c <= 'f') {
            v |= c - 'a' + 10;
        } else if (c >= 'A' && c <= 'F') {
            v |= c - 'A' + 10;
        } else {
            return -1;
        }
    }
    return v;
}

static size_t cm_json_put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A string at ps->p (its opening quote), decoded into a new buffer; NULL on error. */
static char *cm_json_parse_string(cm_json_parser_t *ps)
{
    /* Decoded, a string is never longer than its source. */
    const char *q = ++ps->p;
    char *buf, *o;

    while (q < ps->end && *q != '"') {
        q += (*q == '\\' && q + 1 < ps->end) ? 2 : 1;
    }
    if (q >= ps->end) {
        cm_json_fail(ps, "a string does not end");
        return NULL;
    }
    buf = o = malloc((size_t)(q - ps->p) + 1);
    if (buf == NULL) {
        cm_json_fail(ps, "out of memory");
        return NULL;
    }
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) {
            cm_json_fail(ps, "a control character inside a string (escape it)");
            break;
        }
        if (c != '\\') {
            *o++ = (char)c;
            ps->p++;
            continue;
        }
        ps->p++;
        switch (*ps->p++) {
        case '"':  *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/':  *o++ = '/'; break;
        case 'b':  *o++ = '\b'; break;
        case 'f':  *o++ = '\f'; break;
        case 'n':  *o++ = '\n'; break;
        case 'r':  *o++ = '\r'; break;
        case 't':  *o++ = '\t'; break;
        case 'u': {
            int hi = (ps->end - ps->p >= 4) ? cm_json_hex4(ps->p) : -1;
            uint32_t cp = (uint32_t)hi;
            if (hi < 0) {
                cm_json_fail(ps, "\\u needs four hex digits");
                break;
            }
            ps->p += 4;
            if (hi >= 0xd800 && hi <= 0xdbff) {
                int lo = (ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u')
                             ? cm_json_hex4(ps->p + 2) : -1;
                if (lo < 0xdc00 || lo > 0xdfff) {
                    cm_json_fail(ps, "an unpaired UTF-16 surrogate");
                    break;
                }
                ps->p += 6;
                cp = 0x10000 + (((uint32_t)hi - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
            } else if (hi >= 0xdc00 && hi <= 0xdfff) {
                cm_json_fail(ps, "an unpaired UTF-16 surrogate");
                break;
            } else if (hi == 0) {
                cm_json_fail(ps, "\\u0000 inside a string");
                break;
            }
            /* At most 6 source bytes give at most 4: the buffer holds it. */
            o += cm_json_put_utf8(o, cp);
            break;
        }
        default:
            cm_json_fail(ps, "an unknown escape \\%c", ps->p[-1]);
            break;
        }
        if (ps->failed) {
            break;
        }
    }
    if (ps->failed) {
        free(buf);
        return NULL;
    }
    ps->p++; /* the closing quote */
    *o = '\0';
    return buf;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static char *cm_json_parse_number(cm_json_parser_t *ps)
{
    const char *s = ps->p, *p = ps->p, *e = ps->end;
    char *text;

    if (p < e && *p == '-') {
        p++;
    }
    if (p < e && *p == '0') {
        p++;
    } else if (p < e && *p >= '1' && *p <= '9') {
        while (p < e && *p >= '0' && *p <= '9') {
            p++;
        }
    } else {
        cm_json_fail(ps, "expected a value");
        return NULL;
    }
    if (p < e && *p == '.') {
        if (++p >= e || *p < '0' || *p > '9') {
            cm_json_fail(ps, "a number needs digits after its '.'");
            return NULL;
        }
        while (p < e && *p >= '0' && *p <= '9') {
            p++;
        }
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) {
            p++;
        }
        if (p >= e || *p < '0' || *p > '9') {
            cm_json_fail(ps, "a number needs digits in its exponent");
            return NULL;
        }
        while (p < e && *p >= '0' && *p <= '9') {
            p++;
        }
    }
    text = strndup(s, (size_t)(p - s));
    if (text == NULL) {
        cm_json_fail(ps, "out of memory");
        return NULL;
    }
    ps->p = p;
    return text;
}

static cm_json_t *cm_json_parse_value(cm_json_parser_t *ps, int depth);

/* The elements of an array or the members of an object, after its opening bracket. */
static bool cm_json_parse_items(cm_json_parser_t *ps, cm_json_t *v, int depth)
{
    const bool object = (v->type == CM_JSON_OBJECT);
    const char close = object ? '}' : ']';
    cm_json_t **tail = &v->child;

    cm_json_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return true;
    }
    for (;;) {
        char *key = NULL;
        cm_json_t *item;

        cm_json_skip_ws(ps);
        if (object) {
            if (ps->p >= ps->end || *ps->p != '"') {
                cm_json_fail(ps, "expected a member name in quotes");
                return false;
            }
            if ((key = cm_json_parse_string(ps)) == NULL) {
                return false;
            }
            cm_json_skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                cm_json_fail(ps, "expected ':' after the member name \"%s\"", key);
                free(key);
                return false;
            }
            ps->p++;
        }
        item = cm_json_parse_value(ps, depth + 1);
        if (item == NULL) {
            free(key);
            return false;
        }
        item->key = key;
        *tail = item;
        tail = &item->next;
        cm_json_skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
        } else if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return true;
        } else {
            cm_json_fail(ps, "expected ',' or '%c'", close);
            return false;
        }
    }
}

static cm_json_t *cm_json_parse_value(cm_json_parser_t *ps, int depth)
{
    static const struct { const char *word; cm_json_type_t type; } words[] = {
        {"null", CM_JSON_NULL}, {"false", CM_JSON_FALSE}, {"true", CM_JSON_TRUE}};
    cm_json_t *v = NULL;

    if (depth > CM_JSON_MAX_DEPTH) {
        cm_json_fail(ps, "nested deeper than %d levels", CM_JSON_MAX_DEPTH);
        return NULL;
    }
    cm_json_skip_ws(ps);
    if (ps->p >= ps->end) {
        cm_json_fail(ps, "expected a value, found the end");
        return NULL;
    }
    switch (*ps->p) {
    case '{':
    case '[':
        v = cm_json_new(*ps->p == '{' ? CM_JSON_OBJECT : CM_JSON_ARRAY);
        ps->p++;
        if (v != NULL && !cm_json_parse_items(ps, v, depth)) {
            cm_json_free(v);
            return NULL;
        }
        break;
    case '"':
        v = cm_json_new(CM_JSON_STRING);
        if (v != NULL && (v->text = cm_json_parse_string(ps)) == NULL) {
            cm_json_free(v);
            return NULL;
        }
        break;
    default:
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
            size_t n = strlen(words[i].word);
            if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, words[i].word, n) == 0) {
                ps->p += n;
                v = cm_json_new(words[i].type);
                goto done;
            }
        }
        v = cm_json_new(CM_JSON_NUMBER);
        if (v != NULL && (v->text = cm_json_parse_number(ps)) == NULL) {
            cm_json_free(v);
            return NULL;
        }
        break;
    }
done:
    if (v == NULL) {
        cm_json_fail(ps, "out of memory");
    }
    return v;
}

/* Well-formed UTF-8 throughout (strings are checked again as they are decoded). */
static bool cm_json_check_utf8(cm_json_parser_t *ps)
{
    const unsigned char *p = (const unsigned char *)ps->start, *e = (const unsigned char *)ps->end;

    while (p < e) {
        unsigned char c = *p;
        size_t n = (c < 0x80) ? 1 : (c >= 0xc2 && c <= 0xdf) ? 2 : (c >= 0xe0 && c <= 0xef) ? 3
                 : (c >= 0xf0 && c <= 0xf4) ? 4 : 0;
        uint32_t cp = (n == 2) ? (c & 0x1fu) : (n == 3) ? (c & 0x0fu) : (c & 0x07u);
        if (c == 0) {
            n = 0;
        }
        for (size_t i = 1; n != 0 && i < n; i++) {
            if (p + i >= e || (p[i] & 0xc0) != 0x80) {
                n = 0;
            } else {
                cp = (cp << 6) | (p[i] & 0x3fu);
            }
        }
        if (n == 0 || (n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
            ps->p = (const char *)p;
            cm_json_fail(ps, "not UTF-8 text (byte 0x%02x at offset %zu)", c,
                         (size_t)(p - (const unsigned char *)ps->start));
            return false;
        }
        p += n;
    }
    return true;
}

cm_status_t cm_json_parse(const char *text, size_t len, cm_json_t **out, char *err, size_t errlen)
{
    cm_json_parser_t ps = {text, text + len, text, err, errlen, false};
    cm_json_t *v;

    *out = NULL;
    if (errlen > 0) {
        err[0] = '\0';
    }
    if (!cm_json_check_utf8(&ps)) {
        return CM_ERR_INVALID;
    }
    v = cm_json_parse_value(&ps, 0);
    if (v == NULL) {
        return CM_ERR_INVALID;
    }
    cm_json_skip_ws(&ps);
    if (ps.p != ps.end) {
        cm_json_fail(&ps, "text after the end of the value");
        cm_json_free(v);
        return CM_ERR_INVALID;
    }
    *out = v;
    return CM_OK;
}

void cm_json_free(cm_json_t *v)
{
    while (v != NULL) {
        cm_json_t *next = v->next;
        cm_json_free(v->child);
        free(v->key);
        free(v->text);
        free(v);
        v = next;
    }
}

const cm_json_t *cm_json_get(const cm_json_t *obj, const char *key)
{
    if (obj == NULL || obj->type != CM_JSON_OBJECT) {
        return NULL;
    }
    for (const cm_json_t *m = obj->child; m != NULL; m = m->next) {
        if (strcmp(m->key, key) == 0) {
            return m;
        }
    }
    return NULL;
}
