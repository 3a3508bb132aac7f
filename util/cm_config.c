/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "util/cm_config.h"
#include "util/cm_log.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CM_CONFIG_PREFIX "CM_"

const cm_config_entry_t cm_config_entries[CM_CONFIG_NUM] = {
#define CM_CONFIG_ROW(_field, _name, _type, _def, _vals, _cat, _doc) \
    {CM_CONFIG_PREFIX #_name, CM_CFG_##_type, _def, _vals, _cat, _doc, offsetof(cm_config_t, _field)},
    CM_CONFIG_TABLE(CM_CONFIG_ROW)
#undef CM_CONFIG_ROW
};

static const char *const cm_config_type_names[] = {
    [CM_CFG_SIZE] = "size", [CM_CFG_TIME] = "time", [CM_CFG_BANDWIDTH] = "bandwidth",
    [CM_CFG_BOOL] = "bool", [CM_CFG_ENUM] = "enum", [CM_CFG_ADDR] = "address",
    [CM_CFG_STRING] = "string", [CM_CFG_UINT] = "unsigned", [CM_CFG_OUTPUT] = "output",
};



static void cm_config_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cm_config_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || errlen == 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

const cm_config_entry_t *cm_config_find(const char *name)
{
    for (size_t i = 0; i < CM_CONFIG_NUM; i++) {
        if (strcmp(cm_config_entries[i].name, name) == 0) {
            return &cm_config_entries[i];
        }
    }
    return NULL;
}

/*
 * Splits "  12.5 KiB " into a non-negative number and its unit (trimmed).
 * Returns 0 on success, -1 if there is no number.
 */
static int cm_config_split_number(const char *str, double *num, char *unit, size_t unitlen)
{
    char *end;
    size_t n;

    while (isspace((unsigned char)*str)) {
        str++;
    }
    if (!isdigit((unsigned char)*str) && *str != '.') {
        return -1; /* also rejects signs: nothing here may be negative */
    }
    errno = 0;
    *num = strtod(str, &end);
    if (end == str || errno != 0 || !isfinite(*num)) {
        return -1;
    }
    while (isspace((unsigned char)*end)) {
        end++;
    }
    n = strlen(end);
    while (n > 0 && isspace((unsigned char)end[n - 1])) {
        n--;
    }
    if (n >= unitlen) {
        return -1;
    }
    memcpy(unit, end, n);
    unit[n] = '\0';
    return 0;
}

static cm_status_t cm_config_parse_size(const char *name, const char *str, size_t *out,
                                        char *err, size_t errlen)
{
    static const char suffixes[] = "kmgt";
    char unit[16];
    double num, mult = 1;
    const char *u = unit;

    if (cm_config_split_number(str, &num, unit, sizeof(unit)) != 0) {
        goto bad;
    }
    if (*u != '\0') {
        const char *p = strchr(suffixes, tolower((unsigned char)*u));
        if (p != NULL) {
            mult = pow(1024.0, (double)(p - suffixes + 1));
            u++;
            if (*u == 'i' || *u == 'I') {
                u++;
            }
        }
        if ((*u == 'b' || *u == 'B') && u[1] == '\0') {
            u++;
        }
        if (*u != '\0') {
            goto bad;
        }
    }
    num *= mult;
    if (num >= 18446744073709551615.0 || num != floor(num)) {
        if (num >= 18446744073709551615.0) {
            cm_config_err(err, errlen, "%s='%s' is too large", name, str);
            return CM_ERR_INVALID;
        }
        num = floor(num);
    }
    *out = (size_t)num;
    return CM_OK;
bad:
    cm_config_err(err, errlen, "%s='%s' is not a size: expected bytes with an optional k, m, g or t "
                  "suffix (binary multiples), e.g. 64k or 1g", name, str);
    return CM_ERR_INVALID;
}

static cm_status_t cm_config_parse_time(const char *name, const char *str, uint64_t *out,
                                        char *err, size_t errlen)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    char unit[16];
    double num;

    if (cm_config_split_number(str, &num, unit, sizeof(unit)) != 0) {
        goto bad;
    }
    if (unit[0] == '\0') {
        if (num == 0) {
            *out = 0;
            return CM_OK;
        }
        cm_config_err(err, errlen, "%s='%s' needs a time unit (ns, us, ms or s), e.g. %gus",
                      name, str, num);
        return CM_ERR_INVALID;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(unit, units[i].unit) == 0) {
            double ns = num * units[i].ns;
            if (ns > 3.6e12 * 24) { /* a day: far beyond any sane injected delay */
                cm_config_err(err, errlen, "%s='%s' is too large", name, str);
                return CM_ERR_INVALID;
            }
            *out = (uint64_t)llround(ns);
            return CM_OK;
        }
    }
