/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mgrid: a simplified shared-memory version of the NAS MG multigrid kernel
 * (Cashmere paper, section 3.1): V-cycles for the Poisson equation
 * -laplace(u) = f on a box with u = 0 on the boundary.
 *
 * The finest grid has nx x ny x nz intervals of the same width h = 1/nx (the
 * box is 1 x ny/nx x nz/nx: the unit cube when nx = ny = nz); the unknowns are
 * the interior vertices, the boundary vertices are stored and stay 0. f is 0
 * except +1 at 10 and -1 at 10 vertices picked by a hash (NAS MG's charges).
 * Levels halve every dimension while all are even and at least 4 (paper size:
 * 64x64x32, 32x32x16, 16x16x8, 8x8x4, 4x4x2). A is the 7-point Laplacian
 * (6 u - neighbours) / h^2. Like NAS MG's mg3P, a V-cycle smooths only on the
 * way up (a V(0, relax) cycle in the correction scheme):
 *   r = f - A u on the finest level;                                 barrier
 *   down to the coarsest level: r_c = R r_f (full weighting, the
 *     27-point tensor product of [1/4 1/2 1/4]); the coarsest
 *     correction starts at 0;                              barrier per level
 *   coarsest level: relax steps of A e = r;                 barrier per step
 *   up to the finest: e_f = P e_c (trilinear interpolation; added to u
 *     on the finest level), then relax steps of A e = r (A u = f on the
 *     finest level);                             barrier per prolongation/step
 * and after the last cycle a final r = f - A u. A relaxation step is weighted
 * Jacobi (omega = 6/7) from one array into another (the two are swapped), so no
 * value depends on the order in which points or processes are updated.
 *
 * Every array is (nz+1) planes of (ny+1) x (nx+1) doubles; a plane that is a
 * page or more starts on a page (its stride rounded up to whole pages), so on
 * the fine levels each process's band of planes is its own pages. Each level's
 * interior planes 1..nz-1 are split into contiguous bands, one per process:
 * a process computes only points of its own planes, reading its neighbours'
 * boundary planes (and, across levels, the planes under or over its band).
 *
 * Every value is computed the same way whatever the number of processes, so
 * rank 0 runs the same kernels sequentially in private memory and compares the
 * final u and r bit for bit; its run also records the residual norm
 * sqrt(sum r^2 / interior points) before and after every V-cycle, which must
 * decrease from cycle to cycle. The result line gives the first and the last.
 *
 *   cmrun -n P mgrid [--size test|paper|large] [--nx X] [--ny Y] [--nz Z] [--iters K] [--relax S]
 *     test: 16 x 16 x 8; paper: 64 x 64 x 32; large: 128 x 128 x 64;
 *     2 V-cycles and 5 relaxation steps per level at every size
 */
#include "app.h"

#include <math.h>
#include <stdint.h>

#define MG_FLAGS   "[--nx X] [--ny Y] [--nz Z] [--iters K] [--relax S]"
#define MG_PAGE    512L /* doubles per 4 KiB page */
#define MG_LEVELS  32
#define MG_CHARGES 20
#define MG_OMEGA   (6.0 / 7.0)

typedef struct {
    long    nx, ny, nz; /* intervals; points 0..nx etc., the outer ones on the boundary */
    long    px, ps;     /* strides of a row and a plane, in doubles */
    double  h2inv;      /* 1 / h^2 on this level */
    double *e[2];       /* the level's solution (u on the finest level) and its relaxation twin */
    double *r;          /* the right-hand side of the level's correction equation / residual */
    int     cur;        /* which e[] holds the current values */
} mg_level;

typedef struct {
    int      levels;    /* level 0 is the coarsest, levels - 1 the finest */
    mg_level lv[MG_LEVELS];
    double  *f;         /* the right-hand side on the finest level */
} mg_grid;

static size_t mg_words(const mg_level *L)
{
    return (size_t)((L->nz + 1) * L->ps);
}

/* The levels' geometry, and their arrays from alloc (cm_malloc: the same calls in every process). */
static void mg_setup(mg_grid *g, long nx, long ny, long nz, void *(*alloc)(size_t))
{
    int n = 1;
    while (n < MG_LEVELS && nx % 2 == 0 && ny % 2 == 0 && nz % 2 == 0 && nx >= 4 && ny >= 4 && nz >= 4) {
        nx /= 2, ny /= 2, nz /= 2, n++;
    }
    g->levels = n;
    for (int l = 0; l < n; l++) {
        mg_level *L = &g->lv[l];
        L->nx = nx << l, L->ny = ny << l, L->nz = nz << l;
        L->px = L->nx + 1;
        L->ps = L->px * (L->ny + 1);
        if (L->ps >= MG_PAGE) {
            L->ps = (L->ps + MG_PAGE - 1) / MG_PAGE * MG_PAGE;
        }
        L->h2inv = (double)L->nx * (double)L->nx; /* h = 1 / nx on every level */
        for (int k = 0; k < 2; k++) {
            L->e[k] = alloc(mg_words(L) * sizeof(double));
        }
        L->r   = alloc(mg_words(L) * sizeof(double));
        L->cur = 0;
        if (L->e[0] == NULL || L->e[1] == NULL || L->r == NULL) {
            cm_abort(1, "mgrid: out of memory for the grids");
        }
    }
    g->f = alloc(mg_words(&g->lv[n - 1]) * sizeof(double));
    if (g->f == NULL) {
        cm_abort(1, "mgrid: out of memory for the grids");
    }
}

/* Process me's band [*lo, *hi) of the interior planes 1..nz-1. */
static void mg_band(const mg_level *L, int me, int np, long *lo, long *hi)
{
    *lo = 1 + ((L->nz - 1) * me) / np;
    *hi = 1 + ((L->nz - 1) * (me + 1)) / np;
}

/* Zeroes every array's planes in process me's bands (rank 0: the boundary planes too), sets the charges. */
static void mg_init(mg_grid *g, int me, int np)
{
    const mg_level *F = &g->lv[g->levels - 1];
    long lo, hi;

    for (int l = 0; l < g->levels; l++) {
        mg_level *L = &g->lv[l];
        mg_band(L, me, np, &lo, &hi);
        for (long k = 0; k <= L->nz; k++) {
            if ((k >= lo && k < hi) || (me == 0 && (k == 0 || k == L->nz))) {
                size_t bytes = (size_t)L->ps * sizeof(double);
                memset(L->e[0] + k * L->ps, 0, bytes);
                memset(L->e[1] + k * L->ps, 0, bytes);
                memset(L->r + k * L->ps, 0, bytes);
                if (l == g->levels - 1) {
                    memset(g->f + k * L->ps, 0, bytes);
                }
            }
        }
    }
    mg_band(F, me, np, &lo, &hi);
    for (int c = 0; c < MG_CHARGES; c++) { /* a later charge on the same point wins */
        long i = 1 + (long)(app_hash64(3 * (uint64_t)c) % (uint64_t)(F->nx - 1));
        long j = 1 + (long)(app_hash64(3 * (uint64_t)c + 1) % (uint64_t)(F->ny - 1));
        long k = 1 + (long)(app_hash64(3 * (uint64_t)c + 2) % (uint64_t)(F->nz - 1));
        if (k >= lo && k < hi) {
            g->f[k * F->ps + j * F->px + i] = (c < MG_CHARGES / 2) ? 1.0 : -1.0;
        }
    }
}

/* (A u)[p] for the 7-point Laplacian. */
static inline double mg_apply(const double *u, long p, long px, long ps, double h2inv)
{
    double nb = u[p - 1] + u[p + 1] + u[p - px] + u[p + px] + u[p - ps] + u[p + ps];
    return (6.0 * u[p] - nb) * h2inv;
}

/* r = rhs - A u on planes [lo, hi). */
static void mg_resid(double *r, const double *u, const double *rhs, const mg_level *L, long lo, long hi)
{
    for (long k = lo; k < hi; k++) {
        for (long j = 1; j < L->ny; j++) {
            long row = k * L->ps + j * L->px;
            for (long i = 1; i < L->nx; i++) {
                r[row + i] = rhs[row + i] - mg_apply(u, row + i, L->px, L->ps, L->h2inv);
            }
        }
    }
}

/* One weighted Jacobi step of A u = rhs from in to out, planes [lo, hi). */
static void mg_jacobi(double *out, const double *in, const double *rhs, const mg_level *L, long lo, long hi)
{
    const double c = MG_OMEGA / (6.0 * L->h2inv);
    for (long k = lo; k < hi; k++) {
        for (long j = 1; j < L->ny; j++) {
            long row = k * L->ps + j * L->px;
            for (long i = 1; i < L->nx; i++) {
                long p = row + i;
                out[p] = in[p] + c * (rhs[p] - mg_apply(in, p, L->px, L->ps, L->h2inv));
            }
        }
    }
}

/* Full weighting: coarse planes [lo, hi) of rc = R rf. */
static void mg_restrict(double *rc, const mg_level *C, const double *rf, const mg_level *F, long lo, long hi)
{
    const long fx = F->px, fs = F->ps;
    for (long k = lo; k < hi; k++) {
        for (long j = 1; j < C->ny; j++) {
            for (long i = 1; i < C->nx; i++) {
                const double *q = rf + 2 * k * fs + 2 * j * fx + 2 * i;
                double centre = q[0];
                double faces  = q[-1] + q[1] + q[-fx] + q[fx] + q[-fs] + q[fs];
                double edges  = q[-fx - 1] + q[-fx + 1] + q[fx - 1] + q[fx + 1] + q[-fs - 1] + q[-fs + 1] +
                               q[fs - 1] + q[fs + 1] + q[-fs - fx] + q[-fs + fx] + q[fs - fx] + q[fs + fx];
                double corners = q[-fs - fx - 1] + q[-fs - fx + 1] + q[-fs + fx - 1] + q[-fs + fx + 1] +
                                 q[fs - fx - 1] + q[fs - fx + 1] + q[fs + fx - 1] + q[fs + fx + 1];
                rc[k * C->ps + j * C->px + i] =
                    (8.0 * centre + 4.0 * faces + 2.0 * edges + corners) * (1.0 / 64.0);
            }
        }
    }
}

/* Trilinear interpolation: fine planes [lo, hi) of ef = P ec, or ef += P ec where add. */
static void mg_prolong(double *ef, const mg_level *F, const double *ec, const mg_level *C, long lo, long hi,
                       bool add)
{
    for (long k = lo; k < hi; k++) {
        const double *z0 = ec + (k >> 1) * C->ps, *z1 = ec + ((k + 1) >> 1) * C->ps;
        for (long j = 1; j < F->ny; j++) {
            long y0 = (j >> 1) * C->px, y1 = ((j + 1) >> 1) * C->px;
            for (long i = 1; i < F->nx; i++) {
                long x0 = i >> 1, x1 = (i + 1) >> 1; /* the same point where i is even: exact */
                double a = 0.5 * (0.5 * (z0[y0 + x0] + z0[y0 + x1]) + 0.5 * (z0[y1 + x0] + z0[y1 + x1]));
                double b = 0.5 * (0.5 * (z1[y0 + x0] + z1[y0 + x1]) + 0.5 * (z1[y1 + x0] + z1[y1 + x1]));
                long p   = k * F->ps + j * F->px + i;
                ef[p]    = (add ? ef[p] : 0.0) + 0.5 * (a + b);
            }
        }
    }
}

static void mg_sync(bool sync)
{
    if (sync) {
        cm_barrier();
    }
}

/* relax Jacobi steps of level l's equation (A u = f on the finest level), each ended by a barrier. */
static void mg_relax(mg_grid *g, int l, long relax, int me, int np, bool sync)
{
    mg_level *L = &g->lv[l];
    const double *rhs = (l == g->levels - 1) ? g->f : L->r;
    long lo, hi;
    mg_band(L, me, np, &lo, &hi);
    for (long s = 0; s < relax; s++) {
        mg_jacobi(L->e[1 - L->cur], L->e[L->cur], rhs, L, lo, hi);
        L->cur = 1 - L->cur;
        mg_sync(sync);
    }
}

/* sqrt(sum r^2 / interior points) of the finest level's residual, summed in a fixed order. */
static double mg_norm(const mg_grid *g)
{
    const mg_level *F = &g->lv[g->levels - 1];
    double sum = 0.0;
    for (long k = 1; k < F->nz; k++) {
        for (long j = 1; j < F->ny; j++) {
            for (long i = 1; i < F->nx; i++) {
                double v = F->r[k * F->ps + j * F->px + i];
                sum += v * v;
            }
        }
    }
    return sqrt(sum / (double)((F->nx - 1) * (F->ny - 1) * (F->nz - 1)));
}

/* r = f - A u on the finest level, then a barrier. */
static void mg_top_resid(mg_grid *g, int me, int np, bool sync)
{
    mg_level *F = &g->lv[g->levels - 1];
    long lo, hi;
    mg_band(F, me, np, &lo, &hi);
    mg_resid(F->r, F->e[F->cur], g->f, F, lo, hi);
    mg_sync(sync);
}

/*
 * The V-cycles as process me of np (the reference passes 0, 1 and no barriers); where norms is
 * not NULL, norms[c] gets the residual norm before cycle c and norms[iters] after the last.
 */
static void mg_solve(mg_grid *g, long iters, long relax, int me, int np, bool sync, double *norms)
{
    const int top = g->levels - 1;
    long lo, hi;

    for (long c = 0; c < iters; c++) {
        mg_top_resid(g, me, np, sync);
        if (norms != NULL) {
            norms[c] = mg_norm(g);
        }
        for (int l = top - 1; l >= 0; l--) { /* down: restrict the residual */
            mg_level *C = &g->lv[l];
            mg_band(C, me, np, &lo, &hi);
            mg_restrict(C->r, C, g->lv[l + 1].r, &g->lv[l + 1], lo, hi);
            if (l == 0 && hi > lo) { /* the coarsest correction starts at 0 */
                memset(C->e[C->cur] + lo * C->ps, 0, (size_t)((hi - lo) * C->ps) * sizeof(double));
            }
            mg_sync(sync);
        }
        mg_relax(g, 0, relax, me, np, sync);
        for (int l = 1; l <= top; l++) { /* up: interpolate the correction and smooth */
            mg_level *F = &g->lv[l], *C = &g->lv[l - 1];
            mg_band(F, me, np, &lo, &hi);
            mg_prolong(F->e[F->cur], F, C->e[C->cur], C, lo, hi, l == top);
            mg_sync(sync);
            mg_relax(g, l, relax, me, np, sync);
        }
    }
    mg_top_resid(g, me, np, sync);
    if (norms != NULL) {
        norms[iters] = mg_norm(g);
    }
}

/* Compares one finest-level array with the reference's; returns the number of differing points. */
static long mg_compare(const char *what, const double *a, const double *ref, const mg_level *F, long bad)
{
    for (long k = 0; k <= F->nz; k++) {
        for (long j = 0; j <= F->ny; j++) {
            for (long i = 0; i <= F->nx; i++) {
                long p = k * F->ps + j * F->px + i;
                if (memcmp(&a[p], &ref[p], sizeof(double)) != 0 && bad++ < 3) {
                    fprintf(stderr, "mgrid: %s(%ld, %ld, %ld) = %.17g, sequential %.17g\n", what, i, j,
                            k, a[p], ref[p]);
                }
            }
        }
    }
    return bad;
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    app_size_t size = app_size(argc, argv, "mgrid", MG_FLAGS);
    long scale = size == APP_SIZE_TEST ? 1 : size == APP_SIZE_PAPER ? 4 : 8;
    long nx    = app_long(argc, argv, "--nx", 16 * scale, "mgrid", MG_FLAGS);
    long ny    = app_long(argc, argv, "--ny", 16 * scale, "mgrid", MG_FLAGS);
    long nz    = app_long(argc, argv, "--nz", 8 * scale, "mgrid", MG_FLAGS);
    long iters = app_long(argc, argv, "--iters", 2, "mgrid", MG_FLAGS);
    long relax = app_long(argc, argv, "--relax", 5, "mgrid", MG_FLAGS);
    bool corrupt = app_flag(argc, argv, "--corrupt"); /* proves the check can fail */
    const int me = cm_rank(), np = cm_nprocs();
    static mg_grid g;
    double t0, t1;
    char params[192];
    bool ok = true;

    if (nx < 2 || ny < 2 || nz < 2 || nx > 4096 || ny > 4096 || nz > 4096 || iters > 1000 || relax > 1000) {
        app_usage("mgrid", MG_FLAGS);
    }
    mg_setup(&g, nx, ny, nz, cm_malloc);
    mg_level *F = &g.lv[g.levels - 1];

    /* Initialization ends first, so each band's pages move to the process that owns them. */
    cm_init_done();
    mg_init(&g, me, np);
    cm_barrier();
    cm_stats_reset();

    t0 = cm_wtime();
    mg_solve(&g, iters, relax, me, np, true, NULL);
    t1 = cm_wtime();
    cm_stats_stop(); /* the statistics are the timed section's */
    double *u = F->e[F->cur];
    if (corrupt && me == np - 1) {
        u[(F->nz / 2) * F->ps + (F->ny / 2) * F->px + F->nx / 2] += 1.0;
    }
    cm_barrier();

    double *norms = malloc((size_t)(iters + 1) * sizeof(double));
    if (norms == NULL) {
        cm_abort(1, "mgrid: out of memory");
    }
    if (me == 0) {
        static mg_grid ref;
        long bad = 0;
        mg_setup(&ref, nx, ny, nz, malloc);
        mg_init(&ref, 0, 1);
        mg_solve(&ref, iters, relax, 0, 1, false, norms);
        const mg_level *RF = &ref.lv[ref.levels - 1];
        bad = mg_compare("u", u, RF->e[RF->cur], F, bad);
        bad = mg_compare("r", F->r, RF->r, F, bad);
        ok = (bad == 0);
        for (long c = 1; c <= iters; c++) { /* each V-cycle reduces the residual (down to rounding) */
            if (!(norms[c] < norms[c - 1] || norms[c] <= 1e-12 * norms[0])) {
                fprintf(stderr, "mgrid: V-cycle %ld took the residual norm from %.6g to %.6g\n", c,
                        norms[c - 1], norms[c]);
                ok = false;
            }
        }
        for (int l = 0; l < ref.levels; l++) {
            free(ref.lv[l].e[0]);
            free(ref.lv[l].e[1]);
            free(ref.lv[l].r);
        }
        free(ref.f);
        norms[iters] = mg_norm(&g); /* the parallel run's own (equal when verified) */
        snprintf(params, sizeof(params),
                 "%ld x %ld x %ld, %d levels, %ld V-cycles, %ld relaxations: residual %.3e -> %.3e", nx, ny,
                 nz, g.levels, iters, relax, norms[0], norms[iters]);
    } else {
        snprintf(params, sizeof(params), "%ld x %ld x %ld", nx, ny, nz);
    }
    free(norms);
    int status = app_report("mgrid", params, t1 - t0, ok);
    cm_finalize();
    return status;
}
