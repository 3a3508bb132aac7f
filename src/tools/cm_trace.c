/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_trace: a job's event trace (CM_TRACE=PREFIX: one PREFIX.RANK.cmtrace per process,
 * util/cm_trace.h) on one clock, as Chrome/Perfetto trace-event JSON, as CSV, or summed up.
 *
 * Each process's times move to rank 0's clock by the offsets its two clock records measured
 * (at start and at end; in between, the offset is interpolated, so a drift between them is
 * followed), then the job's first event is time 0. The JSON has one process per rank, one
 * track per thread: the protocol's events as complete events ("X") with their page, lock,
 * peer and bytes as arguments, the statistics' phases as begin/end pairs ("B"/"E"), each
 * allocation as an instant ("i").
 */
#include "config.h"
#include "util/cm_json.h"
#include "util/cm_stats.h"
#include "util/cm_trace.h"

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
#define KIND_NAME_(n, name, doc) name,
    CM_TRACE_KINDS(KIND_NAME_)
#undef KIND_NAME_
};

/* TreadMarks's messages (src/protocols/treadmarks/cm_tmk_wire.h), by type. */
static const char *const msg_names[] = {
    "message", "lock request", "lock forward", "lock grant", "barrier arrival",
    "barrier departure", "diff request", "diff reply", "page request", "page reply",
    "gc done", "gc go",
};

static const char *msg_name(uint64_t obj)
{
    unsigned type = (unsigned)(obj & 0xff);
    return (type < sizeof(msg_names) / sizeof(msg_names[0])) ? msg_names[type] : "message";
}

static const char *const timer_names[] = {
#define TIMER_NAME_(name, doc) #name,
    CM_STATS_TIMERS(TIMER_NAME_)
#undef TIMER_NAME_
};

typedef struct {
    char              *path;
    cm_trace_header_t h;
    cm_trace_rec_t    *rec;
    size_t            n;
    /* The clock: offset to rank 0 at two moments of this process's clock. */
    int               nclock;
    uint64_t          at[2];
    int64_t           off[2];
    uint64_t          err[2];
} proc_t;

/* The messages each rank sent each other, by their number (seq - 1): for the flows. */
typedef struct {
    const cm_trace_rec_t **rec;
    size_t               n;
} sends_t;

static proc_t *procs;
static sends_t *sends; /* [src * nprocs + dst] */
static int nprocs_read;
static uint64_t t_origin = UINT64_MAX; /* the job's first event, on rank 0's clock */

