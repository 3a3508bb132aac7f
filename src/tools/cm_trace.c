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
#include "src/tools/cm_trace_tool.h"
#include "util/cm_json.h"

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out, int code)
{
    fprintf(out,
            "usage: cm_trace [--json FILE] [--csv FILE] [--top] [--timeline BASE] [--locks BASE]\n"
            "                [--window FROM:TO] [--zoom MS] PREFIX\n"
            "  PREFIX      what CM_TRACE was set to: reads PREFIX.RANK.cmtrace of every rank\n"
            "  --json FILE Chrome/Perfetto trace-event JSON (- for standard output): open it in\n"
            "              ui.perfetto.dev or chrome://tracing\n"
            "  --csv FILE  one row per event: rank,thread,event,start_us,dur_us,object,peer,bytes,seq\n"
            "  --top       where the time went, page fetches (TreadMarks's in their segments), what\n"
            "              the barriers' time is made of, the locks waited for most (named by their\n"
            "              LOCKINIT) with the faults in their holds, the pages faulted and fetched\n"
            "              most with their allocations, and those more than one rank wrote\n"
            "  --timeline BASE  BASE.png and BASE.svg: each rank's time in lanes (compute, fault, lock,\n"
            "              barrier, acquire/release, serve), drawn by gnuplot\n"
            "  --locks BASE  BASE-lockN.png and .svg for the 3 locks waited for longest: each\n"
            "              rank's waits and holds over time, and the page faults inside the holds\n"
            "  --window FROM:TO  the pictures from FROM to TO ms (rank 0's clock, the first event 0)\n"
            "  --zoom MS   each --locks picture over the MS ms whose waits wait longest in all\n"
            "Without any of them: each rank's events by kind and its clock's offset and error.\n");
    exit(code);
}

static FILE *open_out(const char *path)
{
    FILE *f;

    if (strcmp(path, "-") == 0) {
        return stdout;
    }
    f = fopen(path, "w");
    if (f == NULL) {
        cmt_die(1, "%s: %s", path, strerror(errno));
    }
    return f;
}

