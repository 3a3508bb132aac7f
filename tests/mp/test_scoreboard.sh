#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# experiments/scoreboard at test size, two apps: one row per cell with median,
# min and max against the sequential baseline (CM_PROTOCOL=none), a progress
# line per run, what produced the numbers beside them, results outside the
# source tree by default, the figure when gnuplot is there; a run past its
# timeout makes the whole scoreboard fail and is named in its row.
. "$top_srcdir/tests/lib.sh"
use_shm
SB="$top_srcdir/experiments/scoreboard"
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export CMRUN CM_APPS_DIR="$top_builddir/apps"

note "two apps, TreadMarks (fault, scan) and CHSN, 1 and 2 processes, 2 repetitions, default output directory"
expect_ok env HOME="$home" "$SB" --size test --apps "sor water" --settings "treadmarks treadmarks-scan CHSN" \
    --procs "1 2" --reps 2
dir=$(ls -d "$home"/cashmere-results/scoreboard-test-* 2>/dev/null | head -1)
[ -n "$dir" ] || fail "no results under \$HOME/cashmere-results"
csv="$dir/scoreboard.csv"
[ "$(head -1 "$csv")" = "app,setting,procs,median_s,min_s,max_s,verify,runs" ] || fail "CSV header: $(head -1 "$csv")"
[ "$(tail -n +2 "$csv" | wc -l)" -eq 14 ] || fail "expected 14 cells (2 apps x (baseline + 3 x 2))"
awk -F, 'NR > 1 && !($7 == "OK" && $8 == 2 && $5 <= $4 && $4 <= $6 && $5 > 0) { bad = 1; print "  bad row: " $0 }
         END { exit bad }' "$csv" || fail "a cell is not OK with 2 runs and min <= median <= max"
grep -q '^sor,sequential,1,' "$csv" || fail "no sequential baseline row"
expect_out '\[28/28\] water +CHSN +2 procs, run 2: .* left\)$'
[ "$(count_out '^scoreboard: \[[0-9]+/28\]')" -eq 28 ] || fail "not one progress line per run"
grep -q '^sor,treadmarks-scan,2,' "$csv" || fail "no TreadMarks scan row"
grep -q '| TreadMarks scan / best Cashmere |' "$dir/scoreboard.md" || fail "no Table 2 column for TreadMarks scan"
awk -F'|' '/^\| sor \| *\| 2 \|/ { if ($(NF-2) !~ /[0-9]\.[0-9][0-9]/) exit 1; found = 1 } END { exit !found }' \
    "$dir/scoreboard.md" || fail "the 2-process sor row lacks its TreadMarks scan / best Cashmere ratio"
grep -Eq '^\| sor \| [0-9.]+ \[' "$dir/scoreboard.md" || fail "markdown table lacks the baseline"
grep -Eq '\([0-9]+\.[0-9]{2}\) \|' "$dir/scoreboard.md" || fail "markdown table lacks speedups"
grep -q '^commit: ' "$dir/meta.txt" && grep -q '^cpus: ' "$dir/meta.txt" || fail "meta.txt incomplete"
grep -q 'CM_PROTOCOL' "$dir/config.txt" || fail "config.txt lacks the cm_info -c dump"
if command -v gnuplot > /dev/null 2>&1; then
    grep -q '<svg' "$dir/speedup.svg" || fail "no figure"
    # One style per setting in every panel: CHSN dashed (no merge buffer), TreadMarks black.
    [ "$(grep -o "lc rgb '#1f77b4' dt 2 pt 5 lw 1 title 'CHSN'" "$dir/speedup.gp" | wc -l)" -eq 2 ] ||
        fail "CHSN is not drawn in its own style in both panels"
    grep -q "lc rgb '#000000' dt 1 pt 1 lw 1 title 'treadmarks'" "$dir/speedup.gp" || fail "TreadMarks not in black"
else
    expect_out 'no figure: gnuplot is not installed'
fi

note "a run past its timeout fails the scoreboard and is named"
run "$JOB_TIMEOUT" env HOME="$home" "$SB" --size paper --apps gauss --settings treadmarks \
    --procs 2 --reps 1 --timeout 1 --out "$home/t"
[ "$rc" -ne 0 ] || fail "the scoreboard exited 0 with a timed-out run"
grep -q '^gauss,treadmarks,2,,,,TIMEOUT,0$' "$home/t/scoreboard.csv" ||
    fail "the timed-out cell is not marked with no times: $(grep '^gauss,treadmarks,2,' "$home/t/scoreboard.csv")"