bad:
    cm_config_err(err, errlen, "%s='%s' is not a time: expected a number and a unit (ns, us, ms "
                  "or s), e.g. 10us", name, str);
    return CM_ERR_INVALID;
}

static cm_status_t cm_config_parse_bandwidth(const char *name, const char *str, double *out,
                                             char *err, size_t errlen)
{
    static const char prefixes[] = "kmgt";
    char unit[24];
    double num, mult = 1;
    char *u = unit;
    size_t n;

    if (strcasecmp(str, "inf") == 0 || strcasecmp(str, "unlimited") == 0) {
        *out = 0;
        return CM_OK;
    }
    if (cm_config_split_number(str, &num, unit, sizeof(unit)) != 0) {
        goto bad;
    }
    if (unit[0] == '\0') {
        if (num == 0) {
            *out = 0;
            return CM_OK;
        }
        cm_config_err(err, errlen, "%s='%s' needs a unit, e.g. %gMB (bytes/s) or %gGb (bits/s)",
                      name, str, num, num);
        return CM_ERR_INVALID;
    }
    /* Optional rate suffix: "/s" or "ps". */
    n = strlen(u);
    if (n >= 2 && (strcmp(u + n - 2, "/s") == 0 || strcmp(u + n - 2, "ps") == 0)) {
        u[n - 2] = '\0';
    }
    if (*u != '\0' && strchr(prefixes, tolower((unsigned char)*u)) != NULL && u[1] != '\0') {
        int power = (int)(strchr(prefixes, tolower((unsigned char)*u)) - prefixes) + 1;
        u++;
        if (*u == 'i') {
            mult = pow(1024.0, power);
            u++;
        } else {
            mult = pow(1000.0, power);
        }
    }
    if (strcmp(u, "B") == 0) {
        /* bytes */
    } else if (strcmp(u, "b") == 0) {
        mult /= 8; /* bits */
    } else {
        goto bad;
    }
    *out = num * mult;
    return CM_OK;
bad:
    cm_config_err(err, errlen, "%s='%s' is not a bandwidth: expected e.g. 400MB (bytes/s), 10Gb "
                  "(bits/s), 256MiB, or 0 for unlimited", name, str);
    return CM_ERR_INVALID;
}

static cm_status_t cm_config_parse_bool(const char *name, const char *str, bool *out,
                                        char *err, size_t errlen)
{
    static const char *const yes[] = {"y", "yes", "on", "1", "true"};
    static const char *const no[]  = {"n", "no", "off", "0", "false"};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(str, yes[i]) == 0) {
            *out = true;
            return CM_OK;
        }
        if (strcasecmp(str, no[i]) == 0) {
            *out = false;
            return CM_OK;
        }
    }
    cm_config_err(err, errlen, "%s='%s' is not a boolean: use yes or no (also y/n, on/off, 1/0, "
                  "true/false)", name, str);
    return CM_ERR_INVALID;
}

/* The index-th keyword of a "a|b|c" list, its length in *n; NULL past the end. */
static const char *cm_config_keyword_at(const char *values, int index, size_t *n)
{
    const char *p = values;

    for (; index > 0 && p != NULL; index--) {
        p = strchr(p, '|');
        p = (p != NULL) ? p + 1 : NULL;
    }
    if (p == NULL || *p == '\0') {
        return NULL;
    }
    *n = strcspn(p, "|");
    return p;
}

/* Length of a keyword list without the | that may end it (generated lists end with one). */
static int cm_config_list_len(const char *values)
{
    size_t n = strlen(values);
    return (int)((n > 0 && values[n - 1] == '|') ? n - 1 : n);
}

