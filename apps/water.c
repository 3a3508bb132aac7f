/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * water: molecular dynamics of liquid water, n-squared, after SPLASH Water
 * (Cashmere paper, section 3.1).
 *
 * Model: flexible 3-site water (SPC/Fw: harmonic O-H bonds and H-O-H angle,
 * charges on O and H, Lennard-Jones between oxygens) in a periodic cubic box at
 * 1 g/cm^3, units of angstrom, fs and amu. Two molecules interact (9 Coulomb
 * site pairs + O-O Lennard-Jones, minimum image of the oxygens) when their
 * oxygens lie within the cutoff of half the box, smoothly switched off over
 * the last angstrom so the total energy is conserved. Velocity Verlet with a
 * 0.25 fs step. The molecules start on an fcc lattice with random
 * orientations and 300 K velocities (zero total momentum), all drawn from
 * splitmix64 of the molecule's index, so the start does not depend on P.
 *
 * Parallelization as SPLASH-2 water-nsquared: process p owns a contiguous
 * block of molecules, laid out so each block's positions, velocities and
 * forces start on pages of their own. A time step is: owners kick (half step),
 * drift, wrap into the box and overwrite their molecules' forces with the
 * intra-molecular forces; barrier; each process computes the interactions of
 * its molecules i with the next n/2 molecules (every pair once) into a private
 * force buffer, then adds it into the shared forces molecule by molecule under
 * that molecule's lock, and its potential energy into a global sum under one
 * global lock; barrier; owners kick (half step) and add their kinetic energy
 * under the global lock. The initial forces are computed the same way first,
 * so K steps are K+1 force evaluations.
 *
 * Verification: the order in which processes add into a molecule's force
 * depends on who gets the lock first, so the parallel run matches a sequential
 * one only to rounding. Rank 0 runs the same simulation sequentially in private
 * memory with the same kernels and requires every position (minimum image),
 * velocity and per-step energy within a relative tolerance of 1e-9 (of the box
 * size, the largest velocity, the size of the energies); it also checks that
 * the total momentum stays 0 (within 1e-9 of the sum of |momentum|) and that
 * the total energy drifts by less than 1e-2 of |initial kinetic| + |initial
 * potential energy| (velocity Verlet's fluctuation at 0.25 fs is a few 1e-4).
 *
 *   cmrun -n P water [--size test|paper|large] [--mols N] [--steps K]
 *     test: 32 molecules, 2 steps; paper: 256, 3; large: 1024, 3
 */
#include "app.h"

#include <math.h>
#include <stdint.h>

#define WATER_FLAGS "[--mols N] [--steps K]"

/* Units: angstrom, fs, amu; energies in amu A^2/fs^2 (1 kcal/mol = 4.184e-4). */
#define KCAL     4.184e-4
#define KB       (1059.162 * KCAL)                 /* O-H bond, per A^2 */
#define R0       1.012                             /* O-H bond length, A */
#define KA       (75.90 * KCAL)                    /* H-O-H angle, per rad^2 */
#define THETA0   (113.24 * 3.14159265358979323846 / 180.0)
#define QO       (-0.82)
#define QH       0.41
#define COULOMB  (332.06371 * KCAL)                /* e^2/(4 pi eps0), A */
#define LJ_SIG   3.165492
#define LJ_EPS   (0.1554253 * KCAL)
#define MASS_O   15.9994
#define MASS_H   1.008
#define KT300    (0.0019872041 * 300.0 * KCAL)     /* k_B T at 300 K */
#define DENSITY  0.033428                          /* molecules per A^3 at 1 g/cm^3 */
#define DT       0.25                              /* fs */
#define SWITCH   1.0                               /* switching width, A */
#define TOL      1e-9                              /* parallel vs sequential, relative */
#define DRIFT    1e-2                              /* energy drift, of |initial KE| + |initial PE| */
#define MOLD     9                                 /* doubles per molecule: 3 atoms x 3 */
#define PAGE_DOUBLES 512
#define GLOBAL_LOCK 0

static const double mass[3] = { MASS_O, MASS_H, MASS_H };
static const double charge[3] = { QO, QH, QH };

typedef struct {
    double box, rc, ro; /* box side, cutoff, switching start */
} water_box_t;

/* Random number k of molecule m: a uniform double in [0, 1). */
static double mol_rand(long m, int k)
{
    return app_unit(app_hash64((uint64_t)m * 64 + (uint64_t)k));
}

/* Molecule m's initial positions: lattice site, random orientation at the equilibrium geometry. */
static void water_init_pos(double *x, long m, long n, const water_box_t *b)
{
    static const double fcc[4][3] = { { 0.25, 0.25, 0.25 }, { 0.75, 0.75, 0.25 },
                                      { 0.75, 0.25, 0.75 }, { 0.25, 0.75, 0.75 } };
    long g = 1; /* fcc cells per side */
    while (4 * g * g * g < n) {
        g++;
    }
    double a = b->box / (double)g;
    long slot = m * 4 * g * g * g / n; /* spread the n molecules over the 4 g^3 sites */
    long cell = slot / 4;
    const double *site = fcc[slot % 4];
    double o[3] = { ((double)(cell % g) + site[0]) * a, ((double)((cell / g) % g) + site[1]) * a,
                    ((double)(cell / (g * g)) + site[2]) * a };
    /* bisector u uniform on the sphere, v perpendicular to it at a random angle */
    double z = 2.0 * mol_rand(m, 0) - 1.0, phi = 2.0 * M_PI * mol_rand(m, 1), s = sqrt(1.0 - z * z);
    double u[3] = { s * cos(phi), s * sin(phi), z };
    double t[3] = { 1.0, 0.0, 0.0 };
    if (fabs(u[0]) > 0.9) {
        t[0] = 0.0;
        t[1] = 1.0;
    }
    double p[3] = { u[1] * t[2] - u[2] * t[1], u[2] * t[0] - u[0] * t[2], u[0] * t[1] - u[1] * t[0] };
    double pl = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
    double q[3] = { u[1] * p[2] - u[2] * p[1], u[2] * p[0] - u[0] * p[2], u[0] * p[1] - u[1] * p[0] };
    double psi = 2.0 * M_PI * mol_rand(m, 2), c = cos(THETA0 / 2.0), sn = sin(THETA0 / 2.0);
    for (int k = 0; k < 3; k++) {
        double v = (cos(psi) * p[k] + sin(psi) * q[k]) / pl;
        x[k]     = o[k];
        x[3 + k] = o[k] + R0 * (c * u[k] + sn * v);
        x[6 + k] = o[k] + R0 * (c * u[k] - sn * v);
    }
}

/* Molecule m's initial velocities before the centre-of-mass motion is removed. */
static void water_raw_vel(double *v, long m)
{
    for (int a = 0; a < 3; a++) {
        double w = sqrt(3.0 * KT300 / mass[a]); /* uniform on [-w, w): variance kT/m */
        for (int k = 0; k < 3; k++) {
            v[3 * a + k] = w * (2.0 * mol_rand(m, 3 + 3 * a + k) - 1.0);
        }
    }
}

/* The centre-of-mass velocity of the raw velocities of all n molecules (every process computes it alike). */
static void water_vcm(long n, double vcm[3])
{
    double p[3] = { 0.0, 0.0, 0.0 }, mt = 0.0, v[MOLD];
    for (long m = 0; m < n; m++) {
        water_raw_vel(v, m);
        for (int a = 0; a < 3; a++) {
            for (int k = 0; k < 3; k++) {
                p[k] += mass[a] * v[3 * a + k];
            }
            mt += mass[a];
        }
    }
    for (int k = 0; k < 3; k++) {
        vcm[k] = p[k] / mt;
    }
}

static void water_init_vel(double *v, long m, const double vcm[3])
{
    water_raw_vel(v, m);
    for (int a = 0; a < 3; a++) {
        for (int k = 0; k < 3; k++) {
            v[3 * a + k] -= vcm[k];
        }
    }
}

/* Intra-molecular forces of one molecule, written (not added) to f; returns its energy. */
static double water_intra(const double *x, double *f)
{
    double r1[3], r2[3], d1 = 0.0, d2 = 0.0, dot = 0.0;
    for (int k = 0; k < 3; k++) {
        r1[k] = x[3 + k] - x[k];
        r2[k] = x[6 + k] - x[k];
        d1 += r1[k] * r1[k];
        d2 += r2[k] * r2[k];
        dot += r1[k] * r2[k];
    }
    d1 = sqrt(d1);
    d2 = sqrt(d2);
    double c = dot / (d1 * d2);
    c = (c > 1.0) ? 1.0 : (c < -1.0) ? -1.0 : c;
    double th = acos(c), sn = sin(th);
    double b1 = -KB * (d1 - R0) / d1, b2 = -KB * (d2 - R0) / d2; /* bond forces on H along r */
    double g = (sn > 1e-12) ? KA * (th - THETA0) / sn : 0.0;     /* -dE/dcos */
    for (int k = 0; k < 3; k++) {
        double f1 = b1 * r1[k] + g * (r2[k] / (d1 * d2) - c * r1[k] / (d1 * d1));
        double f2 = b2 * r2[k] + g * (r1[k] / (d1 * d2) - c * r2[k] / (d2 * d2));
        f[3 + k] = f1;
        f[6 + k] = f2;
        f[k]     = -(f1 + f2);
    }
    return 0.5 * KB * ((d1 - R0) * (d1 - R0) + (d2 - R0) * (d2 - R0)) +
           0.5 * KA * (th - THETA0) * (th - THETA0);
}

/* Interaction of molecules i and j: adds the forces to fi and fj; returns the energy. */
static double water_pair(const double *xi, const double *xj, double *fi, double *fj, const water_box_t *b)
{
    double shift[3], d[3], r2 = 0.0;
    for (int k = 0; k < 3; k++) {
        double dk = xj[k] - xi[k];
        shift[k]  = -b->box * floor(dk / b->box + 0.5); /* minimum image of the oxygens */
        d[k]      = dk + shift[k];
        r2 += d[k] * d[k];
    }
    if (r2 >= b->rc * b->rc) {
        return 0.0;
    }
    double e = 0.0, g[3][3][3]; /* g[a][c]: force on atom c of j from atom a of i */
    for (int a = 0; a < 3; a++) {
        for (int c = 0; c < 3; c++) {
            double s[3], s2 = 0.0;
            for (int k = 0; k < 3; k++) {
                s[k] = xj[3 * c + k] + shift[k] - xi[3 * a + k];
                s2 += s[k] * s[k];
            }
            double inv = 1.0 / sqrt(s2), ec = COULOMB * charge[a] * charge[c] * inv;
            double fs = ec * inv * inv; /* force on j per unit of s */
            e += ec;
            if (a == 0 && c == 0) {
                double sr2 = LJ_SIG * LJ_SIG / s2, sr6 = sr2 * sr2 * sr2;
                e += 4.0 * LJ_EPS * (sr6 * sr6 - sr6);
                fs += 24.0 * LJ_EPS * (2.0 * sr6 * sr6 - sr6) / s2;
            }
            for (int k = 0; k < 3; k++) {
                g[a][c][k] = fs * s[k];
            }
        }
    }
    /* smooth switch between ro and rc on the oxygen distance */
    double r = sqrt(r2), sw = 1.0, dsw = 0.0;
    if (r > b->ro) {
        double w = b->rc - b->ro, t = (r - b->ro) / w;
        sw  = 1.0 - t * t * (3.0 - 2.0 * t);
        dsw = -6.0 * t * (1.0 - t) / w;
    }
    for (int a = 0; a < 3; a++) {
        for (int c = 0; c < 3; c++) {
            for (int k = 0; k < 3; k++) {
                fj[3 * c + k] += sw * g[a][c][k];
                fi[3 * a + k] -= sw * g[a][c][k];
            }
        }
    }
    for (int k = 0; k < 3; k++) {
        double fk = -e * dsw * d[k] / r; /* on j's oxygen */
        fj[k] += fk;
        fi[k] -= fk;
    }
    return sw * e;
}

/* Pairs of molecules i in [a, b) with the next n/2 (each pair of the n once), forces into pf (dense). */
static double water_inter(const double *pos, const long *off, long n, long a, long b, double *pf,
                          const water_box_t *bx)
{
    double e = 0.0;
    for (long i = a; i < b; i++) {
        long span = (n % 2 == 1) ? (n - 1) / 2 : (i < n / 2) ? n / 2 : n / 2 - 1;
        for (long t = 1; t <= span; t++) {
            long j = (i + t) % n;
            e += water_pair(pos + off[i], pos + off[j], pf + MOLD * i, pf + MOLD * j, bx);
        }
    }
    return e;
}

/* Half a kick: v += dt/2 * f/m. */
static void water_kick(double *v, const double *f)
{
    for (int a = 0; a < 3; a++) {
        for (int k = 0; k < 3; k++) {
            v[3 * a + k] += (0.5 * DT / mass[a]) * f[3 * a + k];
        }
    }
}

/* Drift by a step, then move the molecule back into the box by its oxygen. */
static void water_drift(double *x, const double *v, const water_box_t *b)
{
    for (int i = 0; i < MOLD; i++) {
        x[i] += DT * v[i];
    }
    for (int k = 0; k < 3; k++) {
        double s = (x[k] < 0.0) ? b->box : (x[k] >= b->box) ? -b->box : 0.0;
        for (int a = 0; a < 3; a++) {
            x[3 * a + k] += s;
        }
    }
}

static double water_kinetic(const double *v)
{
    double e = 0.0;
    for (int a = 0; a < 3; a++) {
        e += 0.5 * mass[a] * (v[3 * a] * v[3 * a] + v[3 * a + 1] * v[3 * a + 1] + v[3 * a + 2] * v[3 * a + 2]);
    }
    return e;
}

static int mol_lock(long m)
{
    return 1 + (int)(m % 65535);
}

/* The sequential reference: the whole simulation in private memory; energies[2 s] = PE, [2 s + 1] = KE. */
static void water_sequential(long n, long steps, const water_box_t *b, double *pos, double *vel,
                             double *energies)
{
    double *frc = malloc((size_t)n * MOLD * sizeof(double));
    double *pf = malloc((size_t)n * MOLD * sizeof(double));
    long *off = malloc((size_t)n * sizeof(long));
    double vcm[3];
    if (frc == NULL || pf == NULL || off == NULL) {
        cm_abort(1, "water: out of memory for the sequential run");
    }
    water_vcm(n, vcm);
    for (long m = 0; m < n; m++) {
        off[m] = MOLD * m;
        water_init_pos(pos + MOLD * m, m, n, b);
        water_init_vel(vel + MOLD * m, m, vcm);
    }
    for (long s = 0; s <= steps; s++) {
        double pe = 0.0, ke = 0.0;
        for (long m = 0; m < n; m++) {
            if (s > 0) {
                water_kick(vel + MOLD * m, frc + MOLD * m);
                water_drift(pos + MOLD * m, vel + MOLD * m, b);
            }
            pe += water_intra(pos + MOLD * m, frc + MOLD * m);
        }
        memset(pf, 0, (size_t)n * MOLD * sizeof(double));
        pe += water_inter(pos, off, n, 0, n, pf, b);
        for (long x = 0; x < n * MOLD; x++) {
            frc[x] += pf[x];
        }
        for (long m = 0; m < n; m++) {
            if (s > 0) {
                water_kick(vel + MOLD * m, frc + MOLD * m);
            }
            ke += water_kinetic(vel + MOLD * m);
        }
        energies[2 * s]     = pe;
        energies[2 * s + 1] = ke;
    }
    free(frc);
    free(pf);
    free(off);
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    app_size_t size = app_size(argc, argv, "water", WATER_FLAGS);
    long n     = app_long(argc, argv, "--mols",
                          size == APP_SIZE_TEST ? 32 : size == APP_SIZE_PAPER ? 256 : 1024, "water",
                          WATER_FLAGS);
    long steps = app_long(argc, argv, "--steps", size == APP_SIZE_TEST ? 2 : 3, "water", WATER_FLAGS);
    bool corrupt = app_flag(argc, argv, "--corrupt"); /* proves the check can fail */
    const int me = cm_rank(), np = cm_nprocs();
    if (n < 2) {
        app_usage("water", WATER_FLAGS);
    }
    water_box_t bx;
    bx.box = cbrt((double)n / DENSITY);
    bx.rc  = 0.5 * bx.box;
    bx.ro  = bx.rc - SWITCH;

    /* process p's molecules [n p / P, n (p+1) / P), each block padded to whole pages */
    long maxband = 0;
    for (int p = 0; p < np; p++) {
        long bsz = n * (p + 1) / np - n * p / np;
        maxband = (bsz > maxband) ? bsz : maxband;
    }
    const long stride = (maxband * MOLD + PAGE_DOUBLES - 1) / PAGE_DOUBLES * PAGE_DOUBLES;
    const long lo = n * me / np, hi = n * (me + 1) / np, mine = hi - lo;
    double *pos = cm_malloc((size_t)np * (size_t)stride * sizeof(double));
    double *vel = cm_malloc((size_t)np * (size_t)stride * sizeof(double));
    double *frc = cm_malloc((size_t)np * (size_t)stride * sizeof(double));
    double *energy = cm_malloc((size_t)(steps + 1) * 2 * sizeof(double)); /* PE, KE per step */
    long *off = malloc((size_t)n * sizeof(long));
    double *pf = malloc((size_t)n * MOLD * sizeof(double));
    double vcm[3], t0, t1;
    char params[128];
    bool ok = true;

    if (off == NULL || pf == NULL) {
        cm_abort(1, "water: out of memory");
    }
    for (int p = 0; p < np; p++) {
        for (long m = n * p / np; m < n * (p + 1) / np; m++) {
            off[m] = (long)p * stride + (m - n * p / np) * MOLD;
        }
    }
    water_vcm(n, vcm);

    /* Initialization ends first, so each block's pages move to the process that owns them. */
    cm_init_done();
    for (long m = lo; m < hi; m++) {
        water_init_pos(pos + off[m], m, n, &bx);
        water_init_vel(vel + off[m], m, vcm);
        memset(frc + off[m], 0, MOLD * sizeof(double));
    }
    if (me == 0) {
        memset(energy, 0, (size_t)(steps + 1) * 2 * sizeof(double));
    }
    cm_barrier();
    cm_stats_reset();

    t0 = cm_wtime();
    for (long s = 0; s <= steps; s++) {
        double pe = 0.0, ke = 0.0;
        /* my molecules: second half kick of the last step, drift, wrap, intra-molecular forces */
        for (long m = lo; m < hi; m++) {
            if (s > 0) {
                water_kick(vel + off[m], frc + off[m]);
                water_drift(pos + off[m], vel + off[m], &bx);
            }
            pe += water_intra(pos + off[m], frc + off[m]);
        }
        cm_barrier();
        /* inter-molecular forces: private, then into the shared forces under each molecule's lock */
        memset(pf, 0, (size_t)n * MOLD * sizeof(double));
        pe += water_inter(pos, off, n, lo, hi, pf, &bx);
        long touched = (mine == 0) ? 0 : (mine + n / 2 < n) ? mine + n / 2 : n;
        for (long t = 0; t < touched; t++) {
            long m = (lo + t) % n;
            cm_lock_acquire(mol_lock(m));
            for (int x = 0; x < MOLD; x++) {
                frc[off[m] + x] += pf[MOLD * m + x];
            }
            cm_lock_release(mol_lock(m));
        }
        cm_lock_acquire(GLOBAL_LOCK);
        energy[2 * s] += pe;
        cm_lock_release(GLOBAL_LOCK);
        cm_barrier();
        /* my molecules: first half kick with the new forces, kinetic energy */
        for (long m = lo; m < hi; m++) {
            if (s > 0) {
                water_kick(vel + off[m], frc + off[m]);
            }
            ke += water_kinetic(vel + off[m]);
        }
        cm_lock_acquire(GLOBAL_LOCK);
        energy[2 * s + 1] += ke;
        cm_lock_release(GLOBAL_LOCK);
    }
    t1 = cm_wtime();
    cm_stats_stop(); /* the statistics are the timed section's */
    if (corrupt && me == np - 1 && mine > 0) {
        pos[off[lo + mine / 2]] += 0.5;
    }
    cm_barrier();

    if (me == 0) {
        double *rpos = malloc((size_t)n * MOLD * sizeof(double));
        double *rvel = malloc((size_t)n * MOLD * sizeof(double));
        double *ren = malloc((size_t)(steps + 1) * 2 * sizeof(double));
        double vmax = 0.0, escale, p[3] = { 0.0, 0.0, 0.0 }, pabs = 0.0;
        long bad = 0;
        if (rpos == NULL || rvel == NULL || ren == NULL) {
            cm_abort(1, "water: out of memory for the sequential run");
        }
        water_sequential(n, steps, &bx, rpos, rvel, ren);
        for (long x = 0; x < n * MOLD; x++) {
            vmax = fmax(vmax, fabs(rvel[x]));
        }
        escale = fabs(ren[0]) + fabs(ren[1]);
        for (long m = 0; m < n; m++) {
            for (int x = 0; x < MOLD; x++) {
                double d = pos[off[m] + x] - rpos[MOLD * m + x], v = vel[off[m] + x];
                d -= bx.box * floor(d / bx.box + 0.5); /* a molecule may wrap on one side only */
                if (!(fabs(d) <= TOL * bx.box) && bad++ < 3) {
                    fprintf(stderr, "water: molecule %ld atom %d position %c: %.17g, sequential %.17g\n",
                            m, x / 3, 'x' + x % 3, pos[off[m] + x], rpos[MOLD * m + x]);
                }
                if (!(fabs(v - rvel[MOLD * m + x]) <= TOL * vmax) && bad++ < 3) {
                    fprintf(stderr, "water: molecule %ld atom %d velocity %c: %.17g, sequential %.17g\n",
                            m, x / 3, 'x' + x % 3, v, rvel[MOLD * m + x]);
                }
                p[x % 3] += mass[x / 3] * v;
                pabs += mass[x / 3] * fabs(v);
            }
        }
        for (long s = 0; s <= steps; s++) {
            for (int k = 0; k < 2; k++) {
                if (!(fabs(energy[2 * s + k] - ren[2 * s + k]) <= TOL * escale) && bad++ < 3) {
                    fprintf(stderr, "water: step %ld %s energy: %.17g, sequential %.17g\n", s,
                            k == 0 ? "potential" : "kinetic", energy[2 * s + k], ren[2 * s + k]);
                }
            }
        }
        for (int k = 0; k < 3; k++) {
            if (!(fabs(p[k]) <= TOL * pabs) && bad++ < 3) {
                fprintf(stderr, "water: total momentum %c: %.3g (sum of |momentum| %.3g)\n", 'x' + k,
                        p[k], pabs);
            }
        }
        double drift = (energy[2 * steps] + energy[2 * steps + 1]) - (energy[0] + energy[1]);
        if (!(fabs(drift) <= DRIFT * (fabs(energy[0]) + fabs(energy[1]))) && bad++ < 3) {
            fprintf(stderr, "water: total energy drifted by %.3g (initial potential %.3g, kinetic %.3g)\n",
                    drift, energy[0], energy[1]);
        }
        ok = (bad == 0);
        free(rpos);
        free(rvel);
        free(ren);
    }
    free(off);
    free(pf);
    snprintf(params, sizeof(params), "%ld molecules, %ld steps", n, steps);
    int status = app_report("water", params, t1 - t0, ok);
    cm_finalize();
    return status;
}