note "two hosts (--hosts netns): each cell next to its link limit, the link measured at start and end"
why=$(netns_probe); rc=$?
if [ "$rc" = 1 ]; then
    echo "SKIP (this part): --hosts netns cannot make two hosts here: $why"
elif [ "$rc" != 0 ]; then
    fail "--hosts netns: making the two hosts broke: $why"
else
    # Only the namespaces this run makes count: other fixtures may exist (a concurrent test).
    ns_before=$(ip netns list | awk '/^cmn/ {print $1}' | sort)
    (leave_slurm; unset UCX_TLS UCX_NET_DEVICES
     expect_ok "$SB" --hosts netns --size test --apps sor --settings "treadmarks-scan CHSM" --reps 1 --out "$home/h")
    [ "$(head -1 "$home/h/scoreboard.csv")" = "app,setting,procs,median_s,min_s,max_s,verify,runs,limit_s" ] ||
        fail "two-host CSV header: $(head -1 "$home/h/scoreboard.csv")"
    for s in treadmarks-scan CHSM; do
        grep -qE "^sor,$s,2,[0-9.]+,[0-9.]+,[0-9.]+,OK,1,[0-9.]+$" "$home/h/scoreboard.csv" ||
            fail "no limit for sor $s: $(grep "^sor,$s," "$home/h/scoreboard.csv")"
    done
    [ "$(grep -c '^link (\(start\|end\)): round trip [0-9.]* us, bandwidth [0-9.]* MB/s$' "$home/h/meta.txt")" = 2 ] ||
        fail "the link's two measurements are not in meta.txt: $(grep link "$home/h/meta.txt")"
    grep -q '| sor | .* L [0-9.]* ([0-9.]*x) |' "$home/h/scoreboard.md" || fail "no limit in the table: $(cat "$home/h/scoreboard.md")"
    grep -q 'transports.*tcp/cmveth' "$home/h/runs/sor-CHSM-2-1.json" || fail "the run did not cross the hosts' link"
    ns_left=$(comm -13 <(echo "$ns_before") <(ip netns list | awk '/^cmn/ {print $1}' | sort))
    [ -z "$ns_left" ] || fail "the hosts' namespaces were left behind:" $ns_left
fi
expect_fail "$SB" --hosts onlyone --apps sor
expect_out 'scoreboard: error: --hosts needs two hosts or more \(or netns\)'

note "settings that name their directory form (VARIANT/FORM) run it, whatever CM_DIRECTORY says"
# The last run writes the statistics (the cells run in the order given): CHSN/add's, then CHSN/cas's.
expect_ok env CM_DIRECTORY=mcs CM_STATS="$home/forms.json" "$SB" --size test --apps sor --procs 2 \
    --settings "CHSN/cas CHSN/add" --reps 1 --out "$home/forms"
grep -q '"description": "cashmere CHSN:.*directory: fetching adds' "$home/forms.json" ||
    fail "CHSN/add did not run the add form"
expect_ok env CM_DIRECTORY=add CM_STATS="$home/forms.json" "$SB" --size test --apps sor --procs 2 \
    --settings "CHSN/cas" --reps 1 --out "$home/forms-cas"
grep -q '"description": "cashmere CHSN:.*directory: compare-and-swap word' "$home/forms.json" ||
    fail "CHSN/cas did not run the CAS form"
grep -q '^sor,CHSN/add,2,.*,OK,1$' "$home/forms/scoreboard.csv" || fail "no OK row for CHSN/add"
grep -q '^sor,CHSN/cas,2,.*,OK,1$' "$home/forms/scoreboard.csv" || fail "no OK row for CHSN/cas"
[ -f "$home/forms/runs/sor-CHSN-add-2-1.log" ] || fail "the run's file name does not carry the form"
if command -v gnuplot > /dev/null 2>&1; then
    grep -q "dt 2 pt 5 lw 2.5 title 'CHSN/add'" "$home/forms/speedup.gp" || fail "the add form is not drawn thicker"
fi
expect_fail "$SB" --settings "CHSM/bogus"
expect_out "unknown directory form in setting 'CHSM/bogus'"

note "bad options"
expect_fail "$SB" --reps 0
expect_out 'scoreboard: error: --reps needs a positive number'
expect_fail "$SB" --settings "CHSM bogus"
expect_out "unknown setting 'bogus'"
missing=$("$CM_INFO" --variants | awk '$2 != "available" {print $1; exit}')
if [ -n "$missing" ]; then
    note "a variant of the table this machine cannot run is refused with the reason"
    expect_fail "$SB" --settings "$missing"
    expect_out "scoreboard: error: variant $missing cannot run here: .+"
fi
echo PASS
