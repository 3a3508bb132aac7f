/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp3d: rarefied hypersonic flow in a wind tunnel, after the SPLASH MP3D
 * particle simulation (Cashmere paper, section 3.1), LOCKING variant: the
 * space cells are updated under per-cell locks, the phases are separated by
 * barriers.
 *
 * The tunnel is a 32 x 16 x 8 box holding a box-shaped object, divided into
 * space cells of edge H (1, 2, 4 or 8; by default the smallest that gives at
 * least 30 particles per cell). Particles (equal masses) enter at the
 * upstream end with the free-stream velocity plus a thermal part; a particle
 * that leaves through either end is replaced by a fresh one from the
 * reservoir: it re-enters at the other end with a newly drawn free-stream
 * velocity, so the particle count is constant and the momentum and energy the
 * exchange adds are accounted exactly. The side walls and the object reflect
 * specularly; the momentum they take is accounted too. A time step is two
 * phases:
 *   move: each process moves its own particles (walls, object, reservoir),
 *         then sorts its block by cell, so that its particles in one cell
 *         share a page or two (particles never change owner; a record
 *         carries the particle's id); a barrier;
 *   cells: each process enters its particles into the cells they now lie
 *         in. A cell is updated under its lock: its population, entry, visit
 *         and collision counters, and MP3D's collision partner (the particle
 *         that last visited the cell in this step). With a fixed probability a
 *         particle collides with that partner, an elastic hard-sphere
 *         collision with a pseudo-random impact direction that updates both
 *         particles, then it becomes the cell's partner. A process takes each
 *         cell's lock once per step for all its particles in that cell (in
 *         slot order), so the lock traffic is per cell, not per particle;
 *         the processes start at different cells; a barrier.
 * During the cells phase a particle's velocity is only read or written under
 * the lock of the cell it lies in, so every collision sees the other
 * particle's latest velocity.
 *
 * Layout: particles are 64-byte records in one shared array; process p owns a
 * contiguous block of them that starts on a page of its own (the blocks are
 * whole pages, 64 particles each). The cells are a shared array of 64-byte
 * records, lock id = cell index. As in MP3D, a process's particles are spread
 * over the whole tunnel, so the cells and the collision partners are shared
 * by everyone.
 *
 * Verification: which particle meets which depends on the lock order, so the
 * run is not reproducible bit for bit; rank 0 checks what every valid
 * interleaving satisfies and a lost update or a stale read breaks:
 *   - every block holds each of its particles exactly once; every particle
 *     lies in the tunnel, outside the object, and in the cell its record
 *     names; each cell's population equals the number of particles that lie
 *     in it (exact);
 *   - the cells' entry, visit and collision counters sum to the sums of the
 *     processes' private counts, the visits to particles x steps (exact);
 *   - total momentum = initial + wall/object/reservoir transfers, and total
 *     kinetic energy = initial + reservoir exchange: exact in exact
 *     arithmetic, checked to MP3D_TOL = 1e-9 relative to the sum of the
 *     magnitudes involved (far above the rounding of the collisions, far
 *     below what one wrong velocity does).
 *
 *   cmrun -n P mp3d [--size test|paper|large] [--particles N] [--steps K] [--cell H]
 *     test: 2000 particles, 3 steps (H 4); paper: 60000, 10 (H 2); large: 200000, 10 (H 1)
 */
#include "app.h"

#include <math.h>
#include <stdint.h>

#define MP3D_FLAGS "[--particles N] [--steps K] [--cell 1|2|4|8]"

/* The tunnel and the object (at least 2 units away from every boundary). */
static const double tunnel[3] = {32.0, 16.0, 8.0};
static const double obj_lo[3] = {8.0, 5.0, 2.0};
static const double obj_hi[3] = {12.0, 11.0, 6.0};

