#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Inline access checks (the default build, src/access/cm_shadow.c) against the hook call
# per store (cmcc's CMCC_CHECKS=callback), which stays supported: every litmus
# case with the callback build under both software-doubling variants and both
# directory forms at 3 and 4 processes, over shared memory and TCP (the inline
# build runs them in test_litmus*.sh and test_stress.sh); and pages homed here
# stop calling the hook once their write transition is pending: the count of
# stores the hook sees falls below the callback build's in the same cases.
. "$top_srcdir/tests/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for transport in shm tcp; do
    if [ $transport = shm ]; then use_shm; else use_tcp; fi
    for variant in CHSM CHSN; do
        for dir in cas mcs; do
            for np in 3 4; do
                note "$transport, $variant, $dir directory, $np processes, a hook call per store"
                expect_ok env CM_VARIANT=$variant CM_DIRECTORY=$dir "$CMRUN" -n $np \
                    "$MP/mp_litmus.callback" all --iters 20 --seed $np
                expect_out "^litmus all: OK$"
            done
        done
    done
done

use_shm
# Without churn: it rewrites for 3 ms a round, so its store count follows the clock and cannot be
# compared between two runs; every other case stores a fixed number of times.
note "the inline build calls the hook for fewer stores than the callback build (same cases but churn, same seed)"
expect_ok env CM_STATS="$tmp/inl.json" "$CMRUN" -n 2 "$MP/mp_litmus.hooks" all --iters 20 --seed 7 --except churn
expect_ok env CM_STATS="$tmp/cb.json" "$CMRUN" -n 2 "$MP/mp_litmus.callback" all --iters 20 --seed 7 --except churn
inl=$(stats_total doubled_stores "$tmp/inl.json") cb=$(stats_total doubled_stores "$tmp/cb.json")
note "stores seen by the hook: inline $inl, callback $cb"
[ -n "$inl" ] && [ -n "$cb" ] && [ "$inl" -gt 0 ] && [ "$inl" -lt "$cb" ] ||
    fail "inline checks did not skip the stores to pages homed here"