/* Index of str in a "a|b|c" list, or -1. */
static int cm_config_keyword(const char *values, const char *str)
{
    size_t n, len = strlen(str);
    const char *p;

    for (int i = 0; (p = cm_config_keyword_at(values, i, &n)) != NULL; i++) {
        if (n == len && strncmp(p, str, n) == 0) {
            return i;
        }
    }
    return -1;
}

/* The keyword of a "a|b|c" list a typo of str would be, its length in *len; NULL if none. */
static const char *cm_config_nearest_keyword(const char *values, const char *str, size_t *len)
{
    const char *p, *best = NULL;
    size_t n, best_d = (size_t)-1;
    char word[64];

    for (int i = 0; (p = cm_config_keyword_at(values, i, &n)) != NULL; i++) {
        size_t d;
        if (n == 0 || n >= sizeof(word)) {
            continue;
        }
        memcpy(word, p, n);
        word[n] = '\0';
        d = cm_config_distance(str, word);
        if (d < best_d) {
            best_d = d;
            best   = p;
            *len   = n;
        }
    }
    return (best != NULL && cm_config_near(str, best_d)) ? best : NULL;
}

/*
 * Keywords match exactly: CM_VARIANT=chsn is refused with the spelling that is
 * meant, so a job's records, scripts and figures only ever see one name for it.
 */
static cm_status_t cm_config_parse_enum(const char *name, const char *values, const char *str,
                                        int *out, char *err, size_t errlen)
{
    int index = cm_config_keyword(values, str);
    size_t n;
    const char *best;

    if (index >= 0) {
        *out = index;
        return CM_OK;
    }
    best = cm_config_nearest_keyword(values, str, &n);
    if (best != NULL) {
        cm_config_err(err, errlen, "%s='%s' is not one of %.*s (did you mean %s=%.*s?)", name,
                      str, cm_config_list_len(values), values, name, (int)n, best);
    } else {
        cm_config_err(err, errlen, "%s='%s' is not one of %.*s", name, str,
                      cm_config_list_len(values), values);
    }
    return CM_ERR_INVALID;
}

/*
 * OUTPUT: empty, a keyword, or a file path. A bare word that is no keyword is
 * refused rather than taken as a file name: "tabel" is a typo far more often
 * than a file wanted in the current directory (which ./tabel still gives).
 */
static cm_status_t cm_config_parse_output(const char *name, const char *values, const char *str,
                                          char **out, char *err, size_t errlen)
{
    int index = cm_config_keyword(values, str);
    const char *best, *p;
    size_t best_n = 0, n;
    char *copy;

    if (index < 0 && *str != '\0' && strpbrk(str, "/.") == NULL) {
        best = cm_config_nearest_keyword(values, str, &best_n);
        if (best != NULL) {
            cm_config_err(err, errlen, "%s='%s' is neither %s nor a file path: did you mean %.*s? "
                          "(a file of that name here: ./%s)", name, str, values, (int)best_n, best,
                          str);
        } else {
            cm_config_err(err, errlen, "%s='%s' is neither %s nor a file path (a path has a / or "
                          "a ., e.g. ./%s)", name, str, values, str);
        }
        return CM_ERR_INVALID;
    }
    if (index >= 0) { /* the keyword as the table spells it */
        p    = cm_config_keyword_at(values, index, &n);
        copy = strndup(p, n);
    } else {
        copy = strdup(str);
    }
    if (copy == NULL) {
        cm_config_err(err, errlen, "%s: out of memory", name);
        return CM_ERR_NO_MEMORY;
    }
    *out = copy;
    return CM_OK;
}

static cm_status_t cm_config_parse_ulong(const char *name, const char *str, unsigned long long max,
                                         int base, unsigned long long *out, char *err,
                                         size_t errlen, const char *what)
{
    char *end;
    unsigned long long v;

    while (isspace((unsigned char)*str)) {
        str++;
    }
    if (!isdigit((unsigned char)*str)) {
        goto bad;
    }
    errno = 0;
    v = strtoull(str, &end, base);
    while (isspace((unsigned char)*end)) {
        end++;
    }
    if (errno != 0 || *end != '\0' || v > max) {
        goto bad;
    }
    *out = v;
    return CM_OK;
bad:
    cm_config_err(err, errlen, "%s='%s' is not %s", name, str, what);
    return CM_ERR_INVALID;
}