static void die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void die(int code, const char *fmt, ...)
{
    va_list ap;

    fputs("cm_trace: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

static void usage(FILE *out, int code)
{
    fprintf(out,
            "usage: cm_trace [--json FILE] [--csv FILE] PREFIX\n"
            "  PREFIX      what CM_TRACE was set to: reads PREFIX.RANK.cmtrace of every rank\n"
            "  --json FILE Chrome/Perfetto trace-event JSON (- for standard output): open it in\n"
            "              ui.perfetto.dev or chrome://tracing\n"
            "  --csv FILE  one row per event: rank,thread,event,start_us,dur_us,object,peer,bytes,seq\n"
            "Without --json or --csv: each rank's events by kind and its clock's offset and error.\n");
    exit(code);
}

static void load(proc_t *p)
{
    FILE *f = fopen(p->path, "rb");
    long size;
    size_t body;

    if (f == NULL) {
        die(1, "%s: %s", p->path, strerror(errno));
    }
    if (fread(&p->h, sizeof(p->h), 1, f) != 1 || memcmp(p->h.magic, CM_TRACE_MAGIC, 8) != 0) {
        die(1, "%s: not a Cashmere-RMA trace (no %s header)", p->path, CM_TRACE_MAGIC);
    }
    if (p->h.version != CM_TRACE_VERSION || p->h.rec_size != sizeof(cm_trace_rec_t)) {
        die(1, "%s: trace version %" PRIu32 " with %" PRIu32 "-byte records; this cm_trace reads "
            "version %d with %zu-byte records", p->path, p->h.version, p->h.rec_size,
            CM_TRACE_VERSION, sizeof(cm_trace_rec_t));
    }
    p->h.host[sizeof(p->h.host) - 1]         = '\0';
    p->h.protocol[sizeof(p->h.protocol) - 1] = '\0';
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0) {
        die(1, "%s: %s", p->path, strerror(errno));
    }
    body = (size_t)size - sizeof(p->h);
    if (body % sizeof(cm_trace_rec_t) != 0) {
        /* A process killed while writing: keep the whole records. */
        fprintf(stderr, "cm_trace: %s ends in a partial record (the process ended while "
                "writing); it is left out\n", p->path);
    }
    p->n   = body / sizeof(cm_trace_rec_t);
    p->rec = malloc((p->n ? p->n : 1) * sizeof(*p->rec));
    if (p->rec == NULL) {
        die(1, "%s: out of memory for %zu events", p->path, p->n);
    }
    if (fseek(f, (long)sizeof(p->h), SEEK_SET) != 0 ||
        fread(p->rec, sizeof(*p->rec), p->n, f) != p->n) {
        die(1, "%s: cannot read its events", p->path);
    }
    fclose(f);
    for (size_t i = 0; i < p->n; i++) {
        const cm_trace_rec_t *r = &p->rec[i];
        if (r->kind >= CM_TRACE_NKINDS) {
            die(1, "%s: event %zu has kind %u, which this cm_trace does not know", p->path, i,
                r->kind);
        }
        if (r->kind == CM_TRACE_CLOCK && p->nclock < 2) {
            p->at[p->nclock]  = r->t;
            p->off[p->nclock] = (int64_t)r->obj;
            p->err[p->nclock] = r->dur;
            p->nclock++;
        }
    }
}

/* t (this process's clock) on rank 0's. */
static uint64_t global_ns(const proc_t *p, uint64_t t)
{
    double off;

    if (p->nclock == 0) {
        return t;
    }
    if (p->nclock == 1 || p->at[1] == p->at[0]) {
        off = (double)p->off[0];
    } else {
        double slope = (double)(p->off[1] - p->off[0]) / ((double)p->at[1] - (double)p->at[0]);
        off          = (double)p->off[0] + slope * ((double)t - (double)p->at[0]);
    }
    return (uint64_t)((double)t + off);
}

static double us(const proc_t *p, uint64_t t)
{
    return (double)(global_ns(p, t) - t_origin) / 1e3;
}

static int cmp_rank(const void *a, const void *b)
{
    return ((const proc_t *)a)->h.rank - ((const proc_t *)b)->h.rank;
}

static void read_all(const char *prefix)
{
    char pattern[4200];
    glob_t g;

    snprintf(pattern, sizeof(pattern), "%s.*.cmtrace", prefix);
    if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc == 0) {
        die(1, "no trace at %s (files %s): was the job run with CM_TRACE=%s?", prefix, pattern,
            prefix);
    }
    procs = calloc(g.gl_pathc, sizeof(*procs));
    if (procs == NULL) {
        die(1, "out of memory");
    }
    for (size_t i = 0; i < g.gl_pathc; i++) {
        procs[i].path = strdup(g.gl_pathv[i]);
        load(&procs[i]);
    }
    nprocs_read = (int)g.gl_pathc;
    globfree(&g);
    qsort(procs, (size_t)nprocs_read, sizeof(*procs), cmp_rank);
    for (int i = 0; i < nprocs_read; i++) {
        if (procs[i].h.nprocs != procs[0].h.nprocs || procs[i].h.rank != i) {
            die(1, "%s: rank %d of %d, but the traces at %s are of ranks 0..%d of a job of %d: "
                "files of different jobs, or some missing", procs[i].path, procs[i].h.rank,
                procs[i].h.nprocs, prefix, nprocs_read - 1, procs[0].h.nprocs);
        }
        for (size_t k = 0; k < procs[i].n; k++) {
            uint64_t g0 = global_ns(&procs[i], procs[i].rec[k].t);
            if (procs[i].rec[k].kind != CM_TRACE_CLOCK && g0 < t_origin) {
                t_origin = g0;
            }
        }
    }
    if (nprocs_read != procs[0].h.nprocs) {
        die(1, "%d traces at %s, but the job had %d processes: some are missing", nprocs_read,
            prefix, procs[0].h.nprocs);
    }
    if (t_origin == UINT64_MAX) {
        t_origin = 0;
    }
}

static FILE *open_out(const char *path)
{
    FILE *f;

    if (strcmp(path, "-") == 0) {
        return stdout;
    }
    f = fopen(path, "w");
    if (f == NULL) {
        die(1, "%s: %s", path, strerror(errno));
    }
    return f;
}

static void close_out(FILE *f, const char *path)
{
    if (ferror(f) || (f != stdout && fclose(f) != 0) || (f == stdout && fflush(f) != 0)) {
        die(1, "%s: write failed", path);
    }
}

