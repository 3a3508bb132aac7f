#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# params_tables.sh RUNS OUTDIR "overhead=600 occupancy=1000 ...": the tables of experiments/params
# from its runs (runs.csv: one row per run), into OUTDIR:
#   cells.csv      app,protocol,param,value,runs,ok,median_s,min_s,compute_s: every cell, medians
#                  of its verified runs (a cell with a failed run is marked FAILED, no time)
#   PARAM.csv      app,protocol,value,norm,median_s,min_s: each parameter's sweep, the achievable
#                  point at its value, normalized to the protocol's achievable time on that app
#   slowdowns.csv  app,protocol,param,low,high,t_low,t_high,slowdown: the seed's Table 3, the
#                  largest slowdown over the range, 1 - T(better end) / T(worse end), in percent
#                  (negative: the worse end is faster); the better end is the low value but for
#                  bandwidth; for page and ppn the low value (smaller pages, fewer per node)
#   table.csv      app,protocol,seq_s,achievable_s,best_s,ideal_s,s_achievable,s_best,s_ideal: the
#                  seed's Table 4, speedups over the sequential run
set -eu
runs=$1 out=$2 ach=$3
. "$(dirname "$0")/csv.sh"
[ -s "$runs" ] || { echo "params_tables.sh: $runs: missing or empty" >&2; exit 1; }

