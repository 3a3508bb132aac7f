/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_stats's reader: statistics files (schema cashmere-stats/1) into a table of rows and
 * columns, and the table as CSV. Apart from main so that libFuzzer drives the reader
 * (tests/fuzz/fuzz_stats.c): a malformed file is an error returned, never a crash.
 */
#include "config.h"
#include "src/tools/cm_stats_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The columns of the schema's run and process members (docs/STATS.md), in its order: always
 * there, whichever files are read, so that a CSV of TreadMarks runs only has the variant's
 * and the mechanisms' columns too (empty). A file's other members follow, as first seen. */
static const char *const cm_stats_run_columns[] = {
    "file", "schema", "program", "binary", "args", "protocol", "variant", "mechanisms.fill",
    "mechanisms.write", "mechanisms.merge", "mechanisms.build", "mechanisms.fabric",
    "description", "job.nprocs", "job.nodes", "job.procs_per_node", "job.page_size", "library.version",
    "library.commit", "machine.hostname", "machine.cores", "machine.kernel", "ucx.version",
    "ucx.tls", "ucx.transports", "time.start", "time.end",
};
static const char *const cm_stats_process_columns[] = {
    "rank", "host", "local_procs", "pid", "transports",
};

/* Out of memory: the tool has nothing better to do than say so. */
static void cm_stats_oom(void)
{
    fputs("cm_stats: out of memory\n", stderr);
    exit(1);
}

void *cm_stats_grow(void *p, size_t n, size_t size)
{
    p = realloc(p, (n ? n : 1) * size);
    if (p == NULL) {
        cm_stats_oom();
    }
    return p;
}

static char *cm_stats_strdup(const char *s)
{
    char *d = strdup(s);
    if (d == NULL) {
        cm_stats_oom();
    }
    return d;
}

/* The column's index, added at the end when new. */
size_t cm_stats_column(cm_stats_table_t *t, const char *name)
{
    for (size_t i = 0; i < t->ncolumns; i++) {
        if (strcmp(t->columns[i], name) == 0) {
            return i;
        }
    }
    t->columns = cm_stats_grow(t->columns, t->ncolumns + 1, sizeof(*t->columns));
    t->columns[t->ncolumns] = cm_stats_strdup(name);
    return t->ncolumns++;
}

/* Some column is name.something: name is an object of the schema (null here: "mechanisms"). */
static bool cm_stats_is_object(const cm_stats_table_t *t, const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; i < t->ncolumns; i++) {
        if (strncmp(t->columns[i], name, n) == 0 && t->columns[i][n] == '.') {
            return true;
        }
    }
    return false;
}

static void cm_stats_set(cm_stats_table_t *t, cm_stats_row_t *row, const char *name, const char *value)
{
    size_t c;

    if (value == NULL && cm_stats_is_object(t, name)) {
        return; /* its members' columns stay empty */
    }
    c = cm_stats_column(t, name);

    if (c >= row->ncells) {
        row->cells = cm_stats_grow(row->cells, c + 1, sizeof(*row->cells));
        memset(row->cells + row->ncells, 0, (c + 1 - row->ncells) * sizeof(*row->cells));
        row->ncells = c + 1;
    }
    free(row->cells[c]);
    row->cells[c] = (value != NULL) ? cm_stats_strdup(value) : NULL;
}

/* A scalar's text; NULL for null (an empty field). Arrays of scalars: joined with spaces. */
static char *cm_stats_scalar(const cm_json_t *v, bool *is_scalar)
{
    *is_scalar = true;
    switch (v->type) {
    case CM_JSON_NULL:   return NULL;
    case CM_JSON_FALSE:  return cm_stats_strdup("false");
    case CM_JSON_TRUE:   return cm_stats_strdup("true");
    case CM_JSON_NUMBER:
    case CM_JSON_STRING: return cm_stats_strdup(v->text);
    case CM_JSON_ARRAY: {
        size_t len = 1;
        char *out;
        for (const cm_json_t *e = v->child; e != NULL; e = e->next) {
            if (e->type != CM_JSON_STRING && e->type != CM_JSON_NUMBER) {
                *is_scalar = false;
                return NULL;
            }
            len += strlen(e->text) + 1;
        }
        out = cm_stats_grow(NULL, len, 1);
        out[0] = '\0';
        for (const cm_json_t *e = v->child; e != NULL; e = e->next) {
            strcat(out, e->text);
            if (e->next != NULL) {
                strcat(out, " ");
            }
        }
        return out;
    }
    default:
        *is_scalar = false;
        return NULL;
    }
}

/*
 * v's scalars into row. by_path: named by their path from the top ("job.nprocs"), where the
 * top's "processes" and "total" are left out (they hold the values); else by their own name
 * (a process's "rank", a timer's "fault_ns").
 */
static void cm_stats_flatten(cm_stats_table_t *t, cm_stats_row_t *row, const cm_json_t *v,
                             const char *path, bool by_path)
{
    for (const cm_json_t *m = v->child; m != NULL; m = m->next) {
        char *name, *text;
        bool scalar;
        size_t len = strlen(path) + strlen(m->key) + 2;

        if (by_path && path[0] == '\0' &&
            (strcmp(m->key, "processes") == 0 || strcmp(m->key, "total") == 0)) {
            continue;
        }

        name = cm_stats_grow(NULL, len, 1);
        snprintf(name, len, "%s%s%s", (by_path && path[0]) ? path : "", (by_path && path[0]) ? "." : "",
                 m->key);
        if (m->type == CM_JSON_OBJECT) {
            cm_stats_flatten(t, row, m, name, by_path);
        } else {
            text = cm_stats_scalar(m, &scalar);
            if (scalar) {
                cm_stats_set(t, row, name, text);
            }
            free(text);
        }
        free(name);
    }
}