cm_status_t cm_config_parse(const cm_config_entry_t *e, const char *str, void *dst,
                            char *err, size_t errlen)
{
    unsigned long long v;
    cm_status_t status;

    switch (e->type) {
    case CM_CFG_SIZE: {
        /* The row's "min.." is the least the code behind it can use; below it, a bare
         * number is almost always a forgotten unit (CM_SHARED_SIZE=16 meant 16g). */
        size_t min = 0;
        char lo[32];
        status = cm_config_parse_size(e->name, str, dst, err, errlen);
        if (status != CM_OK || e->values == NULL || sscanf(e->values, "%31[^.]..", lo) != 1 ||
            cm_config_parse_size(e->name, lo, &min, NULL, 0) != CM_OK || *(size_t *)dst >= min) {
            return status;
        }
        if (str[strspn(str, "0123456789 ")] == '\0') {
            cm_config_err(err, errlen, "%s='%s' is %zu bytes, less than the least (%s): a size "
                          "without a unit is bytes; add one, e.g. %s=%sg", e->name, str,
                          *(size_t *)dst, lo, e->name, str + strspn(str, " "));
        } else {
            cm_config_err(err, errlen, "%s='%s' is less than the least (%s)", e->name, str, lo);
        }
        return CM_ERR_INVALID;
    }
    case CM_CFG_TIME:
        return cm_config_parse_time(e->name, str, dst, err, errlen);
    case CM_CFG_BANDWIDTH:
        return cm_config_parse_bandwidth(e->name, str, dst, err, errlen);
    case CM_CFG_BOOL:
        return cm_config_parse_bool(e->name, str, dst, err, errlen);
    case CM_CFG_ENUM:
        return cm_config_parse_enum(e->name, e->values, str, dst, err, errlen);
    case CM_CFG_ADDR:
        status = cm_config_parse_ulong(e->name, str, UINTPTR_MAX, 0, &v, err, errlen,
                                       "an address (e.g. 0x200000000000)");
        if (status == CM_OK) {
            *(uintptr_t *)dst = (uintptr_t)v;
        }
        return status;
    case CM_CFG_UINT: {
        /* The row's range is what the code behind the setting can take. */
        unsigned long long lo = 0, hi = ULONG_MAX;
        char what[96] = "a non-negative integer";
        if (e->values != NULL && sscanf(e->values, "%llu..%llu", &lo, &hi) == 2) {
            snprintf(what, sizeof(what), "an integer in %s", e->values);
        }
        status = cm_config_parse_ulong(e->name, str, hi, 10, &v, err, errlen, what);
        if (status == CM_OK && v < lo) {
            cm_config_err(err, errlen, "%s='%s' is not %s", e->name, str, what);
            status = CM_ERR_INVALID;
        }
        if (status == CM_OK) {
            *(unsigned long *)dst = (unsigned long)v;
        }
        return status;
    }
    case CM_CFG_OUTPUT:
        return cm_config_parse_output(e->name, e->values, str, dst, err, errlen);
    case CM_CFG_STRING: {
        char *copy = strdup(str);
        if (copy == NULL) {
            cm_config_err(err, errlen, "%s: out of memory", e->name);
            return CM_ERR_NO_MEMORY;
        }
        *(char **)dst = copy;
        return CM_OK;
    }
    }
    cm_config_err(err, errlen, "%s: unknown type", e->name);
    return CM_ERR_INVALID;
}

static const char *cm_config_lookup(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (; envp != NULL && *envp != NULL; envp++) {
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=') {
            return *envp + n + 1;
        }
    }
    return NULL;
}