/* The event's category: the lane it belongs to in a timeline. */
static const char *category(unsigned kind)
{
    switch (kind) {
    case CM_TRACE_FAULT_READ: case CM_TRACE_FAULT_WRITE: case CM_TRACE_FETCH:
        return "fault";
    case CM_TRACE_LOCK_WAIT: case CM_TRACE_LOCK_HOLD:
        return "lock";
    case CM_TRACE_BARRIER:
        return "barrier";
    case CM_TRACE_MSG_SEND: case CM_TRACE_MSG_QUEUE: case CM_TRACE_MSG_SERVE:
        return "message";
    case CM_TRACE_PHASE_BEGIN: case CM_TRACE_PHASE_END:
        return "phase";
    default:
        return "protocol";
    }
}

static const char *object_name(unsigned kind)
{
    switch (kind) {
    case CM_TRACE_LOCK_WAIT: case CM_TRACE_LOCK_HOLD:
        return "lock";
    case CM_TRACE_BARRIER:
        return "barrier";
    default:
        return "page";
    }
}

static void index_sends(void)
{
    sends = calloc((size_t)nprocs_read * (size_t)nprocs_read, sizeof(*sends));
    if (sends == NULL) {
        die(1, "out of memory");
    }
    for (int i = 0; i < nprocs_read; i++) {
        for (size_t k = 0; k < procs[i].n; k++) {
            const cm_trace_rec_t *r = &procs[i].rec[k];
            sends_t *s;
            if (r->kind != CM_TRACE_MSG_SEND || r->peer < 0 || r->peer >= nprocs_read ||
                r->seq == 0) {
                continue;
            }
            s = &sends[(size_t)i * (size_t)nprocs_read + (size_t)r->peer];
            if (r->seq > s->n) {
                size_t n = (r->seq > 2 * s->n) ? r->seq : 2 * s->n;
                const cm_trace_rec_t **g = realloc(s->rec, n * sizeof(*g));
                if (g == NULL) {
                    die(1, "out of memory");
                }
                memset(g + s->n, 0, (n - s->n) * sizeof(*g));
                s->rec = g;
                s->n   = n;
            }
            s->rec[r->seq - 1] = r;
        }
    }
}

/* The send a message served at p came from, if its sender's trace has it. */
static const cm_trace_rec_t *send_of(const proc_t *p, const cm_trace_rec_t *r)
{
    const sends_t *s;

    if (r->peer < 0 || r->peer >= nprocs_read || r->seq == 0) {
        return NULL;
    }
    s = &sends[(size_t)r->peer * (size_t)nprocs_read + (size_t)p->h.rank];
    if (r->seq > s->n || s->rec[r->seq - 1] == NULL ||
        (s->rec[r->seq - 1]->obj & 0xff) != (r->obj & 0xff)) {
        return NULL; /* not traced, or out of order: no arrow rather than a wrong one */
    }
    return s->rec[r->seq - 1];
}