#define MP3D_U      2.0  /* free-stream velocity (along x) */
#define MP3D_VTH    1.0  /* thermal velocity scale */
#define MP3D_DT     0.15 /* time step */
#define MP3D_PCOLL  0.7  /* probability of a collision with the cell's partner */
#define MP3D_TOL    1e-9 /* relative tolerance of the conservation checks */
#define PAGE_PARTS  64   /* particles per 4 KiB page */
#define NO_PARTNER  (-1)

typedef struct {
    double pos[3];
    double vel[3];
    int32_t id;   /* which particle this is (its random streams and initial state) */
    int32_t cell; /* the cell it was last entered into */
    double pad;
} particle_t;

typedef struct {
    int32_t pop;     /* particles lying in the cell now */
    int32_t enter;   /* particles that entered it from another cell */
    int32_t visits;  /* particle-steps spent in it */
    int32_t colls;   /* collisions in it */
    int32_t partner; /* the collision partner: the particle that last visited it in step pstep */
    int32_t pstep;
    int32_t pad[10];
} cell_t;

/* What one process counts privately (one 128-byte slot per process in shared memory). */
typedef struct {
    double impulse[3]; /* momentum given to the particles by walls, object and reservoir */
    double energy;     /* kinetic energy given by the reservoir exchange */
    int64_t enter, visits, colls;
    double pad[9];
} tally_t;

/* The space cells: edge h, nc[a] along each axis. */
typedef struct {
    double h;
    int nc[3];
    int n;
} grid_t;

/* A process's private bookkeeping for the cells phase (by cell, then by own particle). */
typedef struct {
    int32_t *count;  /* own particles lying in the cell now */
    int32_t *arrive; /* of them, arrived from another cell */
    int32_t *depart; /* own particles that left the cell */
    int32_t *start;  /* the cell's first slot in order[] */
    int32_t *cell;   /* each own particle's cell now */
    int32_t *order;  /* own particles sorted by cell, by index within a cell */
} sorter_t;

/* Random stream number k of particle i at step s (s = -1: initialization). */
static uint64_t rnd(long i, long s, uint64_t k)
{
    return app_hash64(app_hash64(((uint64_t)i << 20) ^ (uint64_t)(s + 1)) ^ (k * 0x632be59bd9b4e019ULL));
}

/* A free-stream velocity: MP3D_U along x plus a bounded, roughly Gaussian thermal part. */
static void draw_velocity(double v[3], long i, long s, uint64_t k)
{
    for (int a = 0; a < 3; a++) {
        double t = 0.0;
        for (int q = 0; q < 4; q++) {
            t += app_unit(rnd(i, s, k * 16 + (uint64_t)(a * 4 + q)));
        }
        v[a] = MP3D_VTH * (t - 2.0) + (a == 0 ? MP3D_U : 0.0);
    }
}

static bool in_object(const double p[3])
{
    return p[0] > obj_lo[0] && p[0] < obj_hi[0] && p[1] > obj_lo[1] && p[1] < obj_hi[1] &&
           p[2] > obj_lo[2] && p[2] < obj_hi[2];
}

static int cell_of(const grid_t *g, const double p[3])
{
    int c[3];
    for (int a = 0; a < 3; a++) {
        c[a] = (int)(p[a] / g->h);
        if (c[a] >= g->nc[a]) { /* on the far wall */
            c[a] = g->nc[a] - 1;
        }
    }
    return (c[2] * g->nc[1] + c[1]) * g->nc[0] + c[0];
}

/* Particle i's initial state: uniform in the tunnel outside the object, free-stream velocity. */
static void init_particle(const grid_t *g, particle_t *p, long i)
{
    uint64_t k = 0;
    do {
        for (int a = 0; a < 3; a++) {
            p->pos[a] = tunnel[a] * app_unit(rnd(i, -1, k++));
        }
    } while (in_object(p->pos));
    draw_velocity(p->vel, i, -1, 1000);
    p->id = (int32_t)i;
    p->cell = cell_of(g, p->pos);
    p->pad = 0.0;
}

