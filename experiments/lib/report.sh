#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# report.sh OUTDIR: REPORT.md (on stdout) of an experiments/paper study, from the CSVs in OUTDIR
# (cells.csv, table2.csv, figN.csv and .meta, record.txt): the verdict table, one line per
# finding of the paper, with the numbers it rests on; the figures; Table 2; what the machine
# cannot show. A verdict is CONFIRMED, REFUTED or CANNOT TEST (with why); in quick mode (test
# size, single runs of milliseconds) CONFIRMED and REFUTED read "not meaningful (quick; reads X)".
set -eu
out=$1
. "$(dirname "$0")/csv.sh"
[ -s "$out/cells.csv" ] || { echo "report.sh: $out/cells.csv: missing or empty" >&2; exit 1; }
rec() { sed -n "s/^$1: //p" "$out/record.txt" 2>/dev/null | head -1; }
pfig=$(rec mode | sed -n 's/.*(figures at \([0-9]*\)).*/\1/p')
[ -n "$pfig" ] || pfig=$(awk -F, "$CSV_AWK"'NR == 1 { csv_header(); next } col("latency_us") == 0 { print col("procs") }' \
                           "$out/cells.csv" | sort -n | tail -1)

echo "# The paper's study, rerun: $(rec host | awk '{print $1}'), $(rec date)"
echo
echo "Kontothanassis & Scott, *Using Memory-Mapped Network Interfaces to Improve the Performance of"
echo "Distributed Shared Memory* (HPCA 1996), Figures 1-8 and Table 2, from real runs of Cashmere-RMA."
echo
echo "- commit $(rec commit); $(rec mode)"
echo "- machine: $(rec cpus); $(rec memory); virtualization: $(rec virtualization)"
echo "- $(rec fabric)"
echo "- apps: $(sed -n 's/^apps: //p' "$out/record.txt" | head -1)"
sed -n 's/^absent: \(.*\)/- absent: \1/p; s/^sweeps: \(.*\)/- sweeps: \1/p; s/^link (\(.*\)): \(.*\)/- link (\1): \2/p' "$out/record.txt"
echo "- every run: \`runs.csv\` (time, verdict, timers) and \`runs/\` (output, statistics); \`config.txt\`: \`cm_info -c\`"
echo
echo "## Verdicts"
echo
echo "Each line is one finding of the paper, tested on the runs of this study at $pfig processes"
echo "unless it says otherwise. Times are medians of the repetitions; \`X/Y\` is X's time over Y's."
echo
quick=0
case "$(rec mode)" in quick*) quick=1 ;; esac
if [ $quick = 1 ]; then
    echo "**Quick mode: these verdicts are not meaningful.** The runs are the test size, single runs"
    echo "of milliseconds, where noise decides: each verdict says which way it would read, nothing"
    echo "more. Run the full study (\`experiments/paper\`, without \`--quick\`) for verdicts."
    echo