static void json_event(FILE *out, const proc_t *p, const cm_trace_rec_t *r, int *depth, bool *first)
{
    const char *sep = *first ? "" : ",\n";

    switch (r->kind) {
    case CM_TRACE_MSG_SEND:
    case CM_TRACE_MSG_QUEUE:
    case CM_TRACE_MSG_SERVE: {
        const cm_trace_rec_t *from = (r->kind == CM_TRACE_MSG_SERVE) ? send_of(p, r) : NULL;
        fprintf(out, "%s{\"name\":\"%s %s\",\"cat\":\"message\",\"ph\":\"X\",\"ts\":%.3f,"
                "\"dur\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{\"type\":\"%s\",\"about\":%" PRIu64
                ",\"%s\":%" PRId32 ",\"bytes\":%" PRIu32 ",\"seq\":%" PRIu32 "}}", sep,
                (r->kind == CM_TRACE_MSG_SEND) ? "send" : (r->kind == CM_TRACE_MSG_QUEUE) ? "queued" : "serve",
                msg_name(r->obj), us(p, r->t), (double)r->dur / 1e3, p->h.rank, r->tid,
                msg_name(r->obj), r->obj >> 8, (r->kind == CM_TRACE_MSG_SEND) ? "to" : "from",
                r->peer, r->bytes, r->seq);
        if (from != NULL) {
            /* An arrow from the send to its service. */
            const proc_t *sp = &procs[r->peer];
            uint64_t id = (((uint64_t)r->peer * (uint64_t)nprocs_read + (uint64_t)p->h.rank) << 32) |
                          r->seq;
            fprintf(out, ",\n{\"name\":\"%s\",\"cat\":\"message\",\"ph\":\"s\",\"id\":%" PRIu64
                    ",\"ts\":%.3f,\"pid\":%d,\"tid\":%u}", msg_name(r->obj), id, us(sp, from->t),
                    sp->h.rank, from->tid);
            fprintf(out, ",\n{\"name\":\"%s\",\"cat\":\"message\",\"ph\":\"f\",\"bp\":\"e\","
                    "\"id\":%" PRIu64 ",\"ts\":%.3f,\"pid\":%d,\"tid\":%u}", msg_name(r->obj), id,
                    us(p, r->t), p->h.rank, r->tid);
        }
        break;
    }
    case CM_TRACE_CLOCK:
        return;
    case CM_TRACE_PHASE_BEGIN:
    case CM_TRACE_PHASE_END: {
        const char *name = (r->obj < CM_STATS_NTIMERS) ? timer_names[r->obj] : "phase";
        if (r->kind == CM_TRACE_PHASE_END) {
            if (depth[r->tid] == 0) {
                return; /* entered before the trace began */
            }
            depth[r->tid]--;
        } else {
            depth[r->tid]++;
        }
        fprintf(out, "%s{\"name\":\"%s\",\"cat\":\"phase\",\"ph\":\"%s\",\"ts\":%.3f,"
                "\"pid\":%d,\"tid\":%u}", sep, name,
                (r->kind == CM_TRACE_PHASE_BEGIN) ? "B" : "E", us(p, r->t), p->h.rank, r->tid);
        break;
    }
    case CM_TRACE_ALLOC:
        fprintf(out, "%s{\"name\":\"alloc\",\"cat\":\"memory\",\"ph\":\"i\",\"s\":\"p\","
                "\"ts\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{\"offset\":%" PRIu64 ","
                "\"bytes\":%" PRIu32 ",\"first_page\":%" PRIu64 ",\"caller\":\"0x%" PRIx64
                "\"}}", sep, us(p, r->t), p->h.rank, r->tid, r->obj, r->bytes,
                r->obj / (p->h.page_size ? p->h.page_size : 4096), r->dur);
        break;
    default:
        fprintf(out, "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,"
                "\"dur\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{\"%s\":%" PRIu64, sep,
                kind_names[r->kind], category(r->kind), us(p, r->t), (double)r->dur / 1e3,
                p->h.rank, r->tid, object_name(r->kind), r->obj);
        if (r->peer >= 0) {
            fprintf(out, ",\"peer\":%" PRId32, r->peer);
        }
        if (r->bytes != 0) {
            fprintf(out, ",\"bytes\":%" PRIu32, r->bytes);
        }
        if (r->seq != 0) {
            fprintf(out, ",\"seq\":%" PRIu32, r->seq);
        }
        fputs("}}", out);
        break;
    }
    *first = false;
}

static void write_json(const char *path)
{
    FILE *out = open_out(path);
    bool first = true;
    uint64_t worst = 0;

    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", out);
    for (int i = 0; i < nprocs_read; i++) {
        const proc_t *p = &procs[i];
        static int depth[UINT16_MAX + 1]; /* phases open, per thread */
        uint16_t max_tid = 0;
        char name[160];
        uint64_t last = 0;

        memset(depth, 0, sizeof(depth));
        snprintf(name, sizeof(name), "rank %d (%s, %s)", p->h.rank, p->h.host, p->h.protocol);
        fprintf(out, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                "\"args\":{\"name\":", first ? "" : ",\n", p->h.rank);
        cm_json_string(out, name);
        fprintf(out, "}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                "\"args\":{\"sort_index\":%d}}", p->h.rank, p->h.rank);
        first = false;
        for (size_t k = 0; k < p->n; k++) {
            json_event(out, p, &p->rec[k], depth, &first);
            if (p->rec[k].tid > max_tid) {
                max_tid = p->rec[k].tid;
            }
            if (p->rec[k].kind != CM_TRACE_CLOCK && p->rec[k].t + p->rec[k].dur > last) {
                last = p->rec[k].t + p->rec[k].dur;
            }
        }
        for (unsigned t = 0; t <= max_tid; t++) {
            fprintf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
                    "\"args\":{\"name\":\"%s\"}}", p->h.rank, t,
                    (t == 0) ? "application" : "progress or offload");
            /* Phases still open at the end (the last one, cut by the trace's close). */
            for (; depth[t] > 0; depth[t]--) {
                fprintf(out, ",\n{\"ph\":\"E\",\"ts\":%.3f,\"pid\":%d,\"tid\":%u}", us(p, last),
                        p->h.rank, t);
            }
        }
        for (int c = 0; c < p->nclock; c++) {
            worst = (p->err[c] > worst) ? p->err[c] : worst;
        }
    }
    fputs("\n],\"otherData\":{\"clock\":\"CLOCK_MONOTONIC of rank 0\",", out);
    fprintf(out, "\"clock_error_us\":%.3f,\"processes\":%d}}\n", (double)worst / 1e3,
            nprocs_read);
    close_out(out, path);
}