/* Moves particle i through one time step of step s: side walls and object reflect, the ends exchange with the reservoir. */
static void move_particle(particle_t *p, long i, long s, tally_t *t)
{
    double left = MP3D_DT;
    uint64_t draws = 0;
    while (left > 0.0) {
        /* sub-steps of at most half a unit, so one reflection per sub-step is enough */
        double vmax = fmax(fabs(p->vel[0]), fmax(fabs(p->vel[1]), fabs(p->vel[2])));
        double h = (vmax * left > 0.5) ? 0.5 / vmax : left;
        double p0[3], *x = p->pos, *v = p->vel;
        left = (h == left) ? 0.0 : left - h;
        for (int a = 0; a < 3; a++) {
            p0[a] = x[a];
            x[a] += h * v[a];
        }
        for (int a = 1; a < 3; a++) { /* side walls */
            if (x[a] < 0.0 || x[a] > tunnel[a]) {
                x[a] = (x[a] < 0.0) ? -x[a] : 2.0 * tunnel[a] - x[a];
                t->impulse[a] -= 2.0 * v[a];
                v[a] = -v[a];
            }
        }
        if (in_object(x)) { /* p0 is outside: reflect off the face the path entered through */
            int axis = -1;
            double best = -1.0, face = 0.0;
            for (int a = 0; a < 3; a++) {
                double f;
                if (p0[a] <= obj_lo[a]) {
                    f = obj_lo[a];
                } else if (p0[a] >= obj_hi[a]) {
                    f = obj_hi[a];
                } else {
                    continue;
                }
                double tt = (f - p0[a]) / (x[a] - p0[a]);
                if (axis < 0 || tt > best) {
                    axis = a;
                    best = tt;
                    face = f;
                }
            }
            x[axis] = 2.0 * face - x[axis];
            t->impulse[axis] -= 2.0 * v[axis];
            v[axis] = -v[axis];
        }
        if (x[0] < 0.0 || x[0] >= tunnel[0]) { /* out of an end: a fresh particle from the reservoir */
            double nv[3];
            x[0] += (x[0] < 0.0) ? tunnel[0] : -tunnel[0];
            if (x[0] >= tunnel[0] || x[0] < 0.0) {
                x[0] = 0.0;
            }
            draw_velocity(nv, i, s, ++draws);
            for (int a = 0; a < 3; a++) {
                t->impulse[a] += nv[a] - v[a];
                t->energy += 0.5 * (nv[a] * nv[a] - v[a] * v[a]);
                v[a] = nv[a];
            }
        }
    }
}

/*
 * The move phase of step s for the particles in slots [lo, hi): moves them,
 * then sorts the block by the cell each lies in now (stable), so that the
 * particles a process enters into one cell share a page or two.
 */
static void move_block(particle_t *parts, const grid_t *g, long lo, long hi, long s, sorter_t *w,
                       particle_t *scratch, tally_t *t)
{
    memset(w->count, 0, (size_t)g->n * sizeof(int32_t));
    for (long i = lo; i < hi; i++) {
        move_particle(&parts[i], parts[i].id, s, t);
        w->cell[i - lo] = cell_of(g, parts[i].pos);
        w->count[w->cell[i - lo]]++;
    }
    for (int c = 0, sum = 0; c < g->n; c++) {
        w->start[c] = sum;
        sum += w->count[c];
    }
    for (long i = lo; i < hi; i++) {
        scratch[w->start[w->cell[i - lo]]++] = parts[i];
    }
    if (hi > lo) {
        memcpy(&parts[lo], scratch, (size_t)(hi - lo) * sizeof(particle_t));
    }
}

/* Elastic hard-sphere collision of equal masses: the relative velocity is mirrored in the plane normal to n. */
static void collide(double *va, double *vb, long ia, long ib, long s)
{
    uint64_t r = rnd(ia, s, 0x10000 + (uint64_t)ib);
    double c = 2.0 * app_unit(app_hash64(r)) - 1.0, phi = 2.0 * M_PI * app_unit(app_hash64(r + 1));
    double sn = sqrt(1.0 - c * c), n[3] = {sn * cos(phi), sn * sin(phi), c};
    double gn = 0.0;
    for (int a = 0; a < 3; a++) {
        gn += (va[a] - vb[a]) * n[a];
    }
    for (int a = 0; a < 3; a++) {
        va[a] -= gn * n[a];
        vb[a] += gn * n[a];
    }
}