void cm_stats_table_init(cm_stats_table_t *t, bool per_process)
{
    memset(t, 0, sizeof(*t));
    for (size_t i = 0; i < sizeof(cm_stats_run_columns) / sizeof(cm_stats_run_columns[0]); i++) {
        cm_stats_column(t, cm_stats_run_columns[i]);
    }
    for (size_t i = 0; per_process && i < sizeof(cm_stats_process_columns) /
                                               sizeof(cm_stats_process_columns[0]); i++) {
        cm_stats_column(t, cm_stats_process_columns[i]);
    }
}

static void cm_stats_row_free(cm_stats_row_t *row)
{
    for (size_t c = 0; c < row->ncells; c++) {
        free(row->cells[c]);
    }
    free(row->cells);
}

void cm_stats_table_free(cm_stats_table_t *t)
{
    for (size_t r = 0; r < t->nrows; r++) {
        cm_stats_row_free(&t->rows[r]);
    }
    for (size_t c = 0; c < t->ncolumns; c++) {
        free(t->columns[c]);
    }
    free(t->rows);
    free(t->columns);
    memset(t, 0, sizeof(*t));
}

cm_status_t cm_stats_table_add(cm_stats_table_t *t, const char *name, const char *text,
                               size_t len, bool per_process, char *err, size_t errlen)
{
    char jerr[256];
    const cm_json_t *schema, *total, *procs;
    cm_json_t *top;
    cm_stats_row_t run = {NULL, 0};

    if (cm_json_parse(text, len, &top, jerr, sizeof(jerr)) != CM_OK) {
        snprintf(err, errlen, "%s: not JSON: %s", name, jerr);
        return CM_ERR_INVALID;
    }
    schema = cm_json_get(top, "schema");
    if (schema == NULL || schema->type != CM_JSON_STRING ||
        strncmp(schema->text, "cashmere-stats/", 15) != 0) {
        snprintf(err, errlen, "%s: not a statistics file (no \"schema\": \"%s\")", name,
                 CM_STATS_SCHEMA);
        goto err_free;
    }
    if (strcmp(schema->text, CM_STATS_SCHEMA) != 0) {
        snprintf(err, errlen, "%s: schema %s: this cm_stats reads %s", name, schema->text,
                 CM_STATS_SCHEMA);
        goto err_free;
    }
    total = cm_json_get(top, "total");
    procs = cm_json_get(top, "processes");
    if (total == NULL || total->type != CM_JSON_OBJECT || procs == NULL ||
        procs->type != CM_JSON_ARRAY) {
        snprintf(err, errlen, "%s: no \"total\" object or \"processes\" array", name);
        goto err_free;
    }
    for (const cm_json_t *p = procs->child; p != NULL; p = p->next) {
        if (p->type != CM_JSON_OBJECT) {
            snprintf(err, errlen, "%s: a process that is not an object", name);
            goto err_free;
        }
    }

    /* The run's members: all but the two that hold the values. */
    cm_stats_set(t, &run, "file", name);
    cm_stats_flatten(t, &run, top, "", true);
    if (!per_process) {
        cm_stats_flatten(t, &run, total, "", false);
        t->rows = cm_stats_grow(t->rows, t->nrows + 1, sizeof(*t->rows));
        t->rows[t->nrows++] = run;
    } else {
        for (const cm_json_t *p = procs->child; p != NULL; p = p->next) {
            cm_stats_row_t row = {NULL, 0};
            for (size_t c = 0; c < run.ncells; c++) {
                if (run.cells[c] != NULL) {
                    cm_stats_set(t, &row, t->columns[c], run.cells[c]);
                }
            }
            cm_stats_flatten(t, &row, p, "", false);
            t->rows = cm_stats_grow(t->rows, t->nrows + 1, sizeof(*t->rows));
            t->rows[t->nrows++] = row;
        }
        cm_stats_row_free(&run);
    }
    cm_json_free(top);
    return CM_OK;

err_free:
    cm_json_free(top);
    return CM_ERR_INVALID;
}

/* One CSV field (RFC 4180): quoted where it holds a comma, a quote or a line break. */
static void cm_stats_field(FILE *out, const char *s)
{
    if (s == NULL) {
        return;
    }
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, out);
        return;
    }
    putc('"', out);
    for (; *s != '\0'; s++) {
        if (*s == '"') {
            putc('"', out);
        }
        putc(*s, out);
    }
    putc('"', out);
}

void cm_stats_table_print(FILE *out, const cm_stats_table_t *t, const size_t *cols,
                          size_t ncols)
{
    for (size_t i = 0; i < ncols; i++) {
        fputs(i ? "," : "", out);
        cm_stats_field(out, t->columns[cols[i]]);
    }
    putc('\n', out);
    for (size_t r = 0; r < t->nrows; r++) {
        const cm_stats_row_t *row = &t->rows[r];
        for (size_t i = 0; i < ncols; i++) {
            fputs(i ? "," : "", out);
            cm_stats_field(out, cols[i] < row->ncells ? row->cells[cols[i]] : NULL);
        }
        putc('\n', out);
    }
}