fi
echo "| # | finding of the paper | verdict | the numbers here |"
echo "|---|---|---|---|"
t2="$out/table2.csv"
[ -s "$t2" ] || t2=/dev/null
cat "$out/cells.csv" - "$t2" <<< "--table2--" | awk -F, -v P="$pfig" -v Q=$quick "$CSV_AWK"'
function has(a, s) { return ((a, s) in T) }
function r2(x) { return sprintf("%.2f", x) }
function row(n, f, v, why) {
    if (Q && (v == "CONFIRMED" || v == "REFUTED")) v = "not meaningful (quick; reads " v ")"
    printf "| %s | %s | %s | %s |\n", n, f, v, why
}
function gm(x, k) { return k ? exp(x / k) : 0 }
BEGIN { part = 1 }
/^--table2--$/ { part = 2; head = 1; next }
NR == 1 || head { csv_header(); head = 0; next }
part == 1 {
    _a = col("app"); _s = col("setting"); _lat = col("latency_us"); _bw = col("bandwidth_mbs"); _m = col("median_s")
    _ok = col("verify") == "OK" && col("runs") > 0
    if (col("procs") == P && _lat == 0 && _ok) {
        T[_a, _s] = _m; if (!(_a in A)) { A[_a] = 1; apps[++na] = _a }
        if (!(_s in SS0)) { SS0[_s] = 1; ss0[++nss0] = _s }
    }
    if (_lat != 0 && _ok) {
        if (_bw == 400) { L[_a, _s, _lat] = _m; if (!((_a, _s) in lmin) || _lat < lmin[_a, _s]) lmin[_a, _s] = _lat; if (_lat > lmax[_a, _s]) lmax[_a, _s] = _lat }
        if (_lat == 1)  { B[_a, _s, _bw] = _m; if (!((_a, _s) in bmin) || _bw < bmin[_a, _s]) bmin[_a, _s] = _bw; if (_bw > bmax[_a, _s]) bmax[_a, _s] = _bw }
        if (!(_a in SA)) { SA[_a] = 1; sapps[++nsa] = _a }
        if (!(_s in SS)) { SS[_s] = 1; ss[++nss] = _s }
    }
    next
}
part == 2 && col("ratio") != "" {
    _a = col("app"); _pr = col("procs"); R[_a, _pr] = col("ratio")
    if (!(_pr in PP)) { PP[_pr] = 1; pl[++np] = _pr } if (!(_a in RA)) { RA[_a] = 1; rapps[++nra] = _a }
}
END {
    # 1. NHHM the best performer.
    # Every Cashmere variant that ran: each setting but TreadMarks and the sequential baseline.
    nc = 0; for (i = 1; i <= nss0; i++) if (ss0[i] !~ /^(treadmarks|sequential)/) C[++nc] = ss0[i]
    k = 0; ok = 0; s = ""
    for (a = 1; a <= na; a++) {
        app = apps[a]; best = ""; bn = ""
        for (i = 1; i <= nc; i++) if (has(app, C[i]) && (best == "" || T[app, C[i]] < best)) { best = T[app, C[i]]; bn = C[i] }
        if (!has(app, "NHHM") || best == "") continue
        k++; if (T[app, "NHHM"] <= 1.10 * best) ok++
        s = s sprintf("%s %s%s; ", app, bn, bn == "NHHM" ? "" : " (NHHM/" bn " " r2(T[app, "NHHM"] / best) ")")
    }
    if (k == 0) row(1, "NHHM is the best performer (Figs. 1, 3-6)", "CANNOT TEST", "NHHM did not run here")
    else row(1, "NHHM is the best performer (Figs. 1, 3-6)", ok * 2 > k ? "CONFIRMED" : "REFUTED",
             sprintf("NHHM fastest or within 10%% of the fastest variant on %d of %d apps. Fastest: %s", ok, k, s))

    # 2. Cashmere beats TreadMarks by at least 50%, up to an order of magnitude.
    k = 0; lo = ""; hi = 0; s = ""; below = ""
    for (a = 1; a <= na; a++) {
        app = apps[a]
        if (!has(app, "treadmarks") || !has(app, "NHHM")) continue
        x = T[app, "treadmarks"] / T[app, "NHHM"]; k++
        if (lo == "" || x < lo) { lo = x; lon = app } if (x > hi) { hi = x; hin = app }
        if (x < 1.5) below = below " " app
        s = s app " " r2(x) "; "
    }
    if (k == 0) row(2, "Cashmere beats TreadMarks by at least 50%, up to an order of magnitude (Fig. 1)", "CANNOT TEST", "TreadMarks or NHHM did not run here")
    else row(2, "Cashmere beats TreadMarks by at least 50%, up to an order of magnitude (Fig. 1)",
             (lo >= 1.5 && hi >= 10) ? "CONFIRMED" : "REFUTED",
             sprintf("TreadMarks/NHHM from %s (%s) to %s (%s)%s%s. Per app: %s", r2(lo), lon, r2(hi), hin,
                     below != "" ? "; under 1.5 on" below : "", hi < 10 ? "; never an order of magnitude" : "", s))

    # 3. Page copying wins only on sor, sor_l, em3d (spatial locality).
    k = 0; wins = ""; other = ""; s = ""
    for (a = 1; a <= na; a++) {
        app = apps[a]
        if (!has(app, "CHHM") || !has(app, "NHHM")) continue
        k++; x = T[app, "CHHM"] / T[app, "NHHM"]; s = s app " " r2(x) "; "
        if (x < 1) { wins = wins " " app; if (app != "sor" && app != "sor_l" && app != "em3d") other = other " " app }
    }
    if (k == 0) row(3, "page copying (C) wins only on sor, sor_l and em3d (Fig. 1)", "CANNOT TEST", "CHHM or NHHM did not run here")
    else row(3, "page copying (C) wins only on sor, sor_l and em3d (Fig. 1)", (other == "" && wins != "") ? "CONFIRMED" : "REFUTED",
             sprintf("CHHM faster than NHHM on:%s%s. CHHM/NHHM: %s", wins == "" ? " no app" : wins,
                     other != "" ? " (outside sor, sor_l, em3d:" other ")" : "", s))

    # 4. The merge buffer matters most for gauss and mgrid.
    np4 = split("CHHN:CHHM CHSN:CHSM NSHN:NSHM NSSN:NSSM", PR, " "); k = 0; s = ""
    for (a = 1; a <= na; a++) {
        app = apps[a]; sum = 0; m = 0
        for (i = 1; i <= np4; i++) { split(PR[i], q, ":"); if (has(app, q[1]) && has(app, q[2])) { sum += log(T[app, q[1]] / T[app, q[2]]); m++ } }
        if (m == 0) continue
        G[app] = gm(sum, m); k++; order4[k] = app
    }
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (G[order4[j]] > G[order4[i]]) { t = order4[i]; order4[i] = order4[j]; order4[j] = t }
    for (i = 1; i <= k; i++) s = s order4[i] " " r2(G[order4[i]]) "; "
    if (k < 3 || !("gauss" in G) || !("mgrid" in G)) row(4, "the merge buffer matters most for gauss and mgrid (Fig. 3)", "CANNOT TEST", "needs gauss, mgrid and another app with a variant pair with and without the buffer")
    else row(4, "the merge buffer matters most for gauss and mgrid (Fig. 3)",
             ((order4[1] == "gauss" || order4[1] == "mgrid") && (order4[2] == "gauss" || order4[2] == "mgrid")) ? "CONFIRMED" : "REFUTED",
             "without/with the buffer (geometric mean over CHHN/CHHM, CHSN/CHSM, NSHN/NSHM, NSSN/NSSM; NHHM has no buffer to lose here), largest first: " s)

    # 5. Software fills cost 14-84% and make page copying preferable.
    k = 0; lo = ""; hi = 0; cw = 0; kc = 0; s = ""
    for (a = 1; a <= na; a++) {
        app = apps[a]
        for (i = 1; i <= 2; i++) {
            sv = i == 1 ? "NSHM" : "NSHN"; hv = i == 1 ? "NHHM" : "NHHN"
            if (!has(app, sv) || !has(app, hv)) continue
            x = T[app, sv] / T[app, hv]; k++; if (lo == "" || x < lo) lo = x; if (x > hi) hi = x
            if (i == 1) s = s app " " r2(x) "; "
        }
        if (has(app, "CHHM") && has(app, "NSHM")) { kc++; if (T[app, "CHHM"] < T[app, "NSHM"]) cw++ }
    }
    if (k == 0) row(5, "software fills cost 14-84% and make page copying preferable (Fig. 4)", "CANNOT TEST", "NSH* or NHH* did not run here")
    else row(5, "software fills cost 14-84% and make page copying preferable (Fig. 4)", (lo >= 1.05 && cw * 2 > kc) ? "CONFIRMED" : "REFUTED",
             sprintf("NSH*/NHH* from %+.0f%% to %+.0f%%; CHHM faster than NSHM on %d of %d apps. NSHM/NHHM: %s", (lo - 1) * 100, (hi - 1) * 100, cw, kc, s))

    # 6a. Software doubling is costly.
    np6 = split("NSSN:NSHN NSSM:NSHM CHSN:CHHN CHSM:CHHM", PS, " "); k = 0; c6 = 0; s = ""
    for (a = 1; a <= na; a++) {
        app = apps[a]; sum = 0; m = 0
        for (i = 1; i <= np6; i++) { split(PS[i], q, ":"); if (has(app, q[1]) && has(app, q[2])) { sum += log(T[app, q[1]] / T[app, q[2]]); m++ } }
        if (m == 0) continue
        x = gm(sum, m); k++; if (x > 1.05) c6++; s = s app " " r2(x) "; "
    }
    if (k == 0) row("6a", "software write doubling is costly (Figs. 5, 6)", "CANNOT TEST", "no pair of variants differing only in how writes are doubled ran here")
    else row("6a", "software write doubling is costly (Figs. 5, 6)", c6 * 2 > k ? "CONFIRMED" : "REFUTED",
             sprintf("software/hardware doubling over 5%% slower on %d of %d apps (geometric mean of NSSN/NSHN, NSSM/NSHM, CHSN/CHHN, CHSM/CHHM): %s", c6, k, s))

    # 6b. Message-like doubling can erase the advantage over TreadMarks.
    k = 0; er = ""; s = ""
    for (a = 1; a <= na; a++) {
        app = apps[a]; w = ""; wn = ""
        if (!has(app, "treadmarks")) continue
        split("NSSN NSSM CHSN CHSM", SV, " ")
        for (i = 1; i <= 4; i++) if (has(app, SV[i]) && (w == "" || T[app, SV[i]] > w)) { w = T[app, SV[i]]; wn = SV[i] }
        if (w == "") continue
        k++; x = w / T[app, "treadmarks"]; s = s app " " wn " " r2(x) "; "
        if (x >= 1) er = er " " app
    }
    if (k == 0) row("6b", "doubling writes in software can erase the advantage over TreadMarks (Figs. 5, 6)", "CANNOT TEST", "TreadMarks or the software-doubling variants did not run here")
    else row("6b", "doubling writes in software can erase the advantage over TreadMarks (Figs. 5, 6)", er != "" ? "CONFIRMED" : "REFUTED",
             sprintf("the slowest software-doubling variant / TreadMarks: %s%s", s, er != "" ? " at or above 1 on:" er : " below 1 on every app"))

    # 7a, 7b. Cashmere is latency-sensitive, TreadMarks bandwidth-sensitive.
    if (nsa == 0) {
        row("7a", "Cashmere is more latency-sensitive than TreadMarks (Fig. 7)", "CANNOT TEST", "no sweep was run (--no-sweeps)")
        row("7b", "TreadMarks is more bandwidth-sensitive than line-transfer Cashmere (Fig. 8)", "CANNOT TEST", "no sweep was run (--no-sweeps)")
    } else {
        line = has_s("NHHM") ? "NHHM" : "NSHM"
        k = 0; ok = 0; s = ""
        for (a = 1; a <= nsa; a++) {
            app = sapps[a]
            if (!((app, "treadmarks") in lmin)) continue
            tl = lsens(app, "treadmarks"); worst = ""; wn = ""
            for (i = 1; i <= nss; i++) if (ss[i] != "treadmarks" && ((app, ss[i]) in lmin)) { x = lsens(app, ss[i]); if (worst == "" || x > worst) { worst = x; wn = ss[i] } }
            if (worst == "") continue
            k++; if (worst > tl) ok++
            s = s sprintf("%s: TreadMarks %s, %s %s; ", app, r2(tl), wn, r2(worst))
        }
        if (k == 0) row("7a", "Cashmere is more latency-sensitive than TreadMarks (Fig. 7)", "CANNOT TEST", "the latency sweep has no TreadMarks and Cashmere pair")
        else row("7a", "Cashmere is more latency-sensitive than TreadMarks (Fig. 7)", ok * 2 > k ? "CONFIRMED" : "REFUTED",
                 sprintf("time at the highest latency / at the lowest, most sensitive Cashmere setting against TreadMarks, on %d of %d apps Cashmere more: %s", ok, k, s))
        k = 0; ok = 0; s = ""
        for (a = 1; a <= nsa; a++) {
            app = sapps[a]
            if (!((app, "treadmarks") in bmin) || !((app, line) in bmin)) continue
            tb = bsens(app, "treadmarks"); lb = bsens(app, line); k++; if (tb > lb) ok++
            s = s sprintf("%s: TreadMarks %s, %s %s%s; ", app, r2(tb), line, r2(lb), ((app, "CHHM") in bmin) ? ", CHHM " r2(bsens(app, "CHHM")) : "")
        }
        if (k == 0) row("7b", "TreadMarks is more bandwidth-sensitive than line-transfer Cashmere (Fig. 8)", "CANNOT TEST", "the bandwidth sweep has no TreadMarks and " line " pair")
        else row("7b", "TreadMarks is more bandwidth-sensitive than line-transfer Cashmere (Fig. 8)", ok * 2 > k ? "CONFIRMED" : "REFUTED",
                 sprintf("time at the lowest bandwidth / at the highest, on %d of %d apps TreadMarks more%s: %s", ok, k, line == "NSHM" ? " (NSHM stands in for NHHM)" : "", s))
    }

    # 8. The edge of Cashmere is modest at small process counts and grows with them (Table 2).
    if (np < 2) row(8, "the edge of Cashmere over TreadMarks is modest at small process counts and grows with them (Table 2)", "CANNOT TEST", "Table 2 has one process count only")
    else {
        pmin = pl[1]; pmax = pl[1]
        for (i = 1; i <= np; i++) { if (pl[i] + 0 < pmin + 0) pmin = pl[i]; if (pl[i] + 0 > pmax + 0) pmax = pl[i] }
        k = 0; ok = 0; s = ""; sl = 0; sh = 0
        for (a = 1; a <= nra; a++) {
            app = rapps[a]
            if (!((app, pmin) in R) || !((app, pmax) in R)) continue
            k++; if (R[app, pmax] > R[app, pmin]) ok++; sl += log(R[app, pmin]); sh += log(R[app, pmax])
            s = s sprintf("%s %s -> %s; ", app, R[app, pmin], R[app, pmax])
        }
        if (k == 0) row(8, "the edge of Cashmere over TreadMarks is modest at small process counts and grows with them (Table 2)", "CANNOT TEST", "no app has ratios at two process counts")
        else row(8, "the edge of Cashmere over TreadMarks is modest at small process counts and grows with them (Table 2)", ok * 2 > k ? "CONFIRMED" : "REFUTED",
                 sprintf("TreadMarks / best Cashmere, %s -> %s processes (geometric mean %s -> %s), larger at %s on %d of %d apps: %s",
                         pmin, pmax, r2(gm(sl, k)), r2(gm(sh, k)), pmax, ok, k, s))
    }
}
function has_s(v,   i) { for (i = 1; i <= nss; i++) if (ss[i] == v) return 1; return 0 }
function lsens(app, s) { return L[app, s, lmax[app, s]] / L[app, s, lmin[app, s]] }
function bsens(app, s) { return B[app, s, bmin[app, s]] / B[app, s, bmax[app, s]] }
'

