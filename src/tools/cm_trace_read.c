/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_trace's reading of a job's trace files (src/tools/cm_trace_tool.h): each rank's header
 * and records, its clock records, the move to rank 0's clock, and which send each served
 * message came from.
 */
#include "config.h"
#include "src/tools/cm_trace_tool.h"

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmt_kind_names[] = {
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

const char *cmt_msg_name(uint64_t obj)
{
    unsigned type = (unsigned)(obj & 0xff);
    return (type < sizeof(msg_names) / sizeof(msg_names[0])) ? msg_names[type] : "message";
}

const char *const cmt_timer_names[] = {
#define TIMER_NAME_(name, doc) #name,
    CM_STATS_TIMERS(TIMER_NAME_)
#undef TIMER_NAME_
};

cmt_proc_t *cmt_procs;
static cmt_sends_t *cmt_sends; /* [src * nprocs + dst] */
int cmt_nprocs;
uint64_t cmt_origin = UINT64_MAX; /* the job's first event, on rank 0's clock */

void *cmt_realloc(void *p, size_t n, size_t size)
{
    void *q = NULL;

    if (size == 0 || n <= SIZE_MAX / size) {
        size_t bytes = n * size;
        q = realloc(p, bytes ? bytes : 1);
    }
    if (q == NULL) {
        cmt_die(1, "out of memory (%zu times %zu bytes)", n, size);
    }
    return q;
}

void *cmt_zalloc(size_t n, size_t size)
{
    void *q = calloc(n ? n : 1, size ? size : 1);

    if (q == NULL) {
        cmt_die(1, "out of memory (%zu times %zu bytes)", n, size);
    }
    return q;
}

const char *const cmt_lane_name[NLANES] = {"compute", "fault", "lock", "barrier", "acquire/release",
                                            "serve"};

void cmt_phase_walk(const cmt_proc_t *p, cmt_stretch_fn fn, void *arg)
{
    int stack[64], depth = 0;
    bool started = false;
    uint64_t last = 0;

    for (size_t k = 0; k < p->n; k++) {
        const cm_trace_rec_t *r = &p->rec[k];
        if (r->tid != 0 || !cmt_is_phase(r) || r->obj >= CM_STATS_NTIMERS) {
            continue;
        }
        if (started) {
            fn(arg, depth ? stack[depth - 1] : -1, last, r->t);
        }
        started = true;
        last    = r->t;
        if (r->kind == CM_TRACE_PHASE) { /* nothing inside: begin and end at once */
            fn(arg, (int)r->obj, r->t, r->t + r->dur);
            last = r->t + r->dur;
            continue;
        }
        if (r->kind == CM_TRACE_PHASE_BEGIN && depth < 64) {
            stack[depth++] = (int)r->obj;
        } else if (r->kind == CM_TRACE_PHASE_END && depth > 0) {
            depth--;
        }
    }
}

void cmt_die(int code, const char *fmt, ...)
{
    va_list ap;

    fputs("cm_trace: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

/* d (a double of ns) as a uint64_t, clamped: a damaged record must not make it undefined. */
static uint64_t cmt_clamp(double d)
{
    return !(d > 0) ? 0 : (d >= 18446744073709549568.0) ? UINT64_MAX : (uint64_t)d;
}

/* The records' ticks to CLOCK_MONOTONIC ns, in place: by the first and last TICKS pairs (the
 * counter's rate between them), else the rate the header says, else ticks are ns already. */
static void cmt_to_ns(cmt_proc_t *p)
{
    const cm_trace_rec_t *a = NULL, *b = NULL;
    double slope = (p->h.ns_per_tick > 0 && p->h.ns_per_tick < 1e6) ? p->h.ns_per_tick : 1.0;

    for (size_t i = 0; i < p->n; i++) {
        if (p->rec[i].kind == CM_TRACE_TICKS) {
            if (a == NULL) {
                a = &p->rec[i];
            }
            b = &p->rec[i];
        }
    }
    if (a == NULL) {
        return;
    }
    if (b->t != a->t && b->obj != a->obj) {
        slope = ((double)b->obj - (double)a->obj) / ((double)b->t - (double)a->t);
    }
    if (!(slope > 0) || slope > 1e6) {
        slope = 1.0;
    }
    {
        const double t0 = (double)a->t, ns0 = (double)a->obj;
        for (size_t i = 0; i < p->n; i++) {
            cm_trace_rec_t *r = &p->rec[i];
            if (r->kind == CM_TRACE_CLOCK || r->kind == CM_TRACE_TICKS) {
                continue; /* in ns already, or the pairs themselves */
            }
            r->t = cmt_clamp(ns0 + ((double)r->t - t0) * slope);
            if (r->kind != CM_TRACE_ALLOC && r->kind != CM_TRACE_LOCK_NEW) { /* an address */
                r->dur = cmt_clamp((double)r->dur * slope);
            }
        }
    }
}

cm_status_t cmt_parse(cmt_proc_t *p, const void *data, size_t len, char *err, size_t errlen)
{
    size_t body;

    if (len < sizeof(p->h) || memcmp(data, CM_TRACE_MAGIC, 8) != 0) {
        snprintf(err, errlen, "not a Cashmere-RMA trace (no %s header)", CM_TRACE_MAGIC);
        return CM_ERR_INVALID;
    }
    memcpy(&p->h, data, sizeof(p->h));
    if (p->h.version != CM_TRACE_VERSION || p->h.rec_size != sizeof(cm_trace_rec_t)) {
        snprintf(err, errlen, "trace version %" PRIu32 " with %" PRIu32 "-byte records; this "
                 "cm_trace reads version %d with %zu-byte records", p->h.version, p->h.rec_size,
                 CM_TRACE_VERSION, sizeof(cm_trace_rec_t));
        return CM_ERR_INVALID;
    }
    if (p->h.nprocs <= 0 || p->h.rank < 0 || p->h.rank >= p->h.nprocs) {
        snprintf(err, errlen, "rank %" PRId32 " of a job of %" PRId32 " processes", p->h.rank,
                 p->h.nprocs);
        return CM_ERR_INVALID;
    }
    if (p->h.page_size == 0 || (p->h.page_size & (p->h.page_size - 1)) != 0) {
        snprintf(err, errlen, "a page size of %" PRIu64 " bytes", p->h.page_size);
        return CM_ERR_INVALID;
    }
    p->h.host[sizeof(p->h.host) - 1]         = '\0';
    p->h.protocol[sizeof(p->h.protocol) - 1] = '\0';
    body  = len - sizeof(p->h);
    p->n  = body / sizeof(cm_trace_rec_t); /* a process killed while writing: whole records */
    p->rec = malloc((p->n ? p->n : 1) * sizeof(*p->rec));
    if (p->rec == NULL) {
        snprintf(err, errlen, "out of memory for %zu events", p->n);
        return CM_ERR_NO_MEMORY;
    }
    memcpy(p->rec, (const char *)data + sizeof(p->h), p->n * sizeof(*p->rec));
    cmt_to_ns(p);
    p->nclock      = 0;
    p->region_from = 0;
    p->region_to   = UINT64_MAX;
    for (size_t i = 0; i < p->n; i++) {
        const cm_trace_rec_t *r = &p->rec[i];
        if (r->kind >= CM_TRACE_NKINDS) {
            snprintf(err, errlen, "event %zu has kind %u, which this cm_trace does not know", i,
                     r->kind);
            free(p->rec);
            p->rec = NULL;
            return CM_ERR_INVALID;
        }
        if (r->kind == CM_TRACE_CLOCK && p->nclock < 2) {
            p->at[p->nclock]  = r->t;
            p->off[p->nclock] = (int64_t)r->obj;
            p->err[p->nclock] = r->dur;
            p->nclock++;
        }
        if (r->kind == CM_TRACE_REGION && r->obj == 0) {
            p->region_from = r->t; /* the last reset begins it */
        }
    }
    for (size_t i = 0; i < p->n; i++) { /* the first stop after it ends it */
        const cm_trace_rec_t *r = &p->rec[i];
        if (r->kind == CM_TRACE_REGION && r->obj == 1 && r->t >= p->region_from &&
            r->t < p->region_to) {
            p->region_to = r->t;
        }
    }
    return CM_OK;
}

static void cmt_load(cmt_proc_t *p)
{
    FILE *f = fopen(p->path, "rb");
    char *data, err[256];
    long size;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        cmt_die(1, "%s: %s", p->path, strerror(errno));
    }
    data = malloc((size_t)size + 1);
    if (data == NULL) {
        cmt_die(1, "%s: out of memory for %ld bytes", p->path, size);
    }
    if (fread(data, 1, (size_t)size, f) != (size_t)size) {
        cmt_die(1, "%s: cannot read it", p->path);
    }
    fclose(f);
    if (cmt_parse(p, data, (size_t)size, err, sizeof(err)) != CM_OK) {
        cmt_die(1, "%s: %s", p->path, err);
    }
    if (((size_t)size - sizeof(p->h)) % sizeof(cm_trace_rec_t) != 0) {
        fprintf(stderr, "cm_trace: %s ends in a partial record (the process ended while "
                "writing); it is left out\n", p->path);
    }
    free(data);
}

/* t (this process's clock) on rank 0's. */
uint64_t cmt_global_ns(const cmt_proc_t *p, uint64_t t)
{
    double off, g;

    if (p->nclock == 0) {
        return t;
    }
    if (p->nclock == 1 || p->at[1] == p->at[0]) {
        off = (double)p->off[0];
    } else {
        double slope = ((double)p->off[1] - (double)p->off[0]) / ((double)p->at[1] - (double)p->at[0]);
        off          = (double)p->off[0] + slope * ((double)t - (double)p->at[0]);
    }
    /* (Clamped: a damaged clock record must not make the conversion undefined.) */
    g = (double)t + off;
    return !(g > 0) ? 0 : (g >= 18446744073709549568.0) ? UINT64_MAX : (uint64_t)g;
}

double cmt_us(const cmt_proc_t *p, uint64_t t)
{
    return (double)(cmt_global_ns(p, t) - cmt_origin) / 1e3;
}

static int cmp_rank(const void *a, const void *b)
{
    return ((const cmt_proc_t *)a)->h.rank - ((const cmt_proc_t *)b)->h.rank;
}

/* PREFIX.RANK.objects, if the job wrote it (util/cm_trace.c): "0xBASE PATH" lines. */
static void cmt_load_objects(cmt_proc_t *p)
{
    char path[4200], line[4200];
    size_t n = strlen(p->path);
    FILE *f;

    if (n < 8 || n - 8 + sizeof(".objects") > sizeof(path)) {
        return;
    }
    snprintf(path, sizeof(path), "%.*s.objects", (int)(n - 8), p->path); /* less ".cmtrace" */
    f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        uint64_t base;
        char file[4096];
        if (sscanf(line, "%" SCNx64 " %4095[^\n]", &base, file) != 2) {
            continue;
        }
        p->obj                 = cmt_realloc(p->obj, (size_t)p->nobj + 1, sizeof(*p->obj));
        p->obj[p->nobj].base   = base;
        p->obj[p->nobj++].path = strdup(file);
    }
    fclose(f);
}

void cmt_symbol(const cmt_proc_t *p, uint64_t addr, char *buf, size_t len)
{
    const struct cmt_object *best = NULL;
    char cmd[4400], fn[512] = "", at[512] = "";
    FILE *f;

    snprintf(buf, len, "0x%" PRIx64, addr);
    for (int i = 0; i < p->nobj; i++) {
        if (p->obj[i].base <= addr && (best == NULL || p->obj[i].base > best->base)) {
            best = &p->obj[i];
        }
    }
    if (best == NULL || strchr(best->path, '\'') != NULL) {
        return;
    }
    /* A return address: the call is the instruction before it. */
    snprintf(cmd, sizeof(cmd), "addr2line -f -s -e '%s' 0x%" PRIx64 " 2>/dev/null", best->path,
             addr - best->base - 1);
    f = popen(cmd, "r");
    if (f == NULL) {
        return;
    }
    if (fgets(fn, sizeof(fn), f) != NULL && fgets(at, sizeof(at), f) != NULL) {
        fn[strcspn(fn, "\n")] = '\0';
        at[strcspn(at, "\n")] = '\0';
        char *d = strstr(at, " (discriminator "); /* which of a line's blocks: noise here */
        if (d != NULL) {
            *d = '\0';
        }
        if (strcmp(fn, "??") != 0) {
            snprintf(buf, len, "%s at %s", fn, at);
        }
    }
    pclose(f);
}

void cmt_read(const char *prefix)
{
    char pattern[4200];
    glob_t g;

    snprintf(pattern, sizeof(pattern), "%s.*.cmtrace", prefix);
    if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc == 0) {
        cmt_die(1, "no trace at %s (files %s): was the job run with CM_TRACE=%s?", prefix, pattern,
            prefix);
    }
    cmt_procs = cmt_zalloc(g.gl_pathc, sizeof(*cmt_procs));
    for (size_t i = 0; i < g.gl_pathc; i++) {
        cmt_procs[i].path = strdup(g.gl_pathv[i]);
        cmt_load(&cmt_procs[i]);
        cmt_load_objects(&cmt_procs[i]);
    }
    cmt_nprocs = (int)g.gl_pathc;
    globfree(&g);
    qsort(cmt_procs, (size_t)cmt_nprocs, sizeof(*cmt_procs), cmp_rank);
    for (int i = 0; i < cmt_nprocs; i++) {
        if (cmt_procs[i].h.nprocs != cmt_procs[0].h.nprocs || cmt_procs[i].h.rank != i) {
            cmt_die(1, "%s: rank %d of %d, but the traces at %s are of ranks 0..%d of a job of %d: "
                "files of different jobs, or some missing", cmt_procs[i].path, cmt_procs[i].h.rank,
                cmt_procs[i].h.nprocs, prefix, cmt_nprocs - 1, cmt_procs[0].h.nprocs);
        }
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            uint64_t g0 = cmt_global_ns(&cmt_procs[i], cmt_procs[i].rec[k].t);
            if (!cmt_is_meta(&cmt_procs[i].rec[k]) && g0 < cmt_origin) {
                cmt_origin = g0;
            }
        }
    }
    if (cmt_nprocs != cmt_procs[0].h.nprocs) {
        cmt_die(1, "%d traces at %s, but the job had %d processes: some are missing", cmt_nprocs,
            prefix, cmt_procs[0].h.nprocs);
    }
    if (cmt_origin == UINT64_MAX) {
        cmt_origin = 0;
    }
}

