#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# cm_bench runs and prints every figure next to its reference: UCX's own figure for the
# one-sided operations, the floor it is built from for the protocol's (JSON and table).
. "$top_srcdir/tests/lib.sh"

# check_json FLOORS: FLOORS rows carry the floor they are built from (10 where a progress
# thread serves the target, which adds the round trip while the target computes).
check_json() {
    expect_out '^  "schema": "cashmere-bench/1",$'
    expect_out '"tool": "cm_bench"'
    expect_out '^  "library": \{"version": "[0-9.]+", "commit": "[^"]+"\},$'
    expect_out '^  "job": \{"nprocs": 2, "nodes": 1, "procs_per_node": 2, "page_size": [0-9]+\},$'
    for op in "put \+ flush" '"get"' "atomic swap" "atomic compare-and-swap" "atomic fetch-and-add" \
              "get bandwidth" "SIGSEGV \+ mprotect \(handler\)" "mprotect pair" \
              "page fault, remote home, read\"" "page fault, remote home, read, frame cold" \
              "store, shared page \(CHSM doubling\)" "lock acquire\+release, remote, free" \
              "directory update, CAS word" "directory update, add form \\(join, leave\\)" "directory update, MCS lock" \
              "page fault, first touch, home moves here" "first touch, waits on the network each" \
              "lock hand-off, all processes contending" "message round trip \\(null\\)" '"barrier, 2 processes"'; do
        expect_out "$op"
    done
    # latency and bandwidth rows carry a positive UCX figure and a ratio
    [ "$(count_out '"ref": [0-9]+\.[0-9]+, "ref_name": "ucx", "ratio": [0-9]+\.[0-9]+')" -eq 12 ] ||
        fail "expected 12 rows with ucx figures"
    # protocol rows carry the floor they are built from
    [ "$(count_out '"ref": [0-9]+\.[0-9]+, "ref_name": "[^u"][^"]*", "ratio": [0-9]+\.[0-9]+')" -eq "$1" ] ||
        fail "expected $1 protocol and message rows with floors"
    # (a count of waits may be zero: where homes are mapped a first touch waits for nothing)
    printf '%s\n' "$out" | grep -v '"unit": "waits"' | grep -q '"cm": 0\.000000,' && fail "a figure of zero"
    return 0
}

note "shared memory, JSON"
use_shm
expect_ok "$CMRUN" -n 2 "$CM_BENCH" --json --batches 3
check_json 12
expect_out '"direct_mapped": true'
expect_out '^  "protocol": "cashmere",$'
expect_out '^  "variant": "CHSM",$'
expect_out '^  "mechanisms": \{"fill": "page", "write": "hooks", "merge": "buffer", "build": "stores", "fabric": "any"\},$'

note "TCP, JSON"
use_tcp lo
expect_ok "$CMRUN" -n 2 "$CM_BENCH" --json --batches 1
check_json 13
expect_out '"name": "first touch, waits on the network each", "size": 0, "unit": "waits", "cm": [1-9][0-9.]*, "ref": 1\.0+, "ref_name": "one round trip"'
expect_out '"message round trip, target computing", "size": 8, "unit": "us", "cm": [0-9]+\.[0-9]+, "ref": [0-9.]+, "ref_name": "target waiting"'
expect_out '"direct_mapped": false, "progress_thread": true'

note "TCP, --link: the scoreboard's link probe, only the rows it reads (and their reference)"
expect_ok "$CMRUN" -n 2 "$CM_BENCH" --json --link --batches 1
expect_out '"name": "message round trip \(null\)", "size": 8, "unit": "us", "cm": [0-9]+\.[0-9]+'
expect_out '"name": "get bandwidth \(16 in flight\)", "size": 1048576, "unit": "MB/s", "cm": [0-9]+\.[0-9]+'
[ "$(count_out '"name": ')" -eq 5 ] || fail "--link printed $(count_out '"name": ') rows, not 5"

note "table, 4 ranks, with injected latency"
use_shm
expect_ok env CM_NET_LATENCY=20us "$CMRUN" -n 4 "$CM_BENCH" --batches 1
expect_out "^# cm_bench .*, protocol cashmere, variant CHSM$"
expect_out "^# delay injection: latency 20000 ns"
expect_out "^operation +size +measured +reference +ratio +reference is"
expect_out "^barrier, 4 processes +- +[0-9.]+ us +[0-9.]+ us +[0-9.]+ +log2"
expect_out "^get +8 B +[0-9.]+ us +[0-9.]+ us +[0-9.]+ +ucx"
# The event trace's floors (docs/TRACE.md "Perturbation"), off here.
expect_out "^trace event \(CM_TRACE off\) +- +[0-9.]+ ns"
expect_out "^statistics phase \(CM_TRACE off\) +- +[0-9.]+ ns"

note "homes fixed (CM_FIRST_TOUCH=no): the remote faults use pages homed at the target"
use_tcp lo
expect_ok env CM_FIRST_TOUCH=no "$CMRUN" -n 3 "$CM_BENCH" --batches 1
expect_out "^page fault, remote home, read +4 KiB +[0-9.]+ us"
expect_out "CM_FIRST_TOUCH=no: homes stay where they are: no first-touch rows"
use_shm

