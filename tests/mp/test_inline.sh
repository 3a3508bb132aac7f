#!/bin/bash
# Inline access checks (cmcc's CMCC_CHECKS=inline, src/cm_shadow.c): every
# litmus case under both software-doubling variants and both directory forms at
# 3 and 4 processes, over shared memory and TCP, with a binary whose stores
# call the hook only where the shadow is armed; pages homed here stop calling
# it once their write transition is pending (the count of doubled stores falls
# below the callback build's in the same run); the store check still catches
# every unseen store, which needs every page armed.
. "$top_srcdir/tests/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stat() { sed -n 's/.*"total": {.*"'"$1"'": \([0-9]*\).*/\1/p' "$2"; }

for transport in shm tcp; do
    if [ $transport = shm ]; then use_shm; else use_tcp; fi
    for variant in CHSM CHSN; do
        for dir in cas mcs; do
            for np in 3 4; do
                note "$transport, $variant, $dir directory, $np processes, inline checks"
                expect_ok env CM_VARIANT=$variant CM_DIRECTORY=$dir "$CMRUN" -n $np \
                    "$MP/mp_litmus.inline" all --iters 20 --seed $np
                expect_out "^litmus all: OK$"
            done
        done
    done
done

use_shm
note "the inline build calls the hook for fewer stores than the callback build (same cases, same seed)"
expect_ok env CM_STATS="$tmp/inl.json" "$CMRUN" -n 2 "$MP/mp_litmus.inline" all --iters 20 --seed 7
expect_ok env CM_STATS="$tmp/cb.json" "$CMRUN" -n 2 "$MP/mp_litmus.hooks" all --iters 20 --seed 7
inl=$(stat doubled_stores "$tmp/inl.json") cb=$(stat doubled_stores "$tmp/cb.json")
note "stores seen by the hook: inline $inl, callback $cb"
[ -n "$inl" ] && [ -n "$cb" ] && [ "$inl" -gt 0 ] && [ "$inl" -lt "$cb" ] ||
    fail "inline checks did not skip the stores to pages homed here"

note "CM_CHECK_STORES with inline checks: every unseen store is still caught"
for mode in fault opened syscall home; do
    expect_fail env CM_CHECK_STORES=yes "$CMRUN" -n 2 "$MP/mp_unseen.inline" $mode
    expect_out 'CM_CHECK_STORES: '
done
expect_ok env CM_CHECK_STORES=yes "$CMRUN" -n 2 "$MP/mp_unseen.inline" ok
expect_out 'mp_unseen ok: rank 0 sees 42$'
echo PASS
