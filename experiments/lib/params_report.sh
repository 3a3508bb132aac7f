#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# params_report.sh OUTDIR: REPORT.md (on stdout) of an experiments/params study, from the CSVs in
# OUTDIR (slowdowns.csv, table.csv, PARAM.csv, record.txt): a verdict per finding of the seed
# (bilas-singh-comm-params) and protocol, with the numbers it rests on; the seed's Table 3 and
# Table 4 as measured here; the figures. A verdict is CONFIRMED, REFUTED or CANNOT TEST (with
# why); in quick mode CONFIRMED and REFUTED read "not meaningful (quick; reads X)".
#
# The findings and how each is read (a slowdown is the seed's: 1 - T(better end) / T(worse end)
# over a parameter's whole range, the others at their achievable values; "most" is more than half
# of the apps that ran):
#   1  interrupt cost is the dominant parameter: its slowdown is the largest of the four
#      (overhead, occupancy, bandwidth, interrupt) in most apps
#   2  interrupt cost hurts every application: its slowdown is over 30 % in every app
#   3  host overhead matters little: its slowdown is under 25 % in most apps
#   4  NI occupancy matters less still: under 25 % in most apps, and no more than host overhead's
#      in most apps
#   5  bandwidth matters for a few bandwidth-bound apps: some app slows by 40 % or more, but no
#      more than half of them do
#   6  most apps favour smaller pages: most apps are fastest at the smallest page
#   7  more processes per node help: most apps are faster with all processes on one node than
#      split over the hosts (across hosts only)
#   8  the achievable point is close to the best: achievable within 10 % of best in most apps
#   9  (this project's question) Cashmere escapes the interrupt bottleneck: its interrupt slowdown
#      is under half of TreadMarks's in most apps
set -eu
out=$1
. "$(dirname "$0")/csv.sh"
[ -s "$out/slowdowns.csv" ] || { echo "params_report.sh: $out/slowdowns.csv: missing or empty" >&2; exit 1; }
rec() { sed -n "s/^$1: //p" "$out/record.txt" 2>/dev/null | head -1; }
quick=0
case "$(rec mode)" in quick*) quick=1 ;; esac

echo "# The communication-parameter study, rerun: $(rec host | awk '{print $1}'), $(rec date)"
echo
echo "Bilas & Singh, *The Effects of Communication Parameters on End Performance of Shared Virtual"
echo "Memory Clusters* (SC 1997): host overhead, NI occupancy, I/O bandwidth and interrupt cost, page"
echo "size and processes per node, from real runs of Cashmere-RMA with injected costs (\`CM_NET_*\`,"
echo "\`CM_PAGE_SIZE\`; docs/ARCHITECTURE.md, \"Delay injection\")."
echo
echo "- $(rec commit); $(rec mode)"
echo "- machine: $(rec cpus); $(rec memory); virtualization: $(rec virtualization)"
echo "- $(rec fabric)"
echo "- cycle: $(rec cycle): the seed's values in cycles are scaled to this processor"
echo "- apps: $(rec apps)"
echo "- achievable: \`$(rec achievable)\`; best: \`$(rec best)\`"
sed -n 's/^sweep \([a-z]*\): \(.*\)/- sweep \1: \2/p; s/^link (\(.*\)): \(.*\)/- link (\1): \2/p' "$out/record.txt"
echo "- every run: \`runs.csv\` (time, verdict, compute time) and \`runs/\` (output, statistics); \`config.txt\`: \`cm_info -c\`"
echo
echo "## Verdicts"
echo
echo "Each line is one finding of the seed for one protocol. A slowdown is the seed's (Table 3):"
echo "1 - T(better end) / T(worse end) over the parameter's range, the others achievable; times are"
echo "medians of the repetitions. \"Most\" is more than half of the apps."
echo
if [ $quick = 1 ]; then
    echo "**Quick mode: these verdicts are not meaningful.** The runs are the test size, single runs"
    echo "of milliseconds, where noise decides: each verdict says which way it would read, nothing"
    echo "more. Run the full study (\`experiments/params\`, without \`--quick\`) for verdicts."
    echo
