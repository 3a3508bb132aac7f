#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# experiments/params --quick on one app (the CI subset): every run verified, each parameter's
# figure as PNG, SVG and CSV, Tables 3 and 4, the record with the cycle the seed's values were
# scaled by, REPORT.md with a verdict per finding and protocol (labelled not meaningful), the
# two-level protocol on one host in the page-size panel only; a second start resumes from the
# recorded runs; bad options are refused with one line.
. "$top_srcdir/tests/lib.sh"
use_shm
command -v gnuplot >/dev/null 2>&1 || skip "gnuplot is not installed (Debian: gnuplot-nox)"
PARAMS="$top_srcdir/experiments/params"
tmpd=$(mktemp -d)
trap 'rm -rf "$tmpd"' EXIT
export CMRUN CM_APPS_DIR="$top_builddir/apps"

note "the quick study on sor"
expect_ok "$PARAMS" --quick --apps sor --out "$tmpd/q"
dir="$tmpd/q"
# sor: the sequential run; TreadMarks and Cashmere each achievable, best, the two ends of four
# parameters and 16 KiB pages (4 KiB is the achievable point); the two-level protocol achievable
# and 16 KiB pages.
[ "$(tail -n +2 "$dir/runs.csv" | wc -l)" -eq 25 ] || fail "expected 25 runs, got $(tail -n +2 "$dir/runs.csv" | wc -l)"
awk -F, 'NR > 1 && ($11 != "OK" || $10 <= 0) { bad = 1; print "  bad run: " $0 } END { exit bad }' \
    "$dir/runs.csv" || fail "a run did not verify or has no time"
[ "$(count_out '^params: \[[0-9]+/25\] .* left\)$')" -eq 25 ] || fail "not one progress line per run"
expect_out '^params: .*/REPORT.md \(25 verdicts, not meaningful: quick mode'
for p in overhead occupancy bandwidth interrupt page; do
    for e in png svg csv; do [ -s "$dir/$p.$e" ] || fail "no $p.$e"; done
done
grep -q '^sor,twolevel,16,' "$dir/page.csv" || fail "page.csv lacks the two-level protocol"
grep -q '^sor,twolevel,' "$dir/interrupt.csv" && fail "interrupt.csv draws the two-level protocol on one node"
awk -F, '$1 == "sor" && $2 == "cashmere" && $7 > 0 && $8 > 0 && $9 > 0 { f = 1 } END { exit !f }' "$dir/table.csv" ||
    fail "table.csv lacks sor's speedups under Cashmere: $(grep '^sor,cashmere,' "$dir/table.csv")"
grep -Eq '^cycle: [0-9.]+ ns \(' "$dir/record.txt" || fail "record.txt does not say the cycle"
grep -q 'CM_NET_INTERRUPT=' "$dir/record.txt" || fail "record.txt does not say the achievable settings"
grep -q 'one host is one node: it sends nothing' "$dir/REPORT.md" || fail "REPORT.md does not say why the two-level protocol has no network verdicts"
grep -q '^| 9 | Cashmere escapes the interrupt bottleneck' "$dir/REPORT.md" || fail "REPORT.md lacks finding 9"
# The interrupt reached TreadMarks's requests: its runs at 50000 cycles served them at an interrupt.
n=$(stats_total net_interrupts "$dir/runs/sor-treadmarks-interrupt-50000-1.json")
[ "${n:-0}" -gt 0 ] || fail "TreadMarks at 50000 cycles served no request at an injected interrupt"
n=$(stats_total net_interrupts "$dir/runs/sor-treadmarks-interrupt-0-1.json")
[ "${n:-1}" -eq 0 ] || fail "TreadMarks at 0 cycles counted $n injected interrupts"

note "started again: resumes from the recorded runs"
expect_ok "$PARAMS" --quick --apps sor --out "$tmpd/q"
expect_out "resuming: 25 of 25 runs already recorded"

note "across two hosts (--hosts netns): the link in the record, processes per node, the report"
why=$(netns_probe); rc=$?
if [ "$rc" = 1 ]; then
    echo "SKIP (this part): --hosts netns cannot make two hosts here: $why"
elif [ "$rc" != 0 ]; then
    fail "--hosts netns: making the two hosts broke: $why"
else
    (leave_slurm; unset UCX_TLS UCX_NET_DEVICES
     expect_ok "$PARAMS" --quick --hosts netns --apps sor --protocols "treadmarks twolevel" --out "$tmpd/h") ||
        fail "the quick study across hosts failed (above)"
    h="$tmpd/h"
    # sor: the sequential run; each protocol achievable, best, the interrupt's and the
    # bandwidth's two ends, and both processes on the first host (ppn 2; 1 is the split).
    [ "$(tail -n +2 "$h/runs.csv" | wc -l)" -eq 15 ] || fail "expected 15 runs, got $(tail -n +2 "$h/runs.csv" | wc -l)"
    awk -F, 'NR > 1 && $11 != "OK" { bad = 1; print "  bad run: " $0 } END { exit bad }' "$h/runs.csv" ||
        fail "a run across hosts did not verify"
    [ "$(grep -c '^link (\(start\|end\)): round trip' "$h/record.txt")" = 2 ] || fail "the link is not in record.txt"
    grep -q 'tcp/cmveth' "$h/runs/sor-twolevel-achievable-0-1.json" || fail "the split run did not cross the hosts' link"
    grep -q 'tcp/cmveth' "$h/runs/sor-twolevel-ppn-2-1.json" && fail "the one-node run crossed the link"
    for e in png csv; do [ -s "$h/ppn.$e" ] || fail "no ppn.$e"; done
    grep -q '^| 7 | more processes per node help | twolevel | not meaningful (quick; reads ' "$h/REPORT.md" ||
        fail "REPORT.md has no processes-per-node verdict for the two-level protocol"
    grep -q 'a real link between hosts' "$h/REPORT.md" || fail "the report does not say the link was real"
fi

note "bad options"
for bad in "--procs 1" "--apps nosuch" "--protocols nosuch" "--params nosuch" "--params ppn" "--cycle-ns -1" "--reps 0" "--bogus"; do
    # shellcheck disable=SC2086
    expect_fail "$PARAMS" --quick $bad --out "$tmpd/bad"
    [ "$(printf '%s\n' "$out" | grep -c '^params: error: ')" = 1 ] || fail "$bad: not one error line: $out"
done
echo "PASS"