echo
echo "## Figures"
for f in 1 2 3 4 5 6 7 8; do
    [ -s "$out/fig$f.csv" ] || continue
    echo
    echo "### $(sed -n 's/^title: //p' "$out/fig$f.meta" 2>/dev/null | head -1)"
    echo
    if [ -s "$out/fig$f.png" ]; then echo "![fig$f](fig$f.png)"; else echo "(figure $f could not be drawn: see fig$f.err)"; fi
    echo
    echo "$(sed -n 's/^note: //p' "$out/fig$f.meta" 2>/dev/null | head -1) Data: [fig$f.csv](fig$f.csv), [fig$f.svg](fig$f.svg)."
done

echo
echo "## Table 2: TreadMarks / best Cashmere variant"
echo
echo "The paper's ratios are TreadMarks / NHHM on 8 and 64 processors (its Table 2). Here: the best"
echo "Cashmere variant that ran, at each process count run (data: [table2.csv](table2.csv))."
echo
pcounts=$(awk -F, "$CSV_AWK"'NR == 1 { csv_header(); next } { print col("procs") }' "$t2" 2>/dev/null |
          sort -nu | paste -sd' ')
printf '| app | paper, 8 | paper, 64 |'
for p in $pcounts; do printf ' %s procs: best | TreadMarks / best | scan / best | TreadMarks / NHHM |' "$p"; done
printf '\n|---|---|---|'
for p in $pcounts; do printf -- '---|---|---|---|'; done
printf '\n'
awk -F, -v pcounts="$pcounts" "$CSV_AWK"'
BEGIN { split("appbt 1.51 6.16;water 1.94 8.43;mp3d 8.17 12.01;em3d 1.43 2.61;fft 1.15 2.58;gauss 2.24 5.80;mgrid 1.39 2.17;sor 1.13 2.53;sor_l 1.14 1.51", pp, ";")
        for (i in pp) { split(pp[i], f, " "); p8[f[1]] = f[2]; p64[f[1]] = f[3] } }