# Medians per cell.
awk -F, "$CSV_AWK"'
NR == 1 { csv_header(); print "app,protocol,param,value,runs,ok,median_s,min_s,compute_s"; next }
{
    k = col("app") SUBSEP col("protocol") SUBSEP col("param") SUBSEP col("value")
    if (!(k in N)) order[++n] = k
    N[k]++
    if (col("verify") != "OK") { bad[k] = 1; next }
    T[k, ++ok[k]] = col("time_s"); C[k, ok[k]] = col("compute_s")
}
function med(A, k, m,   i, j, x, v) {
    for (i = 1; i <= m; i++) v[i] = A[k, i] + 0
    for (i = 2; i <= m; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
}
function mini(A, k, m,   i, x) { x = A[k, 1]; for (i = 2; i <= m; i++) if (A[k, i] + 0 < x + 0) x = A[k, i]; return x }
END {
    for (i = 1; i <= n; i++) {
        k = order[i]; split(k, f, SUBSEP)
        if (bad[k] || !ok[k]) { printf "%s,%s,%s,%s,%d,FAILED,,,\n", f[1], f[2], f[3], f[4], N[k]; continue }
        printf "%s,%s,%s,%s,%d,OK,%.6f,%.6f,%.6f\n", f[1], f[2], f[3], f[4], N[k], med(T, k, ok[k]), mini(T, k, ok[k]), med(C, k, ok[k])
    }
}' "$runs" > "$out/cells.csv"

# The sweeps, the slowdowns and the table, from the cells.
awk -F, -v ach="$ach" -v out="$out" "$CSV_AWK"'
BEGIN { n = split(ach, a, " "); for (i = 1; i <= n; i++) { split(a[i], kv, "="); A[kv[1]] = kv[2] } }
NR == 1 { csv_header(); next }
col("ok") == "OK" {
    app = col("app"); pr = col("protocol"); p = col("param"); v = col("value")
    if (!(app in SA)) { SA[app] = 1; apps[++na] = app }
    if (!(pr in SP)) { SP[pr] = 1; prs[++np] = pr }
    M[app, pr, p, v] = col("median_s"); MIN[app, pr, p, v] = col("min_s"); CS[app, pr, p, v] = col("compute_s")
    if (p != "achievable" && p != "best" && p != "sequential") {
        if (!((p, v) in PV)) { PV[p, v] = 1; vals[p] = vals[p] " " v }
        if (!(p in PS)) { PS[p] = 1; params[++npar] = p }
    }
}
function sortnum(s, V,   m, i, j, x) {
    m = split(s, V, " ")
    for (i = 2; i <= m; i++) { x = V[i]; for (j = i - 1; j >= 1 && V[j] + 0 > x + 0; j--) V[j + 1] = V[j]; V[j + 1] = x }
    return m
}
function t(app, pr, p, v) {   # the time of a point; the achievable point stands for its own value
    if ((app, pr, p, v) in M) return M[app, pr, p, v]
    if ((p in A) && v == A[p] && ((app, pr, "achievable", 0) in M)) return M[app, pr, "achievable", 0]
    return ""
}
function tmin(app, pr, p, v) {
    if ((app, pr, p, v) in MIN) return MIN[app, pr, p, v]
    if ((p in A) && v == A[p] && ((app, pr, "achievable", 0) in MIN)) return MIN[app, pr, "achievable", 0]
    return ""
}
END {
    for (q = 1; q <= npar; q++) {
        p = params[q]
        if (p in A) vals[p] = vals[p] " " A[p]
        m = sortnum(vals[p], V)
        f = out "/" p ".csv"
        print "app,protocol,value,norm,median_s,min_s" > f
        for (i = 1; i <= na; i++) for (j = 1; j <= np; j++) {
            app = apps[i]; pr = prs[j]
            if (!((app, pr, "achievable", 0) in M)) continue
            swept = 0
            for (k = 1; k <= m; k++) swept += ((app, pr, p, V[k]) in M)
            if (!swept) continue # (the two-level protocol on one host: the page size only)
            base = M[app, pr, "achievable", 0]; last = ""
            for (k = 1; k <= m; k++) {
                if (V[k] == last) continue
                last = V[k]; x = t(app, pr, p, V[k])
                if (x == "" || base <= 0) continue
                printf "%s,%s,%s,%.4f,%.6f,%.6f\n", app, pr, V[k], x / base, x, tmin(app, pr, p, V[k]) > f
            }
        }
        close(f)
        # The slowdown over the whole range (the seed: from the smallest and the biggest values).
        for (i = 1; i <= na; i++) for (j = 1; j <= np; j++) {
            app = apps[i]; pr = prs[j]; lo = ""; hi = ""
            for (k = 1; k <= m; k++) if (t(app, pr, p, V[k]) != "") { if (lo == "") lo = V[k]; hi = V[k] }
            if (lo == "" || lo == hi) continue
            tl = t(app, pr, p, lo); th = t(app, pr, p, hi)
            if (p == "bandwidth") sd = 1 - th / tl; else sd = 1 - tl / th
            S[++ns] = sprintf("%s,%s,%s,%s,%s,%.6f,%.6f,%.1f", app, pr, p, lo, hi, tl, th, 100 * sd)
        }
    }
    f = out "/slowdowns.csv"
    print "app,protocol,param,low,high,t_low,t_high,slowdown" > f
    for (i = 1; i <= ns; i++) print S[i] > f
    close(f)
    f = out "/table.csv"
    print "app,protocol,seq_s,achievable_s,best_s,ideal_s,s_achievable,s_best,s_ideal" > f
    for (i = 1; i <= na; i++) for (j = 1; j <= np; j++) {
        app = apps[i]; pr = prs[j]
        if (pr == "sequential" || !((app, "sequential", "sequential", 0) in M)) continue
        seq = M[app, "sequential", "sequential", 0]
        ta = ((app, pr, "achievable", 0) in M) ? M[app, pr, "achievable", 0] : ""
        tb = ((app, pr, "best", 0) in M) ? M[app, pr, "best", 0] : ""
        ti = (tb != "" && CS[app, pr, "best", 0] > 0) ? CS[app, pr, "best", 0] : ""
        printf "%s,%s,%.6f,%s,%s,%s,%s,%s,%s\n", app, pr, seq, ta, tb, ti,
            (ta > 0) ? sprintf("%.2f", seq / ta) : "", (tb > 0) ? sprintf("%.2f", seq / tb) : "",
            (ti > 0) ? sprintf("%.2f", seq / ti) : "" > f
    }
}' "$out/cells.csv"
