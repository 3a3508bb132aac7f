/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_trace --timeline BASE: BASE.png and BASE.svg (gnuplot), a row of lanes per rank over the
 * job's time on rank 0's clock: computing (the application thread outside every statistics
 * phase), faults (fault_ns, page_copy_ns, data_wait_ns, line_fill_ns), locks (lock_wait_ns),
 * barriers (barrier_ns), acquires and releases (acquire_ns, release_ns, write_through_ns,
 * twin_diff_ns) and TreadMarks's requests served by the application thread (handler_ns).
 * Stretches closer than a pixel merge, so a long trace stays a picture gnuplot can draw.
 *
 * cm_trace --locks BASE: for each of the locks waited for longest, BASE-lockN.png and .svg: a
 * row per rank of its waits and holds over time, and the page faults inside the holds (those
 * --top counts).
 *
 * Both write BASE[-lockN].dat, a block of boxes per kind (gnuplot's index), and .gp, which
 * draws the blocks that have boxes, a row per rank.
 */
#include "config.h"
#include "src/tools/cm_trace_tool.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH_PX 1600

double cmt_win_from, cmt_win_to, cmt_zoom_ms;

static int cmp_start(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* --zoom: the window of cmt_zoom_ms in which the waits for lock that begin there wait
 * longest in all (where the lock is fought over, not where one rank takes it again alone). */
static void busiest(uint64_t lock)
{
    double (*w)[2] = NULL, sum = 0, best = -1;
    size_t n = 0, cap = 0, j = 0;

    for (int i = 0; i < cmt_nprocs; i++) {
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            const cm_trace_rec_t *r = &cmt_procs[i].rec[k];
            if (r->kind == CM_TRACE_LOCK_WAIT && r->obj == lock) {
                if (n == cap) {
                    cap = cap ? 2 * cap : 1024;
                    w   = cmt_realloc(w, cap, sizeof(*w));
                }
                w[n][0]   = cmt_us(&cmt_procs[i], r->t) / 1e3;
                w[n++][1] = (double)r->dur / 1e6;
            }
        }
    }
    if (n == 0) {
        free(w);
        return;
    }
    qsort(w, n, sizeof(*w), cmp_start);
    for (size_t i = 0; i < n; i++) { /* w[i..j) begin within the width */
        while (j < n && w[j][0] < w[i][0] + cmt_zoom_ms) {
            sum += w[j++][1];
        }
        if (sum > best) {
            best         = sum;
            cmt_win_from = w[i][0];
        }
        sum -= w[i][1];
    }
    cmt_win_from = (cmt_win_from > cmt_zoom_ms / 10) ? cmt_win_from - cmt_zoom_ms / 10 : 0;
    cmt_win_to   = cmt_win_from + cmt_zoom_ms;
    free(w);
}

/* [*s, *e] (ms) clipped to the window: false where nothing of it is inside. */
static bool in_window(double *s, double *e)
{
    if (cmt_win_to <= 0) {
        return true;
    }
    if (*e < cmt_win_from || *s > cmt_win_to) {
        return false;
    }
    *s = (*s < cmt_win_from) ? cmt_win_from : *s;
    *e = (*e > cmt_win_to) ? cmt_win_to : *e;
    return true;
}

static FILE *open_or_die(const char *path)
{
    FILE *f = fopen(path, "w");

    if (f == NULL) {
        cmt_die(1, "%s: %s", path, strerror(errno));
    }
    return f;
}

static void close_or_die(FILE *f, const char *path)
{
    if (fclose(f) != 0) {
        cmt_die(1, "%s: write failed", path);
    }
}

/* A picture: its blocks (name and colour each; drawn[b] boxes in block b of dat), its rows
 * (rank i's at (nprocs - 1 - i) * stride + mid, up to ymax), its x range (span_ms > 0, else
 * gnuplot's), and what to say where no block has a box. */
typedef struct {
    const char        *out; /* the picture's name without .png or .svg */
    const char        *title, *empty;
    int               height, stride, mid, ymax, nblocks;
    double            span_ms;
    const char *const *name, *const *colour;
    const int         *drawn;
} picture_t;

/* out.gp drawing out.png and out.svg from dat, run by gnuplot. */
static void draw(const picture_t *pic, const char *dat)
{
    char gp[4200], cmd[4300];
    int plotted = 0;
    FILE *f;

    snprintf(gp, sizeof(gp), "%s.gp", pic->out);
    f = open_or_die(gp);
    for (int t = 0; t < 2; t++) {
        fprintf(f, "set terminal %s size %d,%d font 'sans,10'\nset output '%s.%s'\n"
                "set termoption noenhanced\nset xlabel 'ms on rank 0 clock (the first event at 0)'\n",
                t ? "svg dynamic" : "pngcairo", WIDTH_PX + 200, pic->height, pic->out,
                t ? "svg" : "png");
        if (cmt_win_to > 0) {
            fprintf(f, "set xrange [%.6f:%.6f]\n", cmt_win_from, cmt_win_to);
        } else if (pic->span_ms > 0) {
            fprintf(f, "set xrange [0:%.6f]\n", pic->span_ms);
        }
        fprintf(f, "set yrange [-1:%d]\nset style fill solid noborder\nset key outside right top\n"
                "set ytics (", pic->ymax);
        for (int i = 0; i < cmt_nprocs; i++) {
            fprintf(f, "%s'rank %d' %d", i ? ", " : "", cmt_procs[i].h.rank,
                    (cmt_nprocs - 1 - i) * pic->stride + pic->mid);
        }
        fprintf(f, ")\nset title '%s'\nplot ", pic->title);
        plotted = 0;
        for (int b = 0; b < pic->nblocks; b++) {
            if (pic->drawn[b] == 0) {
                continue; /* gnuplot warns of a block with no points */
            }
            fprintf(f, "%s'%s' index %d using 1:2:3:4 with boxxyerror lc rgb '%s' title '%s'",
                    plotted++ ? ", " : "", dat, b, pic->colour[b], pic->name[b]);
        }
        fputc('\n', f);
    }
    close_or_die(f, gp);
    if (plotted == 0) {
        cmt_die(1, "%s", pic->empty);
    }
    snprintf(cmd, sizeof(cmd), "gnuplot '%s'", gp);
    if (system(cmd) != 0) {
        cmt_die(1, "gnuplot %s failed (Debian: gnuplot-nox); the data is in %s", gp, dat);
    }
}

static void no_quote(const char *opt, const char *base)
{
    if (strchr(base, '\'') != NULL) {
        cmt_die(1, "%s %s: no ' in the name, please", opt, base);
    }
}

/* ---- each rank's lanes -------------------------------------------------------------------- */

static const char *const lane_colour[NLANES] = {"#b0b0b0", "#d62728", "#ff7f0e", "#1f77b4",
                                                "#2ca02c", "#9467bd"};

/* One rank's lanes being written, a block per lane: each lane's open stretch grows while the
 * next starts within res of its end. */
typedef struct {
    const cmt_proc_t *p;
    FILE             *block[NLANES];
    int              drawn[NLANES], y0;
    double           res, s[NLANES], e[NLANES];
    bool             open[NLANES];
} lanes_t;

static void lane_flush(lanes_t *l, int lane)
{
    if (l->open[lane]) {
        fprintf(l->block[lane], "%.6f %d %.6f 0.4\n", (l->s[lane] + l->e[lane]) / 2,
                l->y0 + NLANES - 1 - lane, (l->e[lane] - l->s[lane]) / 2);
        l->open[lane] = false;
        l->drawn[lane]++;
    }
}

static void lane_put(void *arg, int timer, uint64_t from, uint64_t to)
{
    lanes_t *l = arg;
    int lane = cmt_lane_of(timer);
    double s = cmt_us(l->p, from) / 1e3, e = cmt_us(l->p, to) / 1e3;

    if (e <= s || !in_window(&s, &e)) {
        return;
    }
    if (l->open[lane] && s - l->e[lane] < l->res) {
        l->e[lane] = e;
        return;
    }
    lane_flush(l, lane);
    l->open[lane] = true;
    l->s[lane]    = s;
    l->e[lane]    = e;
}

void cmt_timeline(const char *base)
{
    char dat[4200], title[160], *text[NLANES];
    size_t len[NLANES];
    double span_ms = 0;
    lanes_t l;
    FILE *f;

    no_quote("--timeline", base);
    for (int i = 0; i < cmt_nprocs; i++) {
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            const cm_trace_rec_t *r = &cmt_procs[i].rec[k];
            double e = cmt_us(&cmt_procs[i], r->t + cmt_dur(r)) / 1e3;
            if (!cmt_is_meta(r) && e > span_ms) {
                span_ms = e;
            }
        }
    }
    memset(&l, 0, sizeof(l));
    l.res = ((cmt_win_to > 0) ? cmt_win_to - cmt_win_from : span_ms) / WIDTH_PX;
    for (int lane = 0; lane < NLANES; lane++) {
        l.block[lane] = open_memstream(&text[lane], &len[lane]);
        if (l.block[lane] == NULL) {
            cmt_die(1, "out of memory");
        }
    }
    /* Each rank's phases once, into every lane's block. */
    for (int i = 0; i < cmt_nprocs; i++) {
        l.p  = &cmt_procs[i];
        l.y0 = (cmt_nprocs - 1 - i) * (NLANES + 1);
        cmt_phase_walk(l.p, lane_put, &l);
        for (int lane = 0; lane < NLANES; lane++) {
            lane_flush(&l, lane); /* the last stretch out */
        }
    }
    snprintf(dat, sizeof(dat), "%s.dat", base);
    f = open_or_die(dat);
    for (int lane = 0; lane < NLANES; lane++) {
        fclose(l.block[lane]);
        fprintf(f, "# %s\n%s%s", cmt_lane_name[lane], text[lane], (lane < NLANES - 1) ? "\n\n" : "");
        free(text[lane]);
    }
    close_or_die(f, dat);
    snprintf(title, sizeof(title), "where each rank spent its time: %s, %d processes",
             cmt_procs[0].h.protocol, cmt_nprocs);
    draw(&(picture_t){.out = base, .title = title, .empty = "--timeline: the trace has no phases to draw",
                      .height = 120 + 18 * cmt_nprocs * (NLANES + 1), .stride = NLANES + 1,
                      .mid = NLANES / 2, .ymax = cmt_nprocs * (NLANES + 1) - 1, .nblocks = NLANES,
                      .span_ms = span_ms, .name = cmt_lane_name, .colour = lane_colour,
                      .drawn = l.drawn},
         dat);
}