NR == 1 { csv_header(); next }
{
    a = col("app"); k = a SUBSEP col("procs")
    if (!(a in seen)) { seen[a] = 1; apps[++na] = a }
    b[k] = col("best") " " col("best_s"); r[k] = col("ratio"); rs[k] = col("ratio_scan"); rn[k] = col("ratio_nhhm")
}
END {
    np = split(pcounts, P, " ")
    for (a = 1; a <= na; a++) {
        app = apps[a]; printf "| %s | %s | %s |", app, p8[app], p64[app]
        for (i = 1; i <= np; i++) {
            k = app SUBSEP P[i]
            printf " %s | %s | %s | %s |", (k in b) ? b[k] " s" : "-", (k in r && r[k] != "") ? r[k] : "-",
                (k in rs && rs[k] != "") ? rs[k] : "-", (k in rn && rn[k] != "") ? rn[k] : "-"
        }
        printf "\n"
    }
}' "$t2"

echo
echo "## What this machine cannot show"
echo
cores=$(rec cpus | awk '{print $1}')
echo "- **Scale.** The paper ran 64 simulated processors; this machine has ${cores:-?} cores. Figures are at $pfig processes; more processes than cores time-share them, which slows every protocol that waits (spin-then-block helps, but a waiter still needs its turn on a core)."
virt=$(rec virtualization)
[ -n "$virt" ] && [ "$virt" != none ] && echo "- **Virtualization ($virt).** A page fault with its \`mprotect\` costs several microseconds here, several times bare metal: page-based mechanisms (faults, TreadMarks's twins) pay more than the paper's 200 MHz model assumed."
if rec fabric | grep -q '^hosts '; then
    echo "- **The network is a real link between hosts** ($(rec fabric); $(sed -n 's/^link (\(.*\)): /\1: /p' "$out/record.txt" | paste -sd';' | sed 's/;/; /g')): a home's memory cannot be mapped, so the NH** variants do not run, and there are no latency or bandwidth sweeps (Figures 7 and 8): the link has its own. The scoreboard's --hosts mode puts each cell next to the limit of this link."