fi
hosts=0
grep -q '^fabric: hosts' "$out/record.txt" 2>/dev/null && hosts=1
echo "| # | finding of the seed | protocol | verdict | the numbers here |"
echo "|---|---|---|---|---|"
tab="$out/table.csv"
[ -s "$tab" ] || tab=/dev/null
ppn="$out/ppn.csv"
[ -s "$ppn" ] || ppn=/dev/null
page="$out/page.csv"
[ -s "$page" ] || page=/dev/null
sep=$(mktemp)
trap 'rm -f "$sep"' EXIT
echo "--part--" > "$sep"
cat "$out/slowdowns.csv" "$sep" "$tab" "$sep" "$page" "$sep" "$ppn" | awk -F, -v Q=$quick -v H=$hosts "$CSV_AWK"'
function nosweep(pr, p) { return (pr == "twolevel" && !H) ? "one host is one node: it sends nothing" : "no " p " sweep" }
function row(n, f, pr, v, why) {
    if (Q && (v == "CONFIRMED" || v == "REFUTED")) v = "not meaningful (quick; reads " v ")"
    printf "| %s | %s | %s | %s | %s |\n", n, f, pr, v, why
}
function most(k, n) { return n > 0 && 2 * k > n }
function pct(x) { return sprintf("%.0f %%", x) }
BEGIN { part = 1; head = 1 }
/^--part--$/ { part++; head = 1; next }
head { csv_header(); head = 0; next }
part == 1 {
    a = col("app"); pr = col("protocol"); p = col("param")
    SD[a, pr, p] = col("slowdown")
    if (!((pr, a) in PA)) { PA[pr, a] = 1; apps[pr] = apps[pr] " " a; napps[pr]++ }
    if (!(pr in SP)) { SP[pr] = 1; prs[++np] = pr }
    next
}
part == 2 {
    a = col("app"); pr = col("protocol")
    if (col("achievable_s") != "" && col("best_s") != "") AB[a, pr] = col("achievable_s") / col("best_s")
    next
}
part == 3 {   # page: the fastest page size per app and protocol
    a = col("app"); pr = col("protocol"); v = col("value") + 0; x = col("median_s") + 0
    if (!((a, pr) in PMIN) || v < PMIN[a, pr]) PMIN[a, pr] = v
    if (!((a, pr) in PBEST) || x < PBT[a, pr]) { PBEST[a, pr] = v; PBT[a, pr] = x }
    if (!((pr, a) in PGA)) { PGA[pr, a] = 1; papps[pr] = papps[pr] " " a; npapps[pr]++ }
    if (!(pr in SP)) { SP[pr] = 1; prs[++np] = pr }
    next
}
part == 4 {   # ppn: the time at each count per node
    a = col("app"); pr = col("protocol"); v = col("value") + 0
    PT[a, pr, v] = col("median_s")
    if (!((a, pr) in PLO) || v < PLO[a, pr]) PLO[a, pr] = v
    if (v > PHI[a, pr]) PHI[a, pr] = v
    if (!((pr, a) in NA)) { NA[pr, a] = 1; nodeapps[pr] = nodeapps[pr] " " a; nnode[pr]++ }
    next
}
END {
    for (j = 1; j <= np; j++) {
        pr = prs[j]; n = split(apps[pr], L, " ")
        # 1: interrupt the largest of the four.
        k = 0; m = 0; s = ""
        for (i = 1; i <= n; i++) {
            a = L[i]
            if (!((a, pr, "interrupt") in SD)) continue
            m++; big = 1; other = ""
            split("overhead occupancy bandwidth", O, " ")
            for (o = 1; o <= 3; o++) if ((a, pr, O[o]) in SD) {
                if (SD[a, pr, O[o]] + 0 >= SD[a, pr, "interrupt"] + 0) big = 0
                if (other == "" || SD[a, pr, O[o]] + 0 > ov) { ov = SD[a, pr, O[o]] + 0; other = O[o] }
            }
            k += big
            s = s sprintf("%s%s %s (next: %s %s)", s == "" ? "" : "; ", a, pct(SD[a, pr, "interrupt"]), other == "" ? "none" : other, other == "" ? "" : pct(ov))
        }
        if (m == 0) row(1, "interrupt cost is the dominant parameter", pr, "CANNOT TEST", nosweep(pr, "interrupt"))
        else row(1, "interrupt cost is the dominant parameter", pr, most(k, m) ? "CONFIRMED" : "REFUTED", sprintf("largest in %d of %d apps: %s", k, m, s))
        # 2: over 30 % in every app.
        k = 0; m = 0; s = ""
        for (i = 1; i <= n; i++) if ((L[i], pr, "interrupt") in SD) {
            m++; k += (SD[L[i], pr, "interrupt"] + 0 > 30); s = s sprintf("%s%s %s", s == "" ? "" : ", ", L[i], pct(SD[L[i], pr, "interrupt"]))
        }
        if (m == 0) row(2, "interrupt cost hurts every application", pr, "CANNOT TEST", nosweep(pr, "interrupt"))
        else row(2, "interrupt cost hurts every application", pr, (k == m) ? "CONFIRMED" : "REFUTED", sprintf("over 30 %% in %d of %d: %s", k, m, s))
        # 3 and 4: overhead and occupancy under 25 %.
        split("overhead occupancy", P2, " ")
        for (q = 1; q <= 2; q++) {
            p = P2[q]; k = 0; m = 0; le = 0; lm = 0; s = ""
            for (i = 1; i <= n; i++) if ((L[i], pr, p) in SD) {
                m++; k += (SD[L[i], pr, p] + 0 < 25); s = s sprintf("%s%s %s", s == "" ? "" : ", ", L[i], pct(SD[L[i], pr, p]))
                if (p == "occupancy" && (L[i], pr, "overhead") in SD) { lm++; le += (SD[L[i], pr, p] + 0 <= SD[L[i], pr, "overhead"] + 0) }
            }
            f = (p == "overhead") ? "host overhead matters little" : "NI occupancy matters less still"
            if (m == 0) { row(q + 2, f, pr, "CANNOT TEST", nosweep(pr, p)); continue }
            v = most(k, m)
            why = sprintf("under 25 %% in %d of %d: %s", k, m, s)
            if (p == "occupancy") { v = v && (lm == 0 || most(le, lm)); why = why sprintf("; at most host overhead'"'"'s in %d of %d", le, lm) }
            row(q + 2, f, pr, v ? "CONFIRMED" : "REFUTED", why)
        }
        # 5: bandwidth for a few.
        k = 0; m = 0; s = ""
        for (i = 1; i <= n; i++) if ((L[i], pr, "bandwidth") in SD) {
            m++; k += (SD[L[i], pr, "bandwidth"] + 0 >= 40); s = s sprintf("%s%s %s", s == "" ? "" : ", ", L[i], pct(SD[L[i], pr, "bandwidth"]))
        }
        if (m == 0) row(5, "bandwidth matters for a few bandwidth-bound apps", pr, "CANNOT TEST", nosweep(pr, "bandwidth"))
        else row(5, "bandwidth matters for a few bandwidth-bound apps", pr, (k >= 1 && 2 * k <= m) ? "CONFIRMED" : "REFUTED", sprintf("40 %% or more in %d of %d: %s", k, m, s))
        # 6: smaller pages.
        n2 = split(papps[pr], L2, " "); k = 0; s = ""
        for (i = 1; i <= n2; i++) { k += (PBEST[L2[i], pr] == PMIN[L2[i], pr]); s = s sprintf("%s%s %d KiB", s == "" ? "" : ", ", L2[i], PBEST[L2[i], pr]) }
        if (n2 == 0) row(6, "most apps favour smaller pages", pr, "CANNOT TEST", "no page-size sweep")
        else row(6, "most apps favour smaller pages", pr, most(k, n2) ? "CONFIRMED" : "REFUTED", sprintf("fastest at the smallest page in %d of %d; fastest: %s", k, n2, s))
        # 7: clustering.
        n3 = split(nodeapps[pr], L3, " "); k = 0; s = ""
        for (i = 1; i <= n3; i++) {
            a = L3[i]; lo = PT[a, pr, PLO[a, pr]]; hi = PT[a, pr, PHI[a, pr]]
            k += (hi + 0 < lo + 0); s = s sprintf("%s%s %.2f", s == "" ? "" : ", ", a, lo / hi)
        }
        if (n3 == 0) row(7, "more processes per node help", pr, "CANNOT TEST", H ? "no processes-per-node sweep for this protocol" : "one host: nodes are hosts (--hosts)")
        else row(7, "more processes per node help", pr, most(k, n3) ? "CONFIRMED" : "REFUTED", sprintf("faster on one node in %d of %d (time split / one node: %s)", k, n3, s))
        # 8: achievable near best.
        k = 0; m = 0; s = ""
        for (i = 1; i <= n; i++) if ((L[i], pr) in AB) { m++; k += (AB[L[i], pr] <= 1.10); s = s sprintf("%s%s %.2f", s == "" ? "" : ", ", L[i], AB[L[i], pr]) }
        if (m == 0) row(8, "the achievable point is close to the best", pr, "CANNOT TEST", nosweep(pr, "best-point"))
        else row(8, "the achievable point is close to the best", pr, most(k, m) ? "CONFIRMED" : "REFUTED", sprintf("within 10 %% in %d of %d (achievable / best: %s)", k, m, s))
    }
    # 9: Cashmere against TreadMarks.
    n = split(apps["cashmere"], L, " "); k = 0; m = 0; s = ""
    for (i = 1; i <= n; i++) {
        a = L[i]
        if (!((a, "cashmere", "interrupt") in SD) || !((a, "treadmarks", "interrupt") in SD)) continue
        m++; c = SD[a, "cashmere", "interrupt"] + 0; t = SD[a, "treadmarks", "interrupt"] + 0
        k += (c < t / 2); s = s sprintf("%s%s %s against %s", s == "" ? "" : "; ", a, pct(c), pct(t))
    }
    if (m == 0) row(9, "Cashmere escapes the interrupt bottleneck (this project)", "cashmere, treadmarks", "CANNOT TEST", "needs both protocols'"'"' interrupt sweeps")
    else row(9, "Cashmere escapes the interrupt bottleneck (this project)", "cashmere, treadmarks", most(k, m) ? "CONFIRMED" : "REFUTED", sprintf("under half of TreadMarks'"'"'s in %d of %d: %s", k, m, s))
}'
echo
if [ $hosts = 1 ]; then
    echo "The network is a real link between hosts (see fabric and link above): its own costs"
    echo "(the round trip and bandwidth measured at the start and the end, above) add to the injected"
    echo "ones, and one-sided operations over TCP are executed by the target's CPU, so they pay the"
    echo "injected interrupt too. Processes per node keep the total: split evenly over the hosts, or"
    echo "all on the first."
    echo
fi
if grep -q twolevel "$out/slowdowns.csv" "$page" 2>/dev/null && [ $hosts = 0 ]; then
    echo "The two-level protocol ran on one host, one node: it sends nothing, so only the page size"
    echo "reaches it (its network parameters cannot: no verdict rests on them)."
    echo
fi
echo "## Table 3: the largest slowdown over each range (percent; negative: the worse end is faster)"
echo
params=$(tail -n +2 "$out/slowdowns.csv" | cut -d, -f3 | awk '!s[$0]++' | paste -sd' ')
printf '| app | protocol |'; for p in $params; do printf ' %s |' "$p"; done; echo
printf '|---|---|'; for p in $params; do printf -- '---:|'; done; echo
awk -F, -v P="$params" 'NR > 1 { k = $1 SUBSEP $2; if (!(k in S)) o[++n] = k; S[k] = 1; V[k, $3] = $8 }
    END { np = split(P, p, " "); for (i = 1; i <= n; i++) { split(o[i], f, SUBSEP); printf "| %s | %s |", f[1], f[2]
          for (j = 1; j <= np; j++) printf " %s |", ((o[i], p[j]) in V) ? V[o[i], p[j]] : "-"; print "" } }' "$out/slowdowns.csv"
echo
if [ -s "$out/table.csv" ]; then
    echo "## Table 4: speedups at the achievable and best points, and ideal"
    echo
    echo "Over the sequential program of the same size. Ideal: the best run's time less its slowest"
    echo "process's communication and waiting (fault, lock, barrier, acquire and release timers)."
    echo
    echo "| app | protocol | sequential (s) | achievable | best | ideal |"
    echo "|---|---|---:|---:|---:|---:|"
    awk -F, 'NR > 1 { printf "| %s | %s | %.4f | %s | %s | %s |\n", $1, $2, $3, $7, $8, $9 }' "$out/table.csv"
    echo
fi
echo "## Figures"
echo
for p in overhead occupancy bandwidth interrupt page ppn; do
    [ -s "$out/$p.png" ] || continue
    echo "![$p]($p.png)"
    echo
    echo "\`$p.csv\`: the points drawn (time over the protocol's achievable time at each value)."
    echo
done
