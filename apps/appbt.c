/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * appbt: the NAS BT application benchmark in the form of its shared-memory
 * translation (Cashmere paper, section 3.1): a 3D grid with 5 unknowns per
 * point, advanced by an ADI (approximate factorization) scheme whose every
 * time step is compute_rhs, then block-tridiagonal solves with 5 x 5 blocks
 * along x lines, y lines and z lines, then the update.
 *
 * Simplified but structurally faithful model problem: the linear system
 *   u_t = A u_xx + B u_yy + C u_zz + f(x, y, z, t)
 * on the unit cube, u in R^5, with constant, coupled, diagonally dominant
 * 5 x 5 matrices A, B, C and a manufactured exact solution
 *   u_m = c_m + exp(-t) sin(p_m pi x) sin(q_m pi y) sin(s_m pi z)
 * (integer modes, so the boundary values c_m are constant in time; f is
 * exp(-t) times a fixed forcing field, which is precomputed as in BT). On an
 * n^3 grid (h = 1/(n-1)) with time step dt, one step solves
 *   (I - dt A Dxx)(I - dt B Dyy)(I - dt C Dzz) du = dt (A Dxx + B Dyy + C Dzz) u + dt f(t+dt)
 * with du = 0 on the boundary, u += du. Each line solve is the block Thomas
 * algorithm as in BT: the 5 x 5 blocks are formed at every point, the
 * diagonal block is reduced by the previous point's result and inverted by
 * Gauss-Jordan elimination without pivoting (BT's binvcrhs), then back
 * substitution.
 *
 * Layout and parallelization (as in the shared-memory BT): u, rhs and the
 * forcing are arrays [k][j][i][5] of doubles, each k-plane padded to whole
 * pages. compute_rhs, the x and y solves and the update run on contiguous,
 * page-aligned bands of k-planes (each process initializes its band, so the
 * pages' homes are its own); the z solve runs on bands of j (every process
 * touches a slice of every plane). Barriers: after the y solve, after the z
 * solve, after the update.
 *
 * Verification: every point's arithmetic is the same whatever the partition,
 * so rank 0 reruns the whole computation privately with the same kernels and
 * compares every value of u bit for bit. That cannot see a wrong kernel, so
 * it also checks the error against the exact solution:
 * max |u - u_exact| / exp(-t) <= 6 h^2 + dt. The scheme is second order in
 * space and first order in time; the error levels off near 3.6 h^2 (0.061
 * at n = 8, 0.0068 at n = 24 after 100 steps), and a kernel off by a sign or
 * an index goes far above it.
 *
 *   cmrun -n P appbt [--size test|paper|large] [--n N] [--steps K]
 *     test: 8^3, 2 steps; paper: 24^3, 200 steps (the NAS class W grid and step count);
 *     large: 64^3, 200 (the class A grid); dt = 0.005
 */
#include "app.h"

#include <math.h>

#define APPBT_FLAGS   "[--n N] [--steps K]"
#define APPBT_DT      0.005
/* The bound on the error against the exact solution, relative to exp(-t): 6 h^2 + dt. */
#define APPBT_ERR_TOL(h, dt) (6.0 * (h) * (h) + (dt))
#define PAGE_DOUBLES  512 /* doubles per 4 KiB page */
#define NV            5   /* unknowns per point */

typedef double mat_t[NV][NV];

/* The problem: coupling matrices, modes of the exact solution, boundary values. */
typedef struct {
    long n;      /* points per dimension, boundary included */
    long ps;     /* doubles per k-plane (padded to whole pages) */
    double h, dt;
    mat_t m[3];  /* A, B, C */
    mat_t rm[3]; /* dt / h^2 times each */
} problem_t;

static const int modes[NV][3] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 2, 1}};

static double cval(int m)
{
    return 1.0 + 0.5 * m;
}

/* Diagonally dominant, non-symmetric, different per direction d. */
static void coupling(mat_t a, int d)
{
    for (int l = 0; l < NV; l++) {
        for (int m = 0; m < NV; m++) {
            a[l][m] = (l == m) ? 1.0 + 0.1 * l + 0.05 * d : 0.04 * sin(1.0 + l + 2.0 * m + 3.0 * d);
        }
    }
}

static void problem_init(problem_t *pb, long n)
{
    pb->n = n;
    pb->ps = (n * n * NV + PAGE_DOUBLES - 1) / PAGE_DOUBLES * PAGE_DOUBLES;
    pb->h = 1.0 / (double)(n - 1);
    pb->dt = APPBT_DT;
    for (int d = 0; d < 3; d++) {
        coupling(pb->m[d], d);
        for (int l = 0; l < NV; l++) {
            for (int m = 0; m < NV; m++) {
                pb->rm[d][l][m] = pb->dt / (pb->h * pb->h) * pb->m[d][l][m];
            }
        }
    }
}