note "software doubling without merging (CHSN)"
expect_ok env CM_VARIANT=CHSN "$CMRUN" -n 2 "$CM_BENCH" --batches 1
expect_out "^store, shared page \(CHSN doubling\) +8 B +[0-9.]+ ns +[0-9.]+ ns"

# runs_here V: the variant runs on this machine; else says so (no rows to check).
runs_here() {
    "$CM_INFO" --variants | grep -q "^$1 available" && return 0
    echo "($1 does not run here: no row to check)"
    return 1
}

for v in CHHN NHHN; do
    runs_here $v || continue
    note "$v: how long until the home sees a store, next to two puts"
    expect_ok env CM_VARIANT=$v "$CMRUN" -n 2 "$CM_BENCH" --batches 1
    expect_out "^store, shared page \\($v, (offload|mapped) writes\\) +8 B +[0-9.]+ ns"
    expect_out "^store seen at the home, round trip \\((offload|mapped) writes\\) +8 B +[0-9.]+ us +[0-9.]+ us +[0-9.]+ +2 x \\(put \\+ flush\\)"
done

for v in NSSN NSHN; do
    runs_here $v || continue
    note "$v: software line fills, a line miss next to a get of a line (lines only), the rest of a page after a second miss next to a get of a page (the default)"
    expect_ok env CM_VARIANT=$v CM_LINE_PAGE_FILL=0 "$CMRUN" -n 2 "$CM_BENCH" --batches 1
    expect_out "^line miss, remote home, read +64 B +[0-9.]+ us +[0-9.]+ us +[0-9.]+ +get of a line"
    expect_ok env CM_VARIANT=$v "$CMRUN" -n 2 "$CM_BENCH" --batches 1
    expect_out "^second line miss: the rest of the page \(CM_LINE_PAGE_FILL=2\) +4 KiB +[0-9.]+ us +[0-9.]+ us +[0-9.]+ +get of a page"
    expect_out "^page join \+ line fill, remote home +64 B +[0-9.]+ us +[0-9.]+ us +[0-9.]+ +compare-and-swap \+ get"
    expect_out "^page join \+ line fill, remote home, frame cold +64 B +[0-9.]+ us +[0-9.]+ us +[0-9.]+ +compare-and-swap \+ mprotect \+ get"
    printf '%s\n' "$out" | grep -q "^page fault, remote home" && fail "$v: a page-fault row under line fills"
    [ $v = NSSN ] || expect_out "^store seen at the home, round trip \(offload writes\) +8 B"
done
expect_ok env CM_VARIANT=NSSN CM_LINE_SIZE=256 CM_LINE_PAGE_FILL=0 "$CMRUN" -n 2 "$CM_BENCH" --batches 1
expect_out "^line miss, remote home, read +256 B +[0-9.]+ us +[0-9.]+ us"

note "TreadMarks: the thesis's basic costs next to the message round trip"
expect_ok env CM_PROTOCOL=treadmarks "$CMRUN" -n 3 "$CM_BENCH" --json --batches 1
expect_out '^  "protocol": "treadmarks",$'
expect_out '^  "variant": null,$'
expect_out '^  "mechanisms": null,$'
for op in "message round trip \\(null\\)" "lock acquire, 2 messages \\(manager has it\\)" \
          "lock acquire, 3 messages \\(forwarded\\)" "page fault, one diff \\(2 messages\\)" \
          "barrier, 3 processes" "message round trip, target computing"; do
    expect_out "$op\", \"size\": [0-9]+, \"unit\": \"us\", \"cm\": [0-9]+\\.[0-9]+, \"ref\": [0-9.]+"
done

note "TreadMarks: the table names the protocol, and no variant"
expect_ok env CM_PROTOCOL=treadmarks "$CMRUN" -n 2 "$CM_BENCH" --batches 1
expect_out "^# cm_bench .*, protocol treadmarks$"
[ "$(count_out '^# cm_bench .*variant')" -eq 0 ] || fail "a variant named under TreadMarks"

note "--help, --version; a bad option is one line and exit 2"
expect_version "$CM_BENCH" cm_bench
expect_ok "$CM_BENCH" --help
expect_out "^usage: cmrun -n P cm_bench \[--json\] \[--link\] \[--batches N\] \[--target RANK\]$"
expect_out "^  --version "
expect_ok "$CMRUN" -n 2 "$CM_BENCH" --help
[ "$(count_out '^usage: ')" -eq 1 ] || fail "the usage printed more than once under cmrun"
for bad in "--bogus" "--batches" "--batches 0" "--batches x" "--target -1" "--json extra"; do
    # shellcheck disable=SC2086
    expect_usage_error "$JOB_TIMEOUT" "^cm_bench: " "$CM_BENCH" $bad
done
run "$JOB_TIMEOUT" "$CMRUN" -n 2 "$CM_BENCH" --bogus
[ "$rc" -ne 0 ] || fail "cmrun cm_bench --bogus exited 0"
[ "$(count_out "^cm_bench: unknown option '--bogus' \(see cm_bench --help\)$")" -eq 1 ] ||
    fail "not one line from the ranks"
echo "PASS"
