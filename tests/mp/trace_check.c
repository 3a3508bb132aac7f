/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace_check FILE NPROCS: FILE holds the Trace Event Format as Chrome and Perfetto read it
 * (the "Trace Event Format" document, JSON Object Format), checked rule by rule, independently
 * of cm_trace that wrote it:
 *   - an object whose traceEvents is an array; displayTimeUnit, if given, "ms" or "ns";
 *   - every event an object with a known phase (ph), integer pid and tid, and a name where
 *     the phase needs one; a number ts >= 0 except on metadata;
 *   - complete events (X) a number dur >= 0; instants (i, I) a scope of g, p or t;
 *   - metadata (M) of a known name with its argument;
 *   - begin and end events (B, E) of each thread in time order, each end closing a begin,
 *     none left open; flow events (s, t, f) an id;
 *   - args, where present, an object;
 *   - the processes are ranks 0..NPROCS-1, each named.
 * Prints each kind of event with its count ("X read fault 23"), for the test to compare with
 * the job's statistics; exits 1 naming the first event that breaks a rule.
 */
#include "config.h"
#include "util/cm_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 4096
#define MAX_NAMES   256

static int nevents;

static void bad(const char *why, const char *detail)
{
    fprintf(stderr, "trace_check: event %d: %s%s%s\n", nevents, why, detail ? ": " : "",
            detail ? detail : "");
    exit(1);
}

static const cm_json_t *get(const cm_json_t *o, const char *k)
{
    return cm_json_get(o, k);
}

static bool is_number(const cm_json_t *v)
{
    return v != NULL && v->type == CM_JSON_NUMBER;
}

static bool is_int(const cm_json_t *v)
{
    return is_number(v) && strspn(v->text, "-0123456789") == strlen(v->text);
}

static struct {
    long   pid, tid;
    int    depth;
    double last_ts; /* of the thread's last B or E */
} threads[MAX_THREADS];
static int nthreads;

static int thread_of(long pid, long tid)
{
    for (int i = 0; i < nthreads; i++) {
        if (threads[i].pid == pid && threads[i].tid == tid) {
            return i;
        }
    }
    if (nthreads == MAX_THREADS) {
        bad("more threads than this checker keeps", NULL);
    }
    threads[nthreads].pid     = pid;
    threads[nthreads].tid     = tid;
    threads[nthreads].last_ts = -1;
    return nthreads++;
}

static struct {
    char name[96];
    long count;
} names[MAX_NAMES];
static int nnames;

static void count(const char *ph, const char *name)
{
    char key[96];

    snprintf(key, sizeof(key), "%s %s", ph, name);
    for (int i = 0; i < nnames; i++) {
        if (strcmp(names[i].name, key) == 0) {
            names[i].count++;
            return;
        }
    }
    if (nnames < MAX_NAMES) {
        snprintf(names[nnames].name, sizeof(names[nnames].name), "%s", key);
        names[nnames++].count = 1;
    }
}