/* The spatial part of the exact solution's time-dependent term at a point. */
static void wave(const problem_t *pb, long k, long j, long i, double w[NV])
{
    double x = (double)i * pb->h, y = (double)j * pb->h, z = (double)k * pb->h;
    for (int m = 0; m < NV; m++) {
        w[m] = sin(modes[m][0] * M_PI * x) * sin(modes[m][1] * M_PI * y) * sin(modes[m][2] * M_PI * z);
    }
}

static void exact(const problem_t *pb, long k, long j, long i, double t, double u[NV])
{
    double w[NV];
    wave(pb, k, j, i, w);
    for (int m = 0; m < NV; m++) {
        u[m] = cval(m) + exp(-t) * w[m];
    }
}

/* f = exp(-t) F with F = (-I + pi^2 (p^2 A + q^2 B + s^2 C)) w (the modes act per column). */
static void forcing_at(const problem_t *pb, long k, long j, long i, double f[NV])
{
    double w[NV];
    wave(pb, k, j, i, w);
    for (int l = 0; l < NV; l++) {
        double s = -w[l];
        for (int m = 0; m < NV; m++) {
            for (int d = 0; d < 3; d++) {
                s += M_PI * M_PI * modes[m][d] * modes[m][d] * pb->m[d][l][m] * w[m];
            }
        }
        f[l] = s;
    }
}

static double *at(const problem_t *pb, double *a, long k, long j, long i)
{
    return a + k * pb->ps + (j * pb->n + i) * NV;
}

/* Initial values of planes [k0, k1): u exact at t = 0, rhs zero, the forcing field. */
static void init_planes(const problem_t *pb, double *u, double *rhs, double *frc, long k0, long k1)
{
    for (long k = k0; k < k1; k++) {
        memset(rhs + k * pb->ps, 0, (size_t)pb->ps * sizeof(double));
        memset(u + k * pb->ps, 0, (size_t)pb->ps * sizeof(double));
        memset(frc + k * pb->ps, 0, (size_t)pb->ps * sizeof(double));
        for (long j = 0; j < pb->n; j++) {
            for (long i = 0; i < pb->n; i++) {
                exact(pb, k, j, i, 0.0, at(pb, u, k, j, i));
                forcing_at(pb, k, j, i, at(pb, frc, k, j, i));
            }
        }
    }
}

/* rhs = dt (A Dxx + B Dyy + C Dzz) u + dt exp(-t) F at the interior points of planes [k0, k1). */
static void compute_rhs(const problem_t *pb, double *u, double *rhs, double *frc, long k0, long k1,
                        double t)
{
    const long n = pb->n, sx = NV, sy = n * NV, sz = pb->ps;
    const double ft = pb->dt * exp(-t);
    for (long k = (k0 > 1 ? k0 : 1); k < k1 && k < n - 1; k++) {
        for (long j = 1; j < n - 1; j++) {
            for (long i = 1; i < n - 1; i++) {
                const double *c = at(pb, u, k, j, i);
                const double *f = at(pb, frc, k, j, i);
                double *r = at(pb, rhs, k, j, i);
                double d2[3][NV];
                for (int m = 0; m < NV; m++) {
                    d2[0][m] = c[m + sx] - 2.0 * c[m] + c[m - sx];
                    d2[1][m] = c[m + sy] - 2.0 * c[m] + c[m - sy];
                    d2[2][m] = c[m + sz] - 2.0 * c[m] + c[m - sz];
                }
                for (int l = 0; l < NV; l++) {
                    double s = ft * f[l];
                    for (int d = 0; d < 3; d++) {
                        for (int m = 0; m < NV; m++) {
                            s += pb->rm[d][l][m] * d2[d][m];
                        }
                    }
                    r[l] = s;
                }
            }
        }
    }
}

/* d -= a b (5 x 5), BT's matmul_sub. */
static void matmul_sub(const mat_t a, const mat_t b, mat_t d)
{
    for (int l = 0; l < NV; l++) {
        for (int m = 0; m < NV; m++) {
            double s = d[l][m];
            for (int q = 0; q < NV; q++) {
                s -= a[l][q] * b[q][m];
            }
            d[l][m] = s;
        }
    }
}

/* x -= a y, BT's matvec_sub. */
static void matvec_sub(const mat_t a, const double *y, double *x)
{
    for (int l = 0; l < NV; l++) {
        double s = x[l];
        for (int q = 0; q < NV; q++) {
            s -= a[l][q] * y[q];
        }
        x[l] = s;
    }
}