static void close_out(FILE *f, const char *path)
{
    if (ferror(f) || (f != stdout && fclose(f) != 0) || (f == stdout && fflush(f) != 0)) {
        cmt_die(1, "%s: write failed", path);
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
    case CM_TRACE_PHASE_BEGIN: case CM_TRACE_PHASE_END: case CM_TRACE_PHASE:
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

static void json_event(FILE *out, const cmt_proc_t *p, const cm_trace_rec_t *r, int *depth, bool *first)
{
    const char *sep = *first ? "" : ",\n";

    switch (r->kind) {
    case CM_TRACE_MSG_SEND:
    case CM_TRACE_MSG_QUEUE:
    case CM_TRACE_MSG_SERVE: {
        const cm_trace_rec_t *from = (r->kind == CM_TRACE_MSG_SERVE) ? cmt_send_of(p, r) : NULL;
        fprintf(out, "%s{\"name\":\"%s %s\",\"cat\":\"message\",\"ph\":\"X\",\"ts\":%.3f,"
                "\"dur\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{\"type\":\"%s\",\"about\":%" PRIu64
                ",\"%s\":%" PRId32 ",\"bytes\":%" PRIu32 ",\"seq\":%" PRIu32 "}}", sep,
                (r->kind == CM_TRACE_MSG_SEND) ? "send" : (r->kind == CM_TRACE_MSG_QUEUE) ? "queued" : "serve",
                cmt_msg_name(r->obj), cmt_us(p, r->t), (double)r->dur / 1e3, p->h.rank, r->tid,
                cmt_msg_name(r->obj), r->obj >> 8, (r->kind == CM_TRACE_MSG_SEND) ? "to" : "from",
                r->peer, r->bytes, r->seq);
        if (from != NULL) {
            /* An arrow from the send to its service. */
            const cmt_proc_t *sp = &cmt_procs[r->peer];
            uint64_t id = (((uint64_t)r->peer * (uint64_t)cmt_nprocs + (uint64_t)p->h.rank) << 32) |
                          r->seq;
            fprintf(out, ",\n{\"name\":\"%s\",\"cat\":\"message\",\"ph\":\"s\",\"id\":%" PRIu64
                    ",\"ts\":%.3f,\"pid\":%d,\"tid\":%u}", cmt_msg_name(r->obj), id, cmt_us(sp, from->t),
                    sp->h.rank, from->tid);
            fprintf(out, ",\n{\"name\":\"%s\",\"cat\":\"message\",\"ph\":\"f\",\"bp\":\"e\","
                    "\"id\":%" PRIu64 ",\"ts\":%.3f,\"pid\":%d,\"tid\":%u}", cmt_msg_name(r->obj), id,
                    cmt_us(p, r->t), p->h.rank, r->tid);
        }
        break;
    }
    case CM_TRACE_CLOCK:
    case CM_TRACE_TICKS:
        return;
    case CM_TRACE_PHASE_BEGIN:
    case CM_TRACE_PHASE_END: {
        const char *name = (r->obj < CM_STATS_NTIMERS) ? cmt_timer_names[r->obj] : "phase";
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
                (r->kind == CM_TRACE_PHASE_BEGIN) ? "B" : "E", cmt_us(p, r->t), p->h.rank, r->tid);
        break;
    }
    case CM_TRACE_ALLOC:
        fprintf(out, "%s{\"name\":\"alloc\",\"cat\":\"memory\",\"ph\":\"i\",\"s\":\"p\","
                "\"ts\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{\"offset\":%" PRIu64 ","
                "\"bytes\":%" PRIu32 ",\"first_page\":%" PRIu64 ",\"caller\":\"0x%" PRIx64
                "\"}}", sep, cmt_us(p, r->t), p->h.rank, r->tid, r->obj, r->bytes,
                r->obj / cmt_page_size(p), r->dur);
        break;
    case CM_TRACE_PHASE:
        fprintf(out, "%s{\"name\":\"%s\",\"cat\":\"phase\",\"ph\":\"X\",\"ts\":%.3f,"
                "\"dur\":%.3f,\"pid\":%d,\"tid\":%u}", sep,
                (r->obj < CM_STATS_NTIMERS) ? cmt_timer_names[r->obj] : "phase", cmt_us(p, r->t),
                (double)r->dur / 1e3, p->h.rank, r->tid);
        break;
    case CM_TRACE_REGION:
        fprintf(out, "%s{\"name\":\"statistics %s\",\"cat\":\"region\",\"ph\":\"i\",\"s\":\"p\","
                "\"ts\":%.3f,\"pid\":%d,\"tid\":%u}", sep, r->obj ? "stop" : "reset",
                cmt_us(p, r->t), p->h.rank, r->tid);
        break;
    case CM_TRACE_LOCK_NEW:
        fprintf(out, "%s{\"name\":\"lock init\",\"cat\":\"lock\",\"ph\":\"i\",\"s\":\"p\","
                "\"ts\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{\"lock\":%" PRIu64 ","
                "\"caller\":\"0x%" PRIx64 "\"}}", sep, cmt_us(p, r->t), p->h.rank, r->tid, r->obj,
                r->dur);
        break;
    default:
        fprintf(out, "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,"
                "\"dur\":%.3f,\"pid\":%d,\"tid\":%u,\"args\":{\"%s\":%" PRIu64, sep,
                cmt_kind_names[r->kind], category(r->kind), cmt_us(p, r->t), (double)r->dur / 1e3,
                p->h.rank, r->tid, object_name(r->kind), r->obj);
        if (r->peer >= 0) {
            fprintf(out, ",\"peer\":%" PRId32, r->peer);
        }
        if (r->bytes != 0) {
            fprintf(out, ",\"bytes\":%" PRIu32, r->bytes);
        }
        if (r->kind == CM_TRACE_DIR_UPDATE && r->seq >= 1 && r->seq <= 3) {
            static const char *const op[] = {"join", "write", "leave"};
            fprintf(out, ",\"op\":\"%s\"", op[r->seq - 1]);
        } else if (r->seq != 0) {
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
    for (int i = 0; i < cmt_nprocs; i++) {
        const cmt_proc_t *p = &cmt_procs[i];
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
            if (!cmt_is_meta(&p->rec[k]) && p->rec[k].t + cmt_dur(&p->rec[k]) > last) {
                last = p->rec[k].t + cmt_dur(&p->rec[k]);
            }
        }
        for (unsigned t = 0; t <= max_tid; t++) {
            fprintf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
                    "\"args\":{\"name\":\"%s\"}}", p->h.rank, t,
                    (t == 0) ? "application" : "progress or offload");
            /* Phases still open at the end (the last one, cut by the trace's close). */
            for (; depth[t] > 0; depth[t]--) {
                fprintf(out, ",\n{\"ph\":\"E\",\"ts\":%.3f,\"pid\":%d,\"tid\":%u}", cmt_us(p, last),
                        p->h.rank, t);
            }
        }
        for (int c = 0; c < p->nclock; c++) {
            worst = (p->err[c] > worst) ? p->err[c] : worst;
        }
    }
    fputs("\n],\"otherData\":{\"clock\":\"CLOCK_MONOTONIC of rank 0\",", out);
    fprintf(out, "\"clock_error_us\":%.3f,\"processes\":%d}}\n", (double)worst / 1e3,
            cmt_nprocs);
    close_out(out, path);
}

static void write_csv(const char *path)
{
    FILE *out = open_out(path);

    fputs("rank,thread,event,start_us,dur_us,object,peer,bytes,seq\n", out);
    for (int i = 0; i < cmt_nprocs; i++) {
        const cmt_proc_t *p = &cmt_procs[i];
        for (size_t k = 0; k < p->n; k++) {
            const cm_trace_rec_t *r = &p->rec[k];
            const char *name = cmt_kind_names[r->kind];
            if (cmt_is_meta(r)) {
                continue;
            }
            if (r->kind == CM_TRACE_PHASE && r->obj < CM_STATS_NTIMERS) { /* a leaf: its span */
                fprintf(out, "%d,%u,phase %s,%.3f,%.3f,,,,\n", p->h.rank, r->tid,
                        cmt_timer_names[r->obj], cmt_us(p, r->t), (double)r->dur / 1e3);
                continue;
            }
            if ((r->kind == CM_TRACE_PHASE_BEGIN || r->kind == CM_TRACE_PHASE_END) &&
                r->obj < CM_STATS_NTIMERS) {
                fprintf(out, "%d,%u,%s %s,%.3f,0,,,,\n", p->h.rank, r->tid,
                        (r->kind == CM_TRACE_PHASE_BEGIN) ? "enter" : "leave",
                        cmt_timer_names[r->obj], cmt_us(p, r->t));
                continue;
            }
            if (r->kind == CM_TRACE_MSG_SEND || r->kind == CM_TRACE_MSG_QUEUE ||
                r->kind == CM_TRACE_MSG_SERVE) {
                fprintf(out, "%d,%u,%s %s,%.3f,%.3f,%" PRIu64 ",", p->h.rank, r->tid, name,
                        cmt_msg_name(r->obj), cmt_us(p, r->t), (double)cmt_dur(r) / 1e3, r->obj >> 8);
            } else {
                fprintf(out, "%d,%u,%s,%.3f,%.3f,%" PRIu64 ",", p->h.rank, r->tid, name,
                        cmt_us(p, r->t), (double)cmt_dur(r) / 1e3, r->obj);
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
    for (int i = 0; i < cmt_nprocs; i++) {
        const cmt_proc_t *p = &cmt_procs[i];
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
            if (count[k] != 0 && k != CM_TRACE_CLOCK && k != CM_TRACE_TICKS) {
                printf("  %-12s %zu\n", cmt_kind_names[k], count[k]);
            }
        }
    }
}

int main(int argc, char **argv)
{
    const char *json = NULL, *csv = NULL, *prefix = NULL, *timeline = NULL, *locks = NULL;
    bool top = false;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--csv") == 0 ||
            strcmp(argv[i], "--timeline") == 0 || strcmp(argv[i], "--locks") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "cm_trace: %s needs a file%s\n", argv[i],
                        (argv[i][2] == 't' || argv[i][2] == 'l') ? " name without its extension"
                                                                 : " (or - for standard output)");
                usage(stderr, 2);
            }
            *(argv[i][2] == 'j'   ? &json
              : argv[i][2] == 'c' ? &csv
              : argv[i][2] == 'l' ? &locks
                                  : &timeline) = argv[i + 1];
            i++;
        } else if (strcmp(argv[i], "--window") == 0) {
            char *end = NULL;
            if (i + 1 < argc) {
                cmt_win_from = strtod(argv[i + 1], &end);
                cmt_win_to   = (end != NULL && *end == ':') ? strtod(end + 1, &end) : -1;
            }
            if (i + 1 >= argc || end == NULL || *end != '\0' || !(cmt_win_from >= 0) ||
                !(cmt_win_to > cmt_win_from)) {
                fprintf(stderr, "cm_trace: --window needs FROM:TO, ms with 0 <= FROM < TO (got %s)\n",
                        (i + 1 < argc) ? argv[i + 1] : "nothing");
                usage(stderr, 2);
            }
            i++;
        } else if (strcmp(argv[i], "--zoom") == 0) {
            char *end = NULL;
            if (i + 1 < argc) {
                cmt_zoom_ms = strtod(argv[i + 1], &end);
            }
            if (i + 1 >= argc || end == argv[i + 1] || *end != '\0' || !(cmt_zoom_ms > 0)) {
                fprintf(stderr, "cm_trace: --zoom needs a width in ms above 0 (got %s)\n",
                        (i + 1 < argc) ? argv[i + 1] : "nothing");
                usage(stderr, 2);
            }
            i++;
        } else if (strcmp(argv[i], "--top") == 0) {
            top = true;
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
    if (cmt_win_to > 0 && timeline == NULL && locks == NULL) {
        fprintf(stderr, "cm_trace: --window is for the pictures (--timeline, --locks)\n");
        usage(stderr, 2);
    }
    if (cmt_zoom_ms > 0 && (locks == NULL || cmt_win_to > 0)) {
        fprintf(stderr, "cm_trace: --zoom is for --locks, without --window\n");
        usage(stderr, 2);
    }
    cmt_read(prefix);
    cmt_index_sends();
    if (json != NULL) {
        write_json(json);
    }
    if (csv != NULL) {
        write_csv(csv);
    }
    if (top) {
        cmt_top(stdout, 10);
    }
    if (timeline != NULL) {
        cmt_timeline(timeline);
    }
    if (locks != NULL) {
        cmt_lock_timeline(locks, 3);
    }
    if (json == NULL && csv == NULL && !top && timeline == NULL && locks == NULL) {
        summary();
    }
    return 0;
}