void cmt_index_sends(void)
{
    cmt_sends = cmt_zalloc((size_t)cmt_nprocs * (size_t)cmt_nprocs, sizeof(*cmt_sends));
    for (int i = 0; i < cmt_nprocs; i++) {
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            const cm_trace_rec_t *r = &cmt_procs[i].rec[k];
            cmt_sends_t *s;
            /* (A sequence number far beyond the records there are is a damaged trace's: no
             * arrow rather than an array of billions.) */
            if (r->kind != CM_TRACE_MSG_SEND || r->peer < 0 || r->peer >= cmt_nprocs ||
                r->seq == 0 || r->seq > 4 * cmt_procs[i].n + 4096) {
                continue;
            }
            s = &cmt_sends[(size_t)i * (size_t)cmt_nprocs + (size_t)r->peer];
            if (r->seq > s->n) {
                size_t n = (r->seq > 2 * s->n) ? r->seq : 2 * s->n;
                const cm_trace_rec_t **g = cmt_realloc(s->rec, n, sizeof(*g));
                memset(g + s->n, 0, (n - s->n) * sizeof(*g));
                s->rec = g;
                s->n   = n;
            }
            s->rec[r->seq - 1] = r;
        }
    }
}

void cmt_free_sends(void)
{
    for (size_t i = 0; cmt_sends != NULL && i < (size_t)cmt_nprocs * (size_t)cmt_nprocs; i++) {
        free(cmt_sends[i].rec);
    }
    free(cmt_sends);
    cmt_sends = NULL;
}

/* The send a message served at p came from, if its sender's trace has it. */
const cm_trace_rec_t *cmt_send_of(const cmt_proc_t *p, const cm_trace_rec_t *r)
{
    const cmt_sends_t *s;

    if (r->peer < 0 || r->peer >= cmt_nprocs || r->seq == 0) {
        return NULL;
    }
    s = &cmt_sends[(size_t)r->peer * (size_t)cmt_nprocs + (size_t)p->h.rank];
    if (r->seq > s->n || s->rec[r->seq - 1] == NULL ||
        (s->rec[r->seq - 1]->obj & 0xff) != (r->obj & 0xff)) {
        return NULL; /* not traced, or out of order: no arrow rather than a wrong one */
    }
    return s->rec[r->seq - 1];
}