cm_status_t cm_config_load(cm_config_t *cfg, char *const *envp, char *err, size_t errlen)
{
    cm_status_t status;

    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < CM_CONFIG_NUM; i++) {
        const cm_config_entry_t *e = &cm_config_entries[i];
        const char *value = cm_config_lookup(envp, e->name);
        void *dst = (char *)cfg + e->offset;

        cfg->raw[i] = value;
        status = cm_config_parse(e, (value != NULL) ? value : e->defval, dst, err, errlen);
        if (status != CM_OK) {
            cm_config_release(cfg);
            return status;
        }
    }
    return CM_OK;
}

void cm_config_release(cm_config_t *cfg)
{
    for (size_t i = 0; i < CM_CONFIG_NUM; i++) {
        if (cm_config_entries[i].type == CM_CFG_STRING ||
            cm_config_entries[i].type == CM_CFG_OUTPUT) {
            char **p = (char **)((char *)cfg + cm_config_entries[i].offset);
            free(*p);
            *p = NULL;
        }
    }
}

/* Levenshtein distance, case-insensitive (names are short: a row of ints). */
size_t cm_config_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t row[64], prev, tmp;

    if (lb >= sizeof(row) / sizeof(row[0])) {
        return (size_t)-1;
    }
    for (size_t j = 0; j <= lb; j++) {
        row[j] = j;
    }
    for (size_t i = 1; i <= la; i++) {
        prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = (toupper((unsigned char)a[i - 1]) != toupper((unsigned char)b[j - 1]));
            size_t best = prev + cost;
            if (row[j] + 1 < best) {
                best = row[j] + 1;
            }
            if (row[j - 1] + 1 < best) {
                best = row[j - 1] + 1;
            }
            tmp = row[j];
            row[j] = best;
            prev = tmp;
        }
    }
    return row[lb];
}

bool cm_config_near(const char *word, size_t distance)
{
    return distance <= strlen(word) / 3 + 1; /* a few typos, not a different word */
}

const char *cm_config_suggest(const char *name)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;

    for (size_t i = 0; i < CM_CONFIG_NUM; i++) {
        size_t d = cm_config_distance(name, cm_config_entries[i].name);
        if (d < best_d) {
            best_d = d;
            best = cm_config_entries[i].name;
        }
    }
    return cm_config_near(name, best_d) ? best : NULL;
}

/*
 * CM_* names the project's scripts read, not the library: the experiments', the
 * tests' and the virtual machines'. They pass through a job's environment.
 */
static const char *const cm_config_tool_names[] = {"CM_RESULTS_DIR", "CM_BENCH", "CM_VM_*",
                                                   "CM_DEB_*", NULL};

bool cm_config_is_tool_name(const char *name)
{
    for (size_t i = 0; cm_config_tool_names[i] != NULL; i++) {
        const char *t = cm_config_tool_names[i];
        size_t n = strlen(t);
        if ((t[n - 1] == '*') ? (strncmp(name, t, n - 1) == 0) : (strcmp(name, t) == 0)) {
            return true;
        }
    }
    return false;
}

int cm_config_check_unknown(char *const *envp,
                            void (*warn)(const char *name, const char *suggestion, void *arg),
                            void *arg)
{
    int count = 0;
    char name[128];

    for (; envp != NULL && *envp != NULL; envp++) {
        const char *eq = strchr(*envp, '=');
        size_t n = (eq != NULL) ? (size_t)(eq - *envp) : strlen(*envp);

        if (strncmp(*envp, CM_CONFIG_PREFIX, strlen(CM_CONFIG_PREFIX)) != 0) {
            continue;
        }
        if (n >= sizeof(name)) {
            n = sizeof(name) - 1;
        }
        memcpy(name, *envp, n);
        name[n] = '\0';
        if (cm_config_find(name) == NULL && !cm_config_is_tool_name(name)) {
            count++;
            if (warn != NULL) {
                warn(name, cm_config_suggest(name), arg);
            }
        }
    }
    return count;
}

typedef struct {
    char  *buf;
    size_t len;
    int    count;
} cm_config_unknown_acc_t;

static void cm_config_unknown_add(const char *name, const char *suggestion, void *arg)
{
    cm_config_unknown_acc_t *acc = arg;
    size_t used = strlen(acc->buf);

    if (used + 1 >= acc->len) {
        return;
    }
    snprintf(acc->buf + used, acc->len - used, "%s%s%s%s%s", (acc->count++ > 0) ? ", " : "", name,
             suggestion ? " (did you mean " : "", suggestion ? suggestion : "",
             suggestion ? "?)" : "");
}

