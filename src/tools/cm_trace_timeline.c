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
 * row per rank of its waits and holds over time, and the page faults inside the holds.
 */
#include "config.h"
#include "src/tools/cm_trace_tool.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { LANE_COMPUTE, LANE_FAULT, LANE_LOCK, LANE_BARRIER, LANE_SYNC, LANE_SERVE, NLANES };

static const char *const lane_name[NLANES] = {"compute", "fault", "lock", "barrier",
                                              "acquire/release", "serve"};
static const char *const lane_colour[NLANES] = {"#b0b0b0", "#d62728", "#ff7f0e", "#1f77b4",
                                                "#2ca02c", "#9467bd"};

#define WIDTH_PX 1600

static int lane_of(int timer)
{
    switch (timer) {
    case CM_STATS_T_fault_ns: case CM_STATS_T_page_copy_ns: case CM_STATS_T_data_wait_ns:
    case CM_STATS_T_line_fill_ns:
        return LANE_FAULT;
    case CM_STATS_T_lock_wait_ns:
        return LANE_LOCK;
    case CM_STATS_T_barrier_ns:
        return LANE_BARRIER;
    case CM_STATS_T_handler_ns:
        return LANE_SERVE;
    default:
        return LANE_SYNC;
    }
}

/* One lane's stretches being written: the open one grows while the next starts within res. */
typedef struct {
    double s, e;
    bool   open;
} stretch_t;

static int flush(FILE *f, stretch_t *st, int y)
{
    if (!st->open) {
        return 0;
    }
    fprintf(f, "%.6f %d %.6f 0.4\n", (st->s + st->e) / 2, y, (st->e - st->s) / 2);
    st->open = false;
    return 1;
}

/* Returns the stretches written (0 or 1). */
static int put(FILE *f, stretch_t *st, int y, double s, double e, double res)
{
    int n;

    if (e <= s) {
        return 0;
    }
    if (st->open && s - st->e < res) {
        st->e = e;
        return 0;
    }
    n   = flush(f, st, y);
    *st = (stretch_t){s, e, true};
    return n;
}

void cmt_timeline(const char *base)
{
    char dat[4200], gp[4200], cmd[8600];
    double span_ms = 0, res;
    int drawn[NLANES] = {0}, plotted = 0;
    FILE *f;

    for (int i = 0; i < cmt_nprocs; i++) {
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            const cm_trace_rec_t *r = &cmt_procs[i].rec[k];
            double e = cmt_us(&cmt_procs[i], r->t + cmt_dur(r)) / 1e3;
            if (!cmt_is_meta(r) && e > span_ms) {
                span_ms = e;
            }
        }
    }
    res = span_ms / WIDTH_PX;
    snprintf(dat, sizeof(dat), "%s.dat", base);
    snprintf(gp, sizeof(gp), "%s.gp", base);
    f = fopen(dat, "w");
    if (f == NULL) {
        cmt_die(1, "%s: %s", dat, strerror(errno));
    }
    /* gnuplot's index: one block per lane, each the stretches of every rank. */
    for (int lane = 0; lane < NLANES; lane++) {
        fprintf(f, "# %s\n", lane_name[lane]);
        for (int i = 0; i < cmt_nprocs; i++) {
            const cmt_proc_t *p = &cmt_procs[i];
            int stack[64], depth = 0, y = (cmt_nprocs - 1 - i) * (NLANES + 1) + (NLANES - 1 - lane);
            double last = -1;
            stretch_t st = {0};

            for (size_t k = 0; k < p->n; k++) {
                const cm_trace_rec_t *r = &p->rec[k];
                double now;
                int in;
                if (r->tid != 0 || (r->kind != CM_TRACE_PHASE_BEGIN && r->kind != CM_TRACE_PHASE_END) ||
                    r->obj >= CM_STATS_NTIMERS) {
                    continue;
                }
                now = cmt_us(p, r->t) / 1e3;
                in  = depth ? lane_of(stack[depth - 1]) : LANE_COMPUTE;
                if (last >= 0 && in == lane) {
                    drawn[lane] += put(f, &st, y, last, now, res);
                }
                last = now;
                if (r->kind == CM_TRACE_PHASE_BEGIN && depth < 64) {
                    stack[depth++] = (int)r->obj;
                } else if (r->kind == CM_TRACE_PHASE_END && depth > 0) {
                    depth--;
                }
            }
            drawn[lane] += flush(f, &st, y); /* the last stretch out */
        }
        fprintf(f, "%s", (lane < NLANES - 1) ? "\n\n" : "");
    }
    if (fclose(f) != 0) {
        cmt_die(1, "%s: write failed", dat);
    }
    f = fopen(gp, "w");
    if (f == NULL) {
        cmt_die(1, "%s: %s", gp, strerror(errno));
    }
    for (int t = 0; t < 2; t++) {
        fprintf(f, "set terminal %s size %d,%d font 'sans,10'\nset output '%s.%s'\n",
                t ? "svg dynamic" : "pngcairo", WIDTH_PX + 200, 120 + 18 * cmt_nprocs * (NLANES + 1),
                base, t ? "svg" : "png");
        fprintf(f, "set termoption noenhanced\nset xlabel 'ms on rank 0 clock (the first event at 0)'\n"
                "set xrange [0:%.6f]\nset yrange [-1:%d]\nset style fill solid noborder\n"
                "set key outside right top\nset ytics (", span_ms, cmt_nprocs * (NLANES + 1) - 1);
        for (int i = 0; i < cmt_nprocs; i++) {
            fprintf(f, "%s'rank %d' %d", i ? ", " : "", cmt_procs[i].h.rank,
                    (cmt_nprocs - 1 - i) * (NLANES + 1) + NLANES / 2);
        }
        fprintf(f, ")\nset title 'where each rank spent its time: %s, %d processes'\nplot ",
                cmt_procs[0].h.protocol, cmt_nprocs);
        plotted = 0;
        for (int lane = 0; lane < NLANES; lane++) {
            if (drawn[lane] == 0) {
                continue; /* gnuplot warns of a block with no points */
            }
            fprintf(f, "%s'%s' index %d using 1:2:3:4 with boxxyerror lc rgb '%s' title '%s'",
                    plotted++ ? ", " : "", dat, lane, lane_colour[lane], lane_name[lane]);
        }
        if (plotted == 0) {
            cmt_die(1, "--timeline: the trace has no phases to draw");
        }
        fputc('\n', f);
    }
    if (fclose(f) != 0) {
        cmt_die(1, "%s: write failed", gp);
    }
    snprintf(cmd, sizeof(cmd), "gnuplot '%s'", gp);
    if (strchr(base, '\'') != NULL) {
        cmt_die(1, "--timeline %s: no ' in the name, please", base);
    }
    if (system(cmd) != 0) {
        cmt_die(1, "gnuplot %s failed (Debian: gnuplot-nox); the data is in %s", gp, dat);
    }
}