/* c := d^-1 c and r := d^-1 r by Gauss-Jordan elimination without pivoting (BT's binvcrhs); d is destroyed. c may be NULL. */
static void binvcrhs(mat_t d, mat_t c, double *r)
{
    for (int p = 0; p < NV; p++) {
        double piv = 1.0 / d[p][p];
        for (int m = p + 1; m < NV; m++) {
            d[p][m] *= piv;
        }
        if (c != NULL) {
            for (int m = 0; m < NV; m++) {
                c[p][m] *= piv;
            }
        }
        r[p] *= piv;
        for (int l = 0; l < NV; l++) {
            if (l == p) {
                continue;
            }
            double coeff = d[l][p];
            for (int m = p + 1; m < NV; m++) {
                d[l][m] -= coeff * d[p][m];
            }
            if (c != NULL) {
                for (int m = 0; m < NV; m++) {
                    c[l][m] -= coeff * c[p][m];
                }
            }
            r[l] -= coeff * r[p];
        }
    }
}

/* A process's private work space for one line: the eliminated upper blocks and the line's values. */
typedef struct {
    mat_t *cw;
    double *xb;
} line_ws_t;

/*
 * Solves one line in place: (I - r M d2) x = b at its interior points 1..n-2,
 * x = 0 at both ends; point p's 5 values are line[p * stride ...]. The line
 * is gathered into private memory, solved there and scattered back, so the
 * shared array sees one store per value.
 */
static void solve_line(double *line, long stride, long n, const mat_t rm, line_ws_t *ws)
{
    mat_t *cw = ws->cw;
    double *xb = ws->xb;
    for (long p = 1; p < n - 1; p++) {
        memcpy(xb + p * NV, line + p * stride, NV * sizeof(double));
    }
    for (long p = 1; p < n - 1; p++) {
        mat_t lo, di;
        double *x = xb + p * NV;
        /* the blocks at this point: lower and upper -rM, diagonal I + 2rM */
        for (int l = 0; l < NV; l++) {
            for (int m = 0; m < NV; m++) {
                lo[l][m] = -rm[l][m];
                cw[p][l][m] = -rm[l][m];
                di[l][m] = (l == m ? 1.0 : 0.0) + 2.0 * rm[l][m];
            }
        }
        if (p > 1) {
            matmul_sub(lo, cw[p - 1], di);
            matvec_sub(lo, x - NV, x);
        }
        binvcrhs(di, p < n - 2 ? cw[p] : NULL, x);
    }
    for (long p = n - 3; p >= 1; p--) {
        matvec_sub(cw[p], xb + (p + 1) * NV, xb + p * NV);
    }
    for (long p = 1; p < n - 1; p++) {
        memcpy(line + p * stride, xb + p * NV, NV * sizeof(double));
    }
}

/* The x solve (pb->rm[0]) or y solve (pb->rm[1]) on planes [k0, k1). */
static void xy_solve(const problem_t *pb, double *rhs, long k0, long k1, int dir, line_ws_t *ws)
{
    const long n = pb->n;
    for (long k = (k0 > 1 ? k0 : 1); k < k1 && k < n - 1; k++) {
        for (long q = 1; q < n - 1; q++) {
            if (dir == 0) {
                solve_line(at(pb, rhs, k, q, 0), NV, n, pb->rm[0], ws); /* x line at j = q */
            } else {
                solve_line(at(pb, rhs, k, 0, q), n * NV, n, pb->rm[1], ws); /* y line at i = q */
            }
        }
    }
}

/* The z solve on rows j in [j0, j1) (interior ones). */
static void z_solve(const problem_t *pb, double *rhs, long j0, long j1, line_ws_t *ws)
{
    const long n = pb->n;
    for (long j = (j0 > 1 ? j0 : 1); j < j1 && j < n - 1; j++) {
        for (long i = 1; i < n - 1; i++) {
            solve_line(at(pb, rhs, 0, j, i), pb->ps, n, pb->rm[2], ws);
        }
    }
}

