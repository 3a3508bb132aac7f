#!/bin/bash
# cm_bench runs and prints every figure next to UCX's own (JSON and table).
. "$top_srcdir/tests/lib.sh"

check_json() {
    expect_out '"tool": "cm_bench"'
    for op in "put \+ flush" '"get"' "atomic swap" "atomic compare-and-swap" "atomic fetch-and-add" \
              "get bandwidth" "SIGSEGV \+ mprotect pair" "mprotect pair"; do
        expect_out "$op"
    done
    # latency and bandwidth rows carry a positive UCX figure and a ratio
    [ "$(count_out '"ucx": [0-9]+\.[0-9]+, "ratio": [0-9]+\.[0-9]+')" -eq 12 ] || fail "expected 12 rows with ucx figures"
    printf '%s\n' "$out" | grep -q '"cm": 0\.0000' && fail "a figure of zero"
    return 0
}

note "shared memory, JSON"
use_shm
expect_ok "$CMRUN" -n 2 "$CM_BENCH" --json --batches 3
check_json
expect_out '"direct_mapped": true'

note "TCP, JSON"
use_tcp lo
expect_ok "$CMRUN" -n 2 "$CM_BENCH" --json --batches 1
check_json
expect_out '"direct_mapped": false, "progress_thread": true'

note "table, 4 ranks, with injected latency"
use_shm
expect_ok env CM_NET_LATENCY=20us "$CMRUN" -n 4 "$CM_BENCH" --batches 1
expect_out "^# delay injection: latency 20000 ns"
expect_out "^operation +size +cm_rma +ucx +cm/ucx"
expect_out "^get +8 B +[0-9.]+ us +[0-9.]+ us"

note "bad option"
expect_fail "$CMRUN" -n 2 "$CM_BENCH" --bogus
echo "PASS"