static void write_csv(const char *path)
{
    FILE *out = open_out(path);

    fputs("rank,thread,event,start_us,dur_us,object,peer,bytes,seq\n", out);
    for (int i = 0; i < nprocs_read; i++) {
        const proc_t *p = &procs[i];
        for (size_t k = 0; k < p->n; k++) {
            const cm_trace_rec_t *r = &p->rec[k];
            const char *name = kind_names[r->kind];
            if (r->kind == CM_TRACE_CLOCK) {
                continue;
            }
            if ((r->kind == CM_TRACE_PHASE_BEGIN || r->kind == CM_TRACE_PHASE_END) &&
                r->obj < CM_STATS_NTIMERS) {
                fprintf(out, "%d,%u,%s %s,%.3f,0,,,,\n", p->h.rank, r->tid,
                        (r->kind == CM_TRACE_PHASE_BEGIN) ? "enter" : "leave",
                        timer_names[r->obj], us(p, r->t));
                continue;
            }
            if (r->kind == CM_TRACE_MSG_SEND || r->kind == CM_TRACE_MSG_QUEUE ||
                r->kind == CM_TRACE_MSG_SERVE) {
                fprintf(out, "%d,%u,%s %s,%.3f,%.3f,%" PRIu64 ",", p->h.rank, r->tid, name,
                        msg_name(r->obj), us(p, r->t), (double)r->dur / 1e3, r->obj >> 8);
            } else {
                fprintf(out, "%d,%u,%s,%.3f,%.3f,%" PRIu64 ",", p->h.rank, r->tid, name,
                        us(p, r->t), (double)r->dur / 1e3, r->obj);
            }
            if (r->peer >= 0) {
                fprintf(out, "%" PRId32, r->peer);
            }
            fprintf(out, ",%" PRIu32 ",%" PRIu32 "\n", r->bytes, r->seq);
        }
    }
    close_out(out, path);
}

static void summary(void)
{
    for (int i = 0; i < nprocs_read; i++) {
        const proc_t *p = &procs[i];
        size_t count[CM_TRACE_NKINDS] = {0};

        for (size_t k = 0; k < p->n; k++) {
            count[p->rec[k].kind]++;
        }
        printf("rank %d (%s, %s, pid %" PRIu64 "): %zu events", p->h.rank, p->h.host,
               p->h.protocol, p->h.pid, p->n);
        for (int c = 0; c < p->nclock; c++) {
            printf("; clock at %s: offset %+.3f us, error at most %.3f us",
                   (c == 0) ? "start" : "end", (double)p->off[c] / 1e3, (double)p->err[c] / 1e3);
        }
        putchar('\n');
        for (int k = 0; k < CM_TRACE_NKINDS; k++) {
            if (count[k] != 0 && k != CM_TRACE_CLOCK) {
                printf("  %-12s %zu\n", kind_names[k], count[k]);
            }
        }
    }
}

int main(int argc, char **argv)
{
    const char *json = NULL, *csv = NULL, *prefix = NULL;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--csv") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "cm_trace: %s needs a file (or - for standard output)\n", argv[i]);
                usage(stderr, 2);
            }
            *(argv[i][2] == 'j' ? &json : &csv) = argv[i + 1];
            i++;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout, 0);
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("cm_trace (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "cm_trace: unknown option %s\n", argv[i]);
            usage(stderr, 2);
        } else if (prefix != NULL) {
            fprintf(stderr, "cm_trace: one PREFIX only (got %s and %s)\n", prefix, argv[i]);
            usage(stderr, 2);
        } else {
            prefix = argv[i];
        }
    }
    if (prefix == NULL) {
        fprintf(stderr, "cm_trace: no PREFIX (what CM_TRACE was set to)\n");
        usage(stderr, 2);
    }
    read_all(prefix);
    index_sends();
    if (json != NULL) {
        write_json(json);
    }
    if (csv != NULL) {
        write_csv(csv);
    }
    if (json == NULL && csv == NULL) {
        summary();
    }
    return 0;
}