int cm_config_unknown_line(char *const *envp, char *buf, size_t len)
{
    char names[384] = "";
    cm_config_unknown_acc_t acc = {names, sizeof(names), 0};
    int count = cm_config_check_unknown(envp, cm_config_unknown_add, &acc);

    if (count > 0) {
        cm_config_err(buf, len, "unknown setting%s %s; `cm_info -c` lists every setting",
                      (count > 1) ? "s" : "", names);
    }
    return count;
}

void cm_config_format(const cm_config_entry_t *e, const void *src, char *buf, size_t len)
{
    switch (e->type) {
    case CM_CFG_SIZE:
        snprintf(buf, len, "%zu", *(const size_t *)src);
        break;
    case CM_CFG_TIME:
        snprintf(buf, len, "%" PRIu64 "ns", *(const uint64_t *)src);
        break;
    case CM_CFG_BANDWIDTH:
        if (*(const double *)src == 0) {
            snprintf(buf, len, "unlimited");
        } else {
            snprintf(buf, len, "%.6gB/s", *(const double *)src);
        }
        break;
    case CM_CFG_BOOL:
        snprintf(buf, len, "%s", *(const bool *)src ? "yes" : "no");
        break;
    case CM_CFG_ENUM: {
        size_t n;
        const char *p = cm_config_keyword_at(e->values, *(const int *)src, &n);
        if (p == NULL) {
            snprintf(buf, len, "?");
        } else {
            snprintf(buf, len, "%.*s", (int)n, p);
        }
        break;
    }
    case CM_CFG_ADDR:
        snprintf(buf, len, "0x%" PRIxPTR, *(const uintptr_t *)src);
        break;
    case CM_CFG_UINT:
        snprintf(buf, len, "%lu", *(const unsigned long *)src);
        break;
    case CM_CFG_STRING:
    case CM_CFG_OUTPUT:
        snprintf(buf, len, "%s", (*(char *const *)src != NULL) ? *(char *const *)src : "");
        break;
    }
}

/* Writes text as "# "-prefixed lines of at most width columns. */
static void cm_config_wrap(FILE *out, const char *text, size_t width)
{
    while (*text != '\0') {
        size_t n = strlen(text);
        if (n > width) {
            n = width;
            while (n > 0 && text[n] != ' ') {
                n--;
            }
            if (n == 0) {
                n = width;
            }
        }
        fprintf(out, "# %.*s\n", (int)n, text);
        text += n;
        while (*text == ' ') {
            text++;
        }
    }
}

void cm_config_dump(FILE *out, const cm_config_t *cfg)
{
    const char *category = "";
    char value[256];

    fprintf(out, "# Cashmere-RMA settings: environment variables, shown with their current values.\n");
    for (size_t i = 0; i < CM_CONFIG_NUM; i++) {
        const cm_config_entry_t *e = &cm_config_entries[i];

        if (strcmp(category, e->category) != 0) {
            category = e->category;
            fprintf(out, "\n# ---- %s ----\n", category);
        }
        fprintf(out, "#\n");
        cm_config_wrap(out, e->doc, 76);
        fprintf(out, "# type: %s", cm_config_type_names[e->type]);
        if (e->type == CM_CFG_ENUM || (e->type == CM_CFG_UINT && e->values != NULL)) {
            fprintf(out, " (%.*s)", cm_config_list_len(e->values), e->values);
        } else if (e->type == CM_CFG_OUTPUT) {
            fprintf(out, " (%s or a file path)", e->values);
        }
        fprintf(out, ", default: %s", (*e->defval != '\0') ? e->defval : "(empty)");
        if (cfg->raw[i] != NULL) {
            cm_config_format(e, (const char *)cfg + e->offset, value, sizeof(value));
            fprintf(out, ", set in the environment (parsed: %s)", value);
        }
        fprintf(out, "\n#\n%s=%s\n", e->name, (cfg->raw[i] != NULL) ? cfg->raw[i] : e->defval);
    }
}