/* ---- locks over time ---------------------------------------------------------------------- */

enum { BOX_WAIT, BOX_HOLD, BOX_FAULT, NBOXES };

static const char *const box_name[NBOXES] = {"waiting", "holding", "page fault in a hold"};
static const char *const box_colour[NBOXES] = {"#ffbb78", "#d62728", "#1f77b4"};
static const double box_half[NBOXES] = {0.15, 0.35, 0.22};

/* A box of rank p's row in block b. */
typedef struct {
    FILE *block[NBOXES];
    int  drawn[NBOXES];
} boxes_t;

static void box(boxes_t *bx, int b, const cmt_proc_t *p, const cm_trace_rec_t *r)
{
    double s = cmt_us(p, r->t) / 1e3, e = cmt_us(p, r->t + cmt_dur(r)) / 1e3;

    if (!in_window(&s, &e)) {
        return;
    }
    fprintf(bx->block[b], "%.6f %d %.6f %.2f\n", (s + e) / 2,
            cmt_nprocs - 1 - (int)(p - cmt_procs), (e - s) / 2, box_half[b]);
    bx->drawn[b]++;
}

static void fault_box(void *arg, const cmt_proc_t *p, const cm_trace_rec_t *r)
{
    box(arg, BOX_FAULT, p, r);
}