int main(int argc, char **argv)
{
    FILE *f;
    char *text, err[256];
    long len, nprocs;
    cm_json_t *root;
    const cm_json_t *events, *unit, *e;
    bool *named;

    if (argc != 3 || (nprocs = strtol(argv[2], NULL, 10)) <= 0) {
        fprintf(stderr, "usage: trace_check FILE NPROCS\n");
        return 2;
    }
    f = fopen(argv[1], "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0) {
        perror(argv[1]);
        return 1;
    }
    rewind(f);
    text = malloc((size_t)len + 1);
    if (text == NULL || fread(text, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "trace_check: cannot read %s\n", argv[1]);
        return 1;
    }
    fclose(f);
    if (cm_json_parse(text, (size_t)len, &root, err, sizeof(err)) != CM_OK) {
        fprintf(stderr, "trace_check: %s: not JSON: %s\n", argv[1], err);
        return 1;
    }
    if (root->type != CM_JSON_OBJECT) {
        bad("the file is not a JSON object (the JSON Object Format)", NULL);
    }
    events = get(root, "traceEvents");
    if (events == NULL || events->type != CM_JSON_ARRAY) {
        bad("no traceEvents array", NULL);
    }
    unit = get(root, "displayTimeUnit");
    if (unit != NULL && (unit->type != CM_JSON_STRING ||
                         (strcmp(unit->text, "ms") != 0 && strcmp(unit->text, "ns") != 0))) {
        bad("displayTimeUnit is neither \"ms\" nor \"ns\"", NULL);
    }
    named = calloc((size_t)nprocs, sizeof(*named));
    for (e = events->child; e != NULL; e = e->next, nevents++) {
        const cm_json_t *ph = get(e, "ph"), *name = get(e, "name"), *pid = get(e, "pid"),
                        *tid = get(e, "tid"), *ts = get(e, "ts"), *args = get(e, "args");
        const char *p;
        long pidv;

        if (e->type != CM_JSON_OBJECT) {
            bad("not an object", NULL);
        }
        if (ph == NULL || ph->type != CM_JSON_STRING || strlen(ph->text) != 1 ||
            strchr("BEXiIMstfCbenNOD", ph->text[0]) == NULL) {
            bad("no phase (ph) of the format", ph && ph->type == CM_JSON_STRING ? ph->text : NULL);
        }
        p = ph->text;
        if (!is_int(pid) || !is_int(tid)) {
            bad("pid and tid must be integers", p);
        }
        pidv = strtol(pid->text, NULL, 10);
        if (pidv < 0 || pidv >= nprocs) {
            bad("a pid that is no rank of the job", pid->text);
        }
        if (*p != 'E' && (name == NULL || name->type != CM_JSON_STRING || name->text[0] == '\0')) {
            bad("no name", p);
        }
        if (args != NULL && args->type != CM_JSON_OBJECT) {
            bad("args is not an object", p);
        }
        if (*p == 'M') {
            const cm_json_t *a = args ? get(args, "name") : NULL;
            if (strcmp(name->text, "process_name") == 0 || strcmp(name->text, "thread_name") == 0) {
                if (a == NULL || a->type != CM_JSON_STRING) {
                    bad("a name metadata event without args.name", name->text);
                }
                if (strcmp(name->text, "process_name") == 0) {
                    named[pidv] = true;
                }
            } else if (strcmp(name->text, "process_sort_index") == 0 ||
                       strcmp(name->text, "thread_sort_index") == 0) {
                if (args == NULL || !is_int(get(args, "sort_index"))) {
                    bad("a sort metadata event without an integer args.sort_index", name->text);
                }
            } else {
                bad("metadata of an unknown name", name->text);
            }
            count(p, name->text);
            continue;
        }
        if (!is_number(ts) || strtod(ts->text, NULL) < 0) {
            bad("no ts, or a negative one", p);
        }
        if (*p == 'X') {
            const cm_json_t *dur = get(e, "dur");
            if (!is_number(dur) || strtod(dur->text, NULL) < 0) {
                bad("a complete event without a dur >= 0", name->text);
            }
        }
        if (*p == 'i' || *p == 'I') {
            const cm_json_t *s = get(e, "s");
            if (s != NULL && (s->type != CM_JSON_STRING || strlen(s->text) != 1 ||
                              strchr("gpt", s->text[0]) == NULL)) {
                bad("an instant's scope is not g, p or t", name->text);
            }
        }
        if ((*p == 's' || *p == 't' || *p == 'f') && get(e, "id") == NULL) {
            bad("a flow event without an id", name->text);
        }
        if (*p == 'B' || *p == 'E') {
            int t = thread_of(pidv, strtol(tid->text, NULL, 10));
            double tv = strtod(ts->text, NULL);
            if (tv < threads[t].last_ts) {
                bad("a begin or end event earlier than the thread's previous one", p);
            }
            threads[t].last_ts = tv;
            if (*p == 'B') {
                threads[t].depth++;
            } else if (threads[t].depth-- == 0) {
                bad("an end event with no begin open on its thread", NULL);
            }
        }
        count(p, (*p == 'E') ? "(end)" : name->text);
    }
    for (int t = 0; t < nthreads; t++) {
        if (threads[t].depth != 0) {
            fprintf(stderr, "trace_check: pid %ld tid %ld: %d begin events never ended\n",
                    threads[t].pid, threads[t].tid, threads[t].depth);
            return 1;
        }
    }
    for (long r = 0; r < nprocs; r++) {
        if (!named[r]) {
            fprintf(stderr, "trace_check: rank %ld has no process_name\n", r);
            return 1;
        }
    }
    for (int i = 0; i < nnames; i++) {
        printf("%s %ld\n", names[i].name, names[i].count);
    }
    printf("events %d\n", nevents);
    cm_json_free(root);
    free(text);
    free(named);
    return 0;
}