/* u += du at the interior points of planes [k0, k1). */
static void add(const problem_t *pb, double *u, double *rhs, long k0, long k1)
{
    const long n = pb->n;
    for (long k = (k0 > 1 ? k0 : 1); k < k1 && k < n - 1; k++) {
        for (long j = 1; j < n - 1; j++) {
            double *x = at(pb, u, k, j, 1), *d = at(pb, rhs, k, j, 1);
            for (long q = 0; q < (n - 2) * NV; q++) {
                x[q] += d[q];
            }
        }
    }
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    app_size_t size = app_size(argc, argv, "appbt", APPBT_FLAGS);
    long n     = app_long(argc, argv, "--n", size == APP_SIZE_TEST ? 8 : size == APP_SIZE_PAPER ? 24 : 64,
                          "appbt", APPBT_FLAGS);
    long steps = app_long(argc, argv, "--steps", size == APP_SIZE_TEST ? 2 : 200,
                          "appbt", APPBT_FLAGS);
    bool corrupt = app_flag(argc, argv, "--corrupt"); /* proves the check can fail */
    const int me = cm_rank(), np = cm_nprocs();
    problem_t pb;
    if (n < 5 || n > 1024) {
        app_usage("appbt", APPBT_FLAGS);
    }
    problem_init(&pb, n);
    const size_t bytes = (size_t)n * (size_t)pb.ps * sizeof(double);
    double *u = cm_malloc(bytes), *rhs = cm_malloc(bytes), *frc = cm_malloc(bytes);
    /* my bands: planes [klo, khi) of all n, rows [jlo, jhi) of the interior ones */
    long klo = (n * me) / np, khi = (n * (me + 1)) / np;
    long jlo = 1 + ((n - 2) * me) / np, jhi = 1 + ((n - 2) * (me + 1)) / np;
    line_ws_t ws = {malloc((size_t)n * sizeof(mat_t)), malloc((size_t)n * NV * sizeof(double))};
    double t0, t1, err = 0.0;
    char params[160];
    bool ok = true;

    if (ws.cw == NULL || ws.xb == NULL) {
        cm_abort(1, "appbt: out of memory");
    }
    cm_init_done();
    init_planes(&pb, u, rhs, frc, klo, khi);
    cm_barrier();
    cm_stats_reset();

    t0 = cm_wtime();
    for (long s = 0; s < steps; s++) {
        compute_rhs(&pb, u, rhs, frc, klo, khi, (double)(s + 1) * pb.dt);
        xy_solve(&pb, rhs, klo, khi, 0, &ws);
        xy_solve(&pb, rhs, klo, khi, 1, &ws);
        cm_barrier();
        z_solve(&pb, rhs, jlo, jhi, &ws);
        cm_barrier();
        add(&pb, u, rhs, klo, khi);
        cm_barrier();
    }
    t1 = cm_wtime();
    cm_stats_stop(); /* the statistics are the timed section's */
    if (corrupt && me == np - 1) {
        at(&pb, u, n / 2, n / 2, n / 2)[2] += 1e-6;
    }
    cm_barrier();

    if (me == 0) {
        double *ru = malloc(bytes), *rr = malloc(bytes), *rf = malloc(bytes);
        const double tend = (double)steps * pb.dt;
        long bad = 0;
        if (ru == NULL || rr == NULL || rf == NULL) {
            cm_abort(1, "appbt: out of memory for the reference run");
        }
        init_planes(&pb, ru, rr, rf, 0, n);
        for (long s = 0; s < steps; s++) {
            compute_rhs(&pb, ru, rr, rf, 0, n, (double)(s + 1) * pb.dt);
            xy_solve(&pb, rr, 0, n, 0, &ws);
            xy_solve(&pb, rr, 0, n, 1, &ws);
            z_solve(&pb, rr, 1, n - 1, &ws);
            add(&pb, ru, rr, 0, n);
        }
        for (long k = 0; k < n; k++) {
            for (long j = 0; j < n; j++) {
                for (long i = 0; i < n; i++) {
                    double *a = at(&pb, u, k, j, i), *b = at(&pb, ru, k, j, i), e[NV];
                    exact(&pb, k, j, i, tend, e);
                    for (int m = 0; m < NV; m++) {
                        if (memcmp(&a[m], &b[m], sizeof(double)) != 0 && bad++ < 3) {
                            fprintf(stderr, "appbt: point (%ld, %ld, %ld) unknown %d: %.17g, sequential %.17g\n",
                                    i, j, k, m, a[m], b[m]);
                        }
                        err = fmax(err, fabs(a[m] - e[m]) / exp(-tend));
                    }
                }
            }
        }
        if (!(err <= APPBT_ERR_TOL(pb.h, pb.dt)) && bad++ < 3) {
            fprintf(stderr, "appbt: error against the exact solution %.3e (relative to exp(-t)), above %.3e\n",
                    err, APPBT_ERR_TOL(pb.h, pb.dt));
        }
        ok = (bad == 0);
        free(ru);
        free(rr);
        free(rf);
    }
    snprintf(params, sizeof(params), "%ld x %ld x %ld, %ld steps, error %.2e", n, n, n, steps, err);
    int status = app_report("appbt", params, t1 - t0, ok);
    free(ws.cw);
    free(ws.xb);
    cm_finalize();
    return status;
}