/* ---- locks over time ---------------------------------------------------------------------- */

typedef struct {
    uint64_t lock, wait;
} lock_wait_t;

static int cmp_lock_wait(const void *a, const void *b)
{
    const lock_wait_t *x = a, *y = b;
    return (x->wait < y->wait) ? 1 : (x->wait > y->wait) ? -1 : (x->lock > y->lock) - (x->lock < y->lock);
}

/* The nlocks locks waited for longest, into out (sorted); returns how many there are. */
static int longest_waits(lock_wait_t *out, int nlocks)
{
    lock_wait_t *all = NULL;
    size_t n = 0, cap = 0;

    for (int i = 0; i < cmt_nprocs; i++) {
        for (size_t k = 0; k < cmt_procs[i].n; k++) {
            const cm_trace_rec_t *r = &cmt_procs[i].rec[k];
            size_t j;
            if (r->kind != CM_TRACE_LOCK_WAIT) {
                continue;
            }
            for (j = 0; j < n && all[j].lock != r->obj; j++) {
            }
            if (j == n) {
                if (n == cap) {
                    cap = cap ? 2 * cap : 64;
                    all = realloc(all, cap * sizeof(*all));
                    if (all == NULL) {
                        cmt_die(1, "out of memory");
                    }
                }
                all[n++] = (lock_wait_t){r->obj, 0};
            }
            all[j].wait += r->dur;
        }
    }
    qsort(all, n, sizeof(*all), cmp_lock_wait);
    if ((size_t)nlocks > n) {
        nlocks = (int)n;
    }
    if (nlocks > 0) {
        memcpy(out, all, (size_t)nlocks * sizeof(*out));
    }
    free(all);
    return nlocks;
}

