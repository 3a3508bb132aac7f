#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# experiments/params's tables, figures and verdicts on a fixed set of runs (tests/experiments/
# params_runs.csv: sor and water under TreadMarks and Cashmere, every parameter's two ends, the
# best point, one failed run), so that a broken table, plot or verdict fails here rather than in a
# study: the seed's slowdowns (Table 3), the speedups (Table 4), each sweep normalized to the
# achievable point, every figure as PNG and SVG, a verdict per finding and protocol (each known
# from the fixture), quick mode's label, and a figure script that refuses a CSV it cannot draw.
. "$top_srcdir/tests/lib.sh"
lib="$top_srcdir/experiments/lib"
runs="$top_srcdir/tests/experiments/params_runs.csv"
command -v gnuplot >/dev/null 2>&1 || skip "gnuplot is not installed (Debian: gnuplot-nox)"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
ach="overhead=600 occupancy=1000 bandwidth=0.5 interrupt=500 page=4 ppn=0"

note "tables from the fixed runs"
"$lib/params_tables.sh" "$runs" "$d" "$ach" || fail "params_tables.sh failed"
# Interrupt: 0.5 s at 0 cycles, 3.0 s at 50000: 1 - 0.5 / 3 = 83.3 %.
grep -qx 'sor,treadmarks,interrupt,0,50000,0.500000,3.000000,83.3' "$d/slowdowns.csv" ||
    fail "slowdowns.csv: sor's TreadMarks interrupt row: $(grep '^sor,treadmarks,interrupt,' "$d/slowdowns.csv")"
# Bandwidth: the better end is the high one: 1 - 0.9 / 1.6 = 43.75 %.
grep -qx 'sor,treadmarks,bandwidth,0.25,2,1.600000,0.900000,43.8' "$d/slowdowns.csv" ||
    fail "slowdowns.csv: bandwidth's better end is not its high value: $(grep '^sor,treadmarks,bandwidth,' "$d/slowdowns.csv")"
# The achievable point stands in each sweep at its own value (interrupt 500), normalized to 1.
grep -qx 'water,cashmere,500,1.0000,1.000000,1.000000' "$d/interrupt.csv" ||
    fail "interrupt.csv lacks the achievable point at 500 cycles"
grep -qx 'water,cashmere,10000,2.5000,2.500000,2.500000' "$d/occupancy.csv" || fail "occupancy.csv: not normalized"
grep -qx 'water,cashmere,page,64,1,FAILED,,,' "$d/cells.csv" || fail "the failed cell is not marked FAILED"
grep -q '^water,cashmere,64,' "$d/page.csv" && fail "page.csv draws the failed cell"
# Table 4: speedups over the sequential 2 s; ideal from the best run's compute time (0.4 s).
grep -qx 'sor,cashmere,2.000000,1.000000,0.500000,0.400000,2.00,4.00,5.00' "$d/table.csv" ||
    fail "table.csv: sor under Cashmere: $(grep '^sor,cashmere,' "$d/table.csv")"

note "every figure, PNG and SVG"
for p in overhead occupancy bandwidth interrupt page; do
    "$lib/params_plot.sh" "$d/$p.csv" "$d/$p" || fail "params_plot.sh $p failed"
    head -c 8 "$d/$p.png" | grep -q PNG || fail "$p.png is not a PNG"
    grep -q '<svg' "$d/$p.svg" || fail "$p.svg is not an SVG"
    for s in treadmarks cashmere; do grep -q ">$s<" "$d/$p.svg" || fail "$p.svg has no line '$s'"; done
done
printf 'a,b\n1,2\n' > "$d/bad.csv"
"$lib/params_plot.sh" "$d/bad.csv" "$d/bad" 2> "$d/err" && fail "params_plot.sh drew a CSV without a sweep's columns"
grep -q "not a sweep's columns" "$d/err" || fail "params_plot.sh did not say why: $(cat "$d/err")"

note "a verdict per finding and protocol, each the one the fixture implies"
printf 'mode: full; size: paper; processes: 2; repetitions: 1\nfabric: one node\n' > "$d/record.txt"
"$lib/params_report.sh" "$d" > "$d/REPORT.md" || fail "params_report.sh failed"
got=$(awk -F' [|] ' '/^\| [0-9]/ { sub(/^\| /, "", $1); printf "%s%s %s %s", (n++ ? "|" : ""), $1, $3, $4 }' "$d/REPORT.md")
want="1 treadmarks CONFIRMED|2 treadmarks CONFIRMED|3 treadmarks CONFIRMED|4 treadmarks CONFIRMED"
want+="|5 treadmarks CONFIRMED|6 treadmarks CONFIRMED|7 treadmarks CANNOT TEST|8 treadmarks CONFIRMED"
want+="|1 cashmere REFUTED|2 cashmere REFUTED|3 cashmere REFUTED|4 cashmere REFUTED|5 cashmere REFUTED"
want+="|6 cashmere REFUTED|7 cashmere CANNOT TEST|8 cashmere REFUTED|9 cashmere, treadmarks CONFIRMED"
[ "$got" = "$want" ] || fail "verdicts: $got (expected $want)"
grep -q 'largest in 2 of 2 apps: sor 83 % (next: bandwidth 44 %)' "$d/REPORT.md" || fail "finding 1 lacks its numbers"
grep -q 'under half of TreadMarks.s in 2 of 2: sor 2 % against 83 %' "$d/REPORT.md" || fail "finding 9 lacks its numbers"
grep -q 'one host: nodes are hosts' "$d/REPORT.md" || fail "finding 7 does not say why it cannot be tested"
printf 'mode: quick; size: test; processes: 2; repetitions: 1\n' > "$d/record.txt"
"$lib/params_report.sh" "$d" > "$d/REPORT.md" || fail "params_report.sh failed (quick)"
grep -q '^| 1 | interrupt cost is the dominant parameter | treadmarks | not meaningful (quick; reads CONFIRMED) |' \
    "$d/REPORT.md" || fail "quick mode's verdicts are not labelled not meaningful"
echo "PASS"