/*
 * The cells phase of step s for particles [lo, hi): each cell that some of
 * them lie in or left is updated under its lock, once, and those lying in it
 * meet the cell's partner in index order, each becoming the next partner.
 * Processes start at different cells (first), so they seldom queue for the
 * same lock.
 */
static void enter_cells(particle_t *parts, cell_t *cells, const grid_t *g, long lo, long hi, long s,
                        int first, sorter_t *w, tally_t *t)
{
    memset(w->count, 0, (size_t)g->n * sizeof(int32_t));
    memset(w->arrive, 0, (size_t)g->n * sizeof(int32_t));
    memset(w->depart, 0, (size_t)g->n * sizeof(int32_t));
    for (long i = lo; i < hi; i++) {
        int c = cell_of(g, parts[i].pos), old = parts[i].cell;
        w->cell[i - lo] = c;
        w->count[c]++;
        if (c != old) {
            w->arrive[c]++;
            w->depart[old]++;
        }
    }
    for (int c = 0, sum = 0; c < g->n; c++) {
        w->start[c] = sum;
        sum += w->count[c];
    }
    for (long i = lo; i < hi; i++) {
        w->order[w->start[w->cell[i - lo]]++] = (int32_t)i;
    }
    for (int k = 0; k < g->n; k++) {
        int c = (first + k) % g->n;
        int n = w->count[c], end = w->start[c]; /* start[c] has become the end of c's slots */
        if (n == 0 && w->depart[c] == 0) {
            continue;
        }
        cm_lock_acquire(c);
        cell_t *cl = &cells[c];
        cl->pop += w->arrive[c] - w->depart[c];
        cl->enter += w->arrive[c];
        cl->visits += n;
        t->enter += w->arrive[c];
        t->visits += n;
        for (int q = end - n; q < end; q++) {
            particle_t *p = &parts[w->order[q]];
            if (cl->pstep == (int32_t)s && cl->partner != NO_PARTNER) {
                particle_t *o = &parts[cl->partner];
                if (app_unit(rnd(p->id, s, 0x20000 + (uint64_t)o->id)) < MP3D_PCOLL) {
                    collide(p->vel, o->vel, p->id, o->id, s);
                    cl->colls++;
                    t->colls++;
                }
            }
            cl->partner = w->order[q];
            cl->pstep = (int32_t)s;
        }
        cm_lock_release(c);
    }
    for (long i = lo; i < hi; i++) {
        parts[i].cell = w->cell[i - lo];
    }
}