void cmt_lock_timeline(const char *base, int nlocks)
{
    char out[4200], dat[4300], title[900], where[700], *text[NBOXES];
    size_t len[NBOXES];
    cmt_lock_t *locks;
    size_t n;
    FILE *f;

    no_quote("--locks", base);
    n = cmt_locks(&locks);
    if (n == 0) {
        cmt_die(1, "--locks: the trace has no lock acquires");
    }
    for (size_t l = 0; l < n && l < (size_t)nlocks; l++) {
        boxes_t bx;

        memset(&bx, 0, sizeof(bx));
        if (cmt_zoom_ms > 0) {
            busiest(locks[l].lock);
        }
        for (int b = 0; b < NBOXES; b++) {
            bx.block[b] = open_memstream(&text[b], &len[b]);
            if (bx.block[b] == NULL) {
                cmt_die(1, "out of memory");
            }
        }
        for (int i = 0; i < cmt_nprocs; i++) {
            const cmt_proc_t *p = &cmt_procs[i];
            for (size_t k = 0; k < p->n; k++) {
                const cm_trace_rec_t *r = &p->rec[k];
                if ((r->kind != CM_TRACE_LOCK_WAIT && r->kind != CM_TRACE_LOCK_HOLD) ||
                    r->obj != locks[l].lock) {
                    continue;
                }
                box(&bx, (r->kind == CM_TRACE_LOCK_WAIT) ? BOX_WAIT : BOX_HOLD, p, r);
                if (r->kind == CM_TRACE_LOCK_HOLD) {
                    cmt_hold_faults(p, k, fault_box, &bx);
                }
            }
        }
        if (cmt_win_to > 0 && bx.drawn[BOX_WAIT] + bx.drawn[BOX_HOLD] == 0) {
            fprintf(stderr, "cm_trace: --locks: lock %" PRIu64 " is not taken between %g and %g ms: "
                    "not drawn\n", locks[l].lock, cmt_win_from, cmt_win_to);
            for (int b = 0; b < NBOXES; b++) {
                fclose(bx.block[b]);
                free(text[b]);
            }
            continue;
        }
        snprintf(out, sizeof(out), "%s-lock%" PRIu64, base, locks[l].lock);
        snprintf(dat, sizeof(dat), "%s.dat", out);
        f = open_or_die(dat);
        for (int b = 0; b < NBOXES; b++) {
            fclose(bx.block[b]);
            fprintf(f, "%s%s", text[b], (b < NBOXES - 1) ? "\n\n" : "");
            free(text[b]);
        }
        close_or_die(f, dat);
        cmt_lock_name(locks[l].lock, where, sizeof(where));
        for (char *q = where; *q; q++) {
            *q = (*q == '\'') ? '"' : *q; /* inside gnuplot's quotes */
        }
        snprintf(title, sizeof(title), "lock %" PRIu64 "%s%s: %.3f ms waited in all (%s, %d processes)%s",
                 locks[l].lock, where[0] ? " " : "", where, (double)locks[l].wait / 1e6,
                 cmt_procs[0].h.protocol, cmt_nprocs,
                 (cmt_zoom_ms > 0) ? ", its busiest" : (cmt_win_to > 0) ? ", a window" : "");
        draw(&(picture_t){.out = out, .title = title, .empty = "--locks: the lock has nothing to draw",
                          .height = 160 + 40 * cmt_nprocs, .stride = 1, .mid = 0,
                          .ymax = cmt_nprocs, .nblocks = NBOXES, .span_ms = 0,
                          .name = box_name, .colour = box_colour, .drawn = bx.drawn},
             dat);
    }
    free(locks);
}
