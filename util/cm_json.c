/* SPDX-License-Identifier: BSD-3-Clause */
/* The JSON string writer (util/cm_json.h). */
#include "config.h"
#include "util/cm_json.h"

#include <stdint.h>

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlongs, no surrogates,
 * nothing above U+10FFFF), or 0 if the bytes there are not one. */
static size_t cm_json_utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t cp;

    if (c < 0x80) {
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        n = 2, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4, cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0; /* also stops at the terminating NUL */
        }
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    return n;
}

void cm_json_string(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    if (s == NULL) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    while (*p != '\0') {
        size_t n = cm_json_utf8_len(p);
        switch (*p) {
        case '"':  fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\b': fputs("\\b", out); break;
        case '\f': fputs("\\f", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (n == 0) {
                fputs("\\ufffd", out);
                n = 1;
            } else if (*p < 0x20 || *p == 0x7f) {
                fprintf(out, "\\u%04x", *p);
            } else {
                fwrite(p, 1, n, out);
            }
            p += n;
            continue;
        }
        p++;
    }
    fputc('"', out);
}

void cm_json_key(FILE *out, const char *key)
{
    cm_json_string(out, key);
    fputs(": ", out);
}