void cmt_lock_timeline(const char *base, int nlocks)
{
    lock_wait_t top[16];
    char dat[4200], gp[4200], cmd[8600];
    FILE *f;

    if (strchr(base, '\'') != NULL) {
        cmt_die(1, "--locks %s: no ' in the name, please", base);
    }
    nlocks = longest_waits(top, nlocks > 16 ? 16 : nlocks);
    if (nlocks == 0) {
        cmt_die(1, "--locks: the trace has no lock acquires");
    }
    for (int l = 0; l < nlocks; l++) {
        int drawn[3] = {0};
        static const char *const what[3] = {"waiting", "holding", "page fault in a hold"};
        static const char *const colour[3] = {"#ffbb78", "#d62728", "#1f77b4"};
        static const double half[3] = {0.15, 0.35, 0.22};
        int plotted = 0;

        snprintf(dat, sizeof(dat), "%s-lock%" PRIu64 ".dat", base, top[l].lock);
        snprintf(gp, sizeof(gp), "%s-lock%" PRIu64 ".gp", base, top[l].lock);
        f = fopen(dat, "w");
        if (f == NULL) {
            cmt_die(1, "%s: %s", dat, strerror(errno));
        }
        /* Three blocks: waits, holds, faults inside holds; a row per rank. */
        for (int b = 0; b < 3; b++) {
            for (int i = 0; i < cmt_nprocs; i++) {
                const cmt_proc_t *p = &cmt_procs[i];
                int y = cmt_nprocs - 1 - i;
                for (size_t k = 0; k < p->n; k++) {
                    const cm_trace_rec_t *r = &p->rec[k];
                    double s, e;
                    if (b < 2) {
                        if (r->kind != (b ? CM_TRACE_LOCK_HOLD : CM_TRACE_LOCK_WAIT) ||
                            r->obj != top[l].lock) {
                            continue;
                        }
                    } else {
                        /* A fault of the holding thread, inside one of this lock's holds:
                         * the hold's record comes after (written at the release). */
                        bool inside = false;
                        if (r->kind != CM_TRACE_FAULT_READ && r->kind != CM_TRACE_FAULT_WRITE) {
                            continue;
                        }
                        for (size_t j = k + 1; j < p->n && j < k + 4096; j++) {
                            const cm_trace_rec_t *h = &p->rec[j];
                            if (h->kind == CM_TRACE_LOCK_HOLD && h->tid == r->tid) {
                                inside = h->obj == top[l].lock && h->t <= r->t &&
                                         r->t + r->dur <= h->t + h->dur;
                                break;
                            }
                        }
                        if (!inside) {
                            continue;
                        }
                    }
                    s = cmt_us(p, r->t) / 1e3;
                    e = cmt_us(p, r->t + cmt_dur(r)) / 1e3;
                    fprintf(f, "%.6f %d %.6f %.2f\n", (s + e) / 2, y, (e - s) / 2, half[b]);
                    drawn[b]++;
                }
            }
            fprintf(f, "%s", (b < 2) ? "\n\n" : "");
        }
        if (fclose(f) != 0) {
            cmt_die(1, "%s: write failed", dat);
        }
        f = fopen(gp, "w");
        if (f == NULL) {
            cmt_die(1, "%s: %s", gp, strerror(errno));
        }
        for (int t = 0; t < 2; t++) {
            fprintf(f, "set terminal %s size %d,%d font 'sans,10'\nset output '%s-lock%" PRIu64
                    ".%s'\nset termoption noenhanced\nset xlabel 'ms on rank 0 clock (the first "
                    "event at 0)'\nset yrange [-1:%d]\nset style fill solid noborder\nset key "
                    "outside right top\nset ytics (", t ? "svg dynamic" : "pngcairo",
                    WIDTH_PX + 200, 160 + 40 * cmt_nprocs, base, top[l].lock, t ? "svg" : "png",
                    cmt_nprocs);
            for (int i = 0; i < cmt_nprocs; i++) {
                fprintf(f, "%s'rank %d' %d", i ? ", " : "", cmt_procs[i].h.rank, cmt_nprocs - 1 - i);
            }
            fprintf(f, ")\nset title 'lock %" PRIu64 ": %.3f ms waited in all (%s, %d processes)'\nplot ",
                    top[l].lock, (double)top[l].wait / 1e6, cmt_procs[0].h.protocol, cmt_nprocs);
            plotted = 0;
            for (int b = 0; b < 3; b++) {
                if (drawn[b] == 0) {
                    continue;
                }
                fprintf(f, "%s'%s' index %d using 1:2:3:4 with boxxyerror lc rgb '%s' title '%s'",
                        plotted++ ? ", " : "", dat, b, colour[b], what[b]);
            }
            fputc('\n', f);
        }
        if (fclose(f) != 0) {
            cmt_die(1, "%s: write failed", gp);
        }
        snprintf(cmd, sizeof(cmd), "gnuplot '%s'", gp);
        if (system(cmd) != 0) {
            cmt_die(1, "gnuplot %s failed (Debian: gnuplot-nox); the data is in %s", gp, dat);
        }
    }
}