else
    echo "- **The network is one node's shared memory.** Every variant runs over UCX shared memory between the processes of one machine, so network latency and bandwidth are those of memory, not of a Memory Channel. Figures 7 and 8 add the paper's latencies and bandwidths by injecting delay (CM_NET_LATENCY, CM_NET_BANDWIDTH) on every one-sided operation and message: an issuer-side model, with no contention in a switch."
fi
echo "- **Hardware support is emulated.** H writes of CHH* and NSH* are doubled by an offload thread that takes a core from the application (the paper's hardware was free). NH* fills are real (loads and stores through a mapping of the home's memory) but mapped memory cannot be delayed, so NHHM has no points in Figures 7 and 8 and NSHM, which moves lines in software, stands in. NHHM and NHHN are one mechanism here: stores through the mapping have nothing to merge."
echo "- **Software doubling** has one cost here (a hook call per store, a few nanoseconds), not the paper's two (3 instructions on a memory-mapped interface, 12 with messages); finding 6b uses the slowest software-doubling variant for the message-based one."

echo
echo "## How each verdict is decided"
echo
echo "A majority means more than half of the apps that have the numbers. 1: NHHM within 10% of the"
echo "fastest variant on a majority. 2: TreadMarks/NHHM at least 1.5 on every app and 10 or more on"
echo "one. 3: CHHM faster than NHHM on some app, and on none outside sor, sor_l, em3d. 4: gauss and"
echo "mgrid have the two largest slowdowns without the merge buffer (geometric mean over the pairs"
echo "that ran). 5: NSH* at least 5% slower than NHH* on every app, and CHHM faster than NSHM on a"
echo "majority. 6a: software over hardware doubling more than 5% slower on a majority. 6b: the"
echo "slowest software-doubling variant at or above TreadMarks on some app. 7a: the most"
echo "latency-sensitive Cashmere setting (time at the highest latency over the lowest) more sensitive"
echo "than TreadMarks on a majority. 7b: TreadMarks more bandwidth-sensitive (time at the lowest"
echo "bandwidth over the highest) than the line-transfer setting on a majority. 8: the Table 2 ratio"
echo "larger at the largest process count than at the smallest on a majority. A verdict is one run of"
echo "the study on one machine: the figures' whiskers show how far a single run can move."