static void *mp3d_alloc(size_t n)
{
    void *p = calloc(n > 0 ? n : 1, 1);
    if (p == NULL) {
        cm_abort(1, "mp3d: out of memory");
    }
    return p;
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    app_size_t size = app_size(argc, argv, "mp3d", MP3D_FLAGS);
    long n     = app_long(argc, argv, "--particles",
                          size == APP_SIZE_TEST ? 2000 : size == APP_SIZE_PAPER ? 60000 : 200000, "mp3d",
                          MP3D_FLAGS);
    long steps = app_long(argc, argv, "--steps", size == APP_SIZE_TEST ? 3 : 10, "mp3d", MP3D_FLAGS);
    long hdef  = 1;
    while (hdef < 8 && n < 30 * (4096 / (hdef * hdef * hdef))) {
        hdef *= 2; /* at least 30 particles per cell */
    }
    long hc = app_long(argc, argv, "--cell", hdef, "mp3d", MP3D_FLAGS);
    bool corrupt = app_flag(argc, argv, "--corrupt"); /* proves the check can fail */
    const int me = cm_rank(), np = cm_nprocs();
    if (n > INT32_MAX / 2 || (hc != 1 && hc != 2 && hc != 4 && hc != 8)) {
        app_usage("mp3d", MP3D_FLAGS);
    }
    grid_t g = {.h = (double)hc};
    for (int a = 0; a < 3; a++) {
        g.nc[a] = (int)(tunnel[a] / g.h);
    }
    g.n = g.nc[0] * g.nc[1] * g.nc[2];
    /* my block: particles [lo, hi), a whole number of pages per process */
    long blk = ((n + np - 1) / np + PAGE_PARTS - 1) / PAGE_PARTS * PAGE_PARTS;
    long lo = blk * me < n ? blk * me : n, hi = blk * (me + 1) < n ? blk * (me + 1) : n;
    particle_t *parts = cm_malloc((size_t)(blk * np) * sizeof(particle_t));
    cell_t *cells = cm_malloc((size_t)g.n * sizeof(cell_t));
    tally_t *tallies = cm_malloc((size_t)np * sizeof(tally_t));
    sorter_t w = {
        .count = mp3d_alloc((size_t)g.n * sizeof(int32_t)),
        .arrive = mp3d_alloc((size_t)g.n * sizeof(int32_t)),
        .depart = mp3d_alloc((size_t)g.n * sizeof(int32_t)),
        .start = mp3d_alloc((size_t)g.n * sizeof(int32_t)),
        .cell = mp3d_alloc((size_t)(hi - lo) * sizeof(int32_t)),
        .order = mp3d_alloc((size_t)(hi - lo) * sizeof(int32_t)),
    };
    particle_t *scratch = mp3d_alloc((size_t)(hi - lo) * sizeof(particle_t));
    tally_t mine;
    double t0, t1;
    char params[160];
    bool ok = true;

    memset(&mine, 0, sizeof(mine));
    cm_init_done();
    for (long i = lo; i < hi; i++) {
        init_particle(&g, &parts[i], i);
    }
    {
        /* my band of cells, with the initial populations (each process regenerates the initial positions) */
        int clo = (int)((long)g.n * me / np), chi = (int)((long)g.n * (me + 1) / np);
        int32_t *pop = mp3d_alloc((size_t)g.n * sizeof(int32_t));
        for (long i = 0; i < n; i++) {
            particle_t q;
            init_particle(&g, &q, i);
            pop[q.cell]++;
        }
        for (int c = clo; c < chi; c++) {
            memset(&cells[c], 0, sizeof(cell_t));
            cells[c].pop = pop[c];
            cells[c].partner = NO_PARTNER;
            cells[c].pstep = -1;
        }
        free(pop);
    }
    cm_barrier();
    cm_stats_reset();

    t0 = cm_wtime();
    for (long s = 0; s < steps; s++) {
        move_block(parts, &g, lo, hi, s, &w, scratch, &mine);
        cm_barrier();
        enter_cells(parts, cells, &g, lo, hi, s, (int)((long)g.n * me / np), &w, &mine);
        cm_barrier();
    }
    t1 = cm_wtime();
    cm_stats_stop(); /* the statistics are the timed section's */
    tallies[me] = mine;
    if (corrupt && n > 0 && (n - 1) / blk == me) {
        parts[n - 1].vel[0] += 0.5;
    }
    cm_barrier();

    if (me == 0) {
        int32_t *pop = mp3d_alloc((size_t)g.n * sizeof(int32_t));
        bool *seen = mp3d_alloc((size_t)n * sizeof(bool));
        double p0[3] = {0, 0, 0}, p1[3] = {0, 0, 0}, imp[3] = {0, 0, 0}, pscale = 0.0;
        double e0 = 0.0, e1 = 0.0, einj = 0.0;
        int64_t enter = 0, visits = 0, colls = 0, center = 0, cvisits = 0, ccolls = 0;
        long bad = 0;
        for (long i = 0; i < n; i++) {
            particle_t q;
            init_particle(&g, &q, i);
            for (int a = 0; a < 3; a++) {
                p0[a] += q.vel[a];
                pscale += fabs(q.vel[a]);
                e0 += 0.5 * q.vel[a] * q.vel[a];
            }
        }
        for (long r = 0; r < np; r++) {
            for (long i = blk * r; i < blk * (r + 1) && i < n; i++) {
                const particle_t *p = &parts[i];
                bool inside = true;
                for (int a = 0; a < 3; a++) {
                    p1[a] += p->vel[a];
                    pscale += fabs(p->vel[a]);
                    e1 += 0.5 * p->vel[a] * p->vel[a];
                    inside = inside && p->pos[a] >= 0.0 && p->pos[a] <= tunnel[a] && isfinite(p->vel[a]);
                }
                inside = inside && p->pos[0] < tunnel[0] && !in_object(p->pos);
                if (p->id < blk * r || p->id >= blk * (r + 1) || p->id >= n || seen[p->id]) {
                    if (bad++ < 3) {
                        fprintf(stderr, "mp3d: slot %ld holds particle %d: lost or duplicated\n", i, (int)p->id);
                    }
                    continue;
                }
                seen[p->id] = true;
                if (!inside || p->cell != cell_of(&g, p->pos)) {
                    if (bad++ < 3) {
                        fprintf(stderr, "mp3d: particle %d at (%g, %g, %g) in cell %d: %s\n", (int)p->id,
                                p->pos[0], p->pos[1], p->pos[2], (int)p->cell,
                                inside ? "wrong cell" : "outside the tunnel or inside the object");
                    }
                    continue;
                }
                pop[p->cell]++;
            }
        }
        for (int c = 0; c < g.n; c++) {
            if (cells[c].pop != pop[c] && bad++ < 3) {
                fprintf(stderr, "mp3d: cell %d: population %d, particles in it %d\n", c, (int)cells[c].pop,
                        (int)pop[c]);
            }
            center += cells[c].enter;
            cvisits += cells[c].visits;
            ccolls += cells[c].colls;
        }
        for (int r = 0; r < np; r++) {
            for (int a = 0; a < 3; a++) {
                imp[a] += tallies[r].impulse[a];
            }
            einj += tallies[r].energy;
            enter += tallies[r].enter;
            visits += tallies[r].visits;
            colls += tallies[r].colls;
        }
        if ((center != enter || cvisits != visits || ccolls != colls || visits != (int64_t)n * steps) &&
            bad++ < 3) {
            fprintf(stderr,
                    "mp3d: the cells count %lld entries, %lld visits, %lld collisions; the processes "
                    "%lld, %lld, %lld; expected visits %lld\n",
                    (long long)center, (long long)cvisits, (long long)ccolls, (long long)enter,
                    (long long)visits, (long long)colls, (long long)n * steps);
        }
        for (int a = 0; a < 3; a++) {
            if (!(fabs(p1[a] - p0[a] - imp[a]) <= MP3D_TOL * pscale) && bad++ < 3) {
                fprintf(stderr, "mp3d: momentum %c: %.17g, initial %.17g + transferred %.17g (tolerance %g)\n",
                        'x' + a, p1[a], p0[a], imp[a], MP3D_TOL * pscale);
            }
        }
        if (!(fabs(e1 - e0 - einj) <= MP3D_TOL * (e0 + e1)) && bad++ < 3) {
            fprintf(stderr, "mp3d: energy %.17g, initial %.17g + exchanged %.17g (tolerance %g)\n", e1, e0,
                    einj, MP3D_TOL * (e0 + e1));
        }
        ok = (bad == 0);
        free(pop);
        free(seen);
    }
    snprintf(params, sizeof(params), "%ld particles, %ld steps, %d cells", n, steps, g.n);
    int status = app_report("mp3d", params, t1 - t0, ok);
    free(w.count);
    free(w.arrive);
    free(w.depart);
    free(w.start);
    free(w.cell);
    free(w.order);
    free(scratch);
    cm_finalize();
    return status;
}
