/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fft: one-dimensional fast Fourier transform of N complex doubles by the
 * transpose-based ("six-step") algorithm (Cashmere paper, section 3.1).
 *
 * N = n1 * n2 (n1 = n2 or n1 = 2 n2, both powers of two). The input vector x,
 * x[j1 + n1 j2], is an n2 x n1 matrix (row j2, column j1); the output
 * X[k2 + n2 k1] = sum_j x[j] w^(jk), w = exp(-2 pi i / N), is
 *
 *   sum_j1 w_n1^(j1 k1) [ w^(j1 k2) sum_j2 x[j1 + n1 j2] w_n2^(j2 k2) ]
 *
 * so it takes three transposes and two sets of row FFTs, all on rows:
 *   phase 1: transpose x (n2 x n1) into y (n1 x n2); n2-point FFT of each row
 *            j1 of y; multiply y[j1][k2] by the twiddle w^(j1 k2);   barrier
 *   phase 2: transpose y into x (n2 x n1); n1-point FFT of each row k2 of x;
 *                                                                    barrier
 *   phase 3: transpose x into y (n1 x n2): y[k1][k2] = X[k2 + n2 k1], the
 *            transform in natural order;                             barrier
 * Every phase's rows are split into contiguous bands of whole pages, one per
 * process (a row is 4 KiB or 8 KiB at the paper's size): a process transposes
 * into its own band and then transforms only rows it has just written, so the
 * transposes (each process reads a column strip of every other process's
 * band) are the all-to-all communication and the FFTs are local. The 2 shared
 * arrays are the only shared data; the twiddle table is private.
 *
 * Every output value is computed by the same operations in the same order
 * whatever the number of processes, so rank 0 runs the same code sequentially
 * in private memory and compares every value bit for bit. As an independent
 * check it also transforms the result back (conj(FFT(conj X)) / N must give the
 * input within a relative 1e-10) and compares a few outputs with a direct DFT.
 *
 *   cmrun -n P fft [--size test|paper|large] [--n N]    (N a power of two, >= 2)
 *     test: N = 4096; paper: N = 131072 (2^17); large: N = 1048576 (2^20)
 */
#include "app.h"

#include <math.h>
#include <stdint.h>

#define FFT_FLAGS "[--n N (a power of two >= 2)]"
#define FFT_PAGE  4096L
#define FFT_CHECKS 8     /* outputs compared with a direct DFT */
#define FFT_TOL    1e-10 /* relative tolerance of the independent checks */

typedef struct {
    double re, im;
} cplx;

static inline cplx c_mul(cplx a, cplx b)
{
    cplx r = { a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re };
    return r;
}

/* The splitmix64 finalizer: a well-mixed 64-bit hash. */
static uint64_t fft_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The input: x[j] from a hash of j, each part uniform in [-1, 1). */
static double fft_unit(uint64_t z)
{
    return (double)(fft_mix(z) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static cplx fft_input(long j)
{
    uint64_t z = 0x9e3779b97f4a7c15ULL * (uint64_t)(2 * j + 1);
    cplx v = { fft_unit(z), fft_unit(z + 0x632be59bd9b4e019ULL) };
    return v;
}

/* w^k for 0 <= k < N, from the table of w^k for 0 <= k < N/2 (w^(k + N/2) = -w^k, exactly). */
static inline cplx fft_w(const cplx *w, long N, long k)
{
    if (k < N / 2) {
        return w[k];
    }
    cplx v = { -w[k - N / 2].re, -w[k - N / 2].im };
    return v;
}

/* In-place radix-2 FFT of a[0..n) (n a power of two dividing N), twiddles w_n^j = w^(j N / n). */
static void fft_row(cplx *a, long n, const cplx *w, long N)
{
    for (long i = 1, j = 0; i < n; i++) { /* bit-reversal permutation */
        long bit = n >> 1;
        for (; j & bit; bit >>= 1) {
            j ^= bit;
        }
        j |= bit;
        if (i < j) {
            cplx t = a[i];
            a[i]   = a[j];
            a[j]   = t;
        }
    }
    for (long len = 2; len <= n; len <<= 1) {
        long half = len / 2, stride = N / len;
        for (long i = 0; i < n; i += len) {
            for (long j = 0; j < half; j++) {
                cplx u = a[i + j];
                cplx t = c_mul(a[i + j + half], w[j * stride]);
                a[i + j].re        = u.re + t.re;
                a[i + j].im        = u.im + t.im;
                a[i + j + half].re = u.re - t.re;
                a[i + j + half].im = u.im - t.im;
            }
        }
    }
}

/* Rows dst[lo..hi) of the transpose of src (cols x rows) into dst (rows x cols). */
static void fft_transpose(cplx *dst, const cplx *src, long rows, long cols, long lo, long hi)
{
    for (long r = lo; r < hi; r++) {
        for (long c = 0; c < cols; c++) {
            dst[r * cols + c] = src[c * rows + r];
        }
    }
}

/* Process me's band [*lo, *hi) of a rows x cols matrix: contiguous whole pages where a page holds rows. */
static void fft_band(long rows, long cols, int me, int np, long *lo, long *hi)
{
    long per_page = FFT_PAGE / ((long)sizeof(cplx) * cols); /* rows per page, or 0 */
    long unit     = per_page < 1 ? 1 : per_page > rows ? rows : per_page;
    long units    = rows / unit;
    *lo = unit * ((units * me) / np);
    *hi = unit * ((units * (me + 1)) / np);
}

/*
 * The six-step FFT of x (n2 x n1) into y (n1 x n2; x is overwritten), as process me of np:
 * the parallel run passes its rank and synchronizes, the reference passes 0, 1 and no barriers.
 */
static void fft_six_step(cplx *x, cplx *y, long n1, long n2, const cplx *w, int me, int np, bool sync)
{
    const long N = n1 * n2;
    long lo, hi;

    fft_band(n1, n2, me, np, &lo, &hi); /* phase 1: my rows j1 of y */
    fft_transpose(y, x, n1, n2, lo, hi);
    for (long j1 = lo; j1 < hi; j1++) {
        cplx *row = y + j1 * n2;
        fft_row(row, n2, w, N);
        for (long k2 = 1; k2 < n2; k2++) {
            row[k2] = c_mul(row[k2], fft_w(w, N, j1 * k2));
        }
    }
    if (sync) {
        cm_barrier();
    }
    fft_band(n2, n1, me, np, &lo, &hi); /* phase 2: my rows k2 of x */
    fft_transpose(x, y, n2, n1, lo, hi);
    for (long k2 = lo; k2 < hi; k2++) {
        fft_row(x + k2 * n1, n1, w, N);
    }
    if (sync) {
        cm_barrier();
    }
    fft_band(n1, n2, me, np, &lo, &hi); /* phase 3: my rows k1 of y */
    fft_transpose(y, x, n1, n2, lo, hi);
    if (sync) {
        cm_barrier();
    }
}

/* The independent checks on the (verified) result: inverse transform and a few direct DFT values. */
static bool fft_check(const cplx *out, long n1, long n2, const cplx *w)
{
    const long N = n1 * n2;
    cplx *a = malloc((size_t)N * sizeof(cplx)), *b = malloc((size_t)N * sizeof(cplx));
    double scale = 0.0, sum = 0.0, err = 0.0;
    bool ok = true;

    if (a == NULL || b == NULL) {
        cm_abort(1, "fft: out of memory for the inverse transform");
    }
    for (long j = 0; j < N; j++) {
        cplx v = fft_input(j);
        scale  = fmax(scale, fmax(fabs(v.re), fabs(v.im)));
        sum += hypot(v.re, v.im);
        a[j].re = out[j].re;
        a[j].im = -out[j].im;
    }
    fft_six_step(a, b, n1, n2, w, 0, 1, false);
    for (long j = 0; j < N; j++) { /* x = conj(FFT(conj X)) / N */
        cplx v = fft_input(j);
        err    = fmax(err, fmax(fabs(b[j].re / (double)N - v.re), fabs(-b[j].im / (double)N - v.im)));
    }
    if (!(err <= FFT_TOL * scale)) {
        fprintf(stderr, "fft: the inverse transform is off the input by %.3g (max |x| %.3g)\n", err,
                scale);
        ok = false;
    }
    for (int c = 0; c < FFT_CHECKS; c++) { /* X[k] = sum_j x[j] w^(jk) directly */
        long k = (c == 0) ? 0 : (c == 1) ? N - 1 : (long)(fft_mix((uint64_t)c) & (uint64_t)(N - 1));
        cplx s = { 0.0, 0.0 };
        for (long j = 0; j < N; j++) {
            cplx t = c_mul(fft_input(j), fft_w(w, N, (long)(((uint64_t)j * (uint64_t)k) % (uint64_t)N)));
            s.re += t.re;
            s.im += t.im;
        }
        double d = fmax(fabs(s.re - out[k].re), fabs(s.im - out[k].im));
        if (!(d <= FFT_TOL * sum) && ok) {
            fprintf(stderr, "fft: X[%ld] = (%.17g, %.17g), direct DFT (%.17g, %.17g)\n", k,
                    out[k].re, out[k].im, s.re, s.im);
        }
        ok = ok && (d <= FFT_TOL * sum);
    }
    free(a);
    free(b);
    return ok;
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    app_size_t size = app_size(argc, argv, "fft", FFT_FLAGS);
    long N = app_long(argc, argv, "--n",
                      size == APP_SIZE_TEST ? 4096 : size == APP_SIZE_PAPER ? 131072 : 1048576, "fft",
                      FFT_FLAGS);
    bool corrupt = app_flag(argc, argv, "--corrupt"); /* proves the check can fail */
    const int me = cm_rank(), np = cm_nprocs();
    int m = 0;
    double t0, t1;
    char params[128];
    bool ok = true;

    if (N < 2 || (N & (N - 1)) != 0 || N > (1L << 26)) {
        app_usage("fft", FFT_FLAGS);
    }
    while ((1L << m) < N) {
        m++;
    }
    const long n1 = 1L << ((m + 1) / 2), n2 = N / n1;
    cplx *x = cm_malloc((size_t)N * sizeof(cplx)); /* n2 x n1, then scratch */
    cplx *y = cm_malloc((size_t)N * sizeof(cplx)); /* n1 x n2: the result */
    cplx *w = malloc((size_t)(N / 2) * sizeof(cplx));
    long lo, hi;

    if (w == NULL) {
        cm_abort(1, "fft: out of memory for the twiddle table");
    }
    for (long k = 0; k < N / 2; k++) { /* private: the same values in every process */
        double a = 2.0 * M_PI * (double)k / (double)N;
        w[k].re  = cos(a);
        w[k].im  = -sin(a);
    }

    /* Initialization ends first, so each band's pages move to the process that writes them. */
    cm_init_done();
    fft_band(n2, n1, me, np, &lo, &hi); /* my rows of x (phase 2's band) */
    for (long j = lo * n1; j < hi * n1; j++) {
        x[j] = fft_input(j);
    }
    fft_band(n1, n2, me, np, &lo, &hi); /* my rows of y (phase 1's and 3's band) */
    memset(y + lo * n2, 0, (size_t)((hi - lo) * n2) * sizeof(cplx));
    cm_barrier();
    cm_stats_reset();

    t0 = cm_wtime();
    fft_six_step(x, y, n1, n2, w, me, np, true);
    t1 = cm_wtime();
    cm_stats_stop(); /* the statistics are the timed section's */
    if (corrupt && me == np - 1) {
        y[N / 3].re += 1.0;
    }
    cm_barrier();

    if (me == 0) {
        cplx *rx = malloc((size_t)N * sizeof(cplx)), *ry = malloc((size_t)N * sizeof(cplx));
        long bad = 0;
        if (rx == NULL || ry == NULL) {
            cm_abort(1, "fft: out of memory for the reference");
        }
        for (long j = 0; j < N; j++) {
            rx[j] = fft_input(j);
        }
        fft_six_step(rx, ry, n1, n2, w, 0, 1, false);
        for (long k = 0; k < N; k++) {
            if (memcmp(&y[k], &ry[k], sizeof(cplx)) != 0 && bad++ < 3) {
                fprintf(stderr, "fft: X[%ld] = (%.17g, %.17g), sequential (%.17g, %.17g)\n", k,
                        y[k].re, y[k].im, ry[k].re, ry[k].im);
            }
        }
        ok = (bad == 0) && fft_check(y, n1, n2, w);
        free(rx);
        free(ry);
    }
    free(w);
    snprintf(params, sizeof(params), "%ld points (%ld x %ld)", N, n1, n2);
    int status = app_report("fft", params, t1 - t0, ok);
    cm_finalize();
    return status;
}
