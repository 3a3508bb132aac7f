#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The litmus tests over TCP only: every protocol action is a one-sided
# operation that UCX emulates in software at the target.
. "$top_srcdir/tests/lib.sh"
use_tcp lo
for variant in $(available_variants); do
    for np in 2 3 4; do
        for dir in cas mcs; do
            note "TCP, $variant, $np processes, $dir directory"
            expect_ok env CM_VARIANT=$variant CM_DIRECTORY=$dir "$CMRUN" -n $np "$MP/mp_litmus" \
                all --iters 20 --seed $np
            expect_out "^litmus all: OK$"
        done
    done
done
note "TCP: software forwarding batched per home by default (CHS*), as stored, at the release"
for fwd in "" store release; do
    case $fwd in
        store)   want='as stored \(CM_FORWARD=store\)' ;;
        release) want='at the release, .*\(CM_FORWARD=release\)' ;;
        *)       want='as stored, batched per home across the network \(CM_FORWARD=batch\)' ;;
    esac
    expect_ok env ${fwd:+CM_FORWARD=$fwd} CM_VARIANT=CHSN CM_STATS=table "$CMRUN" -n 3 "$MP/mp_litmus" \
        all --iters 20 --seed 5
    expect_out "^litmus all: OK$"
    expect_out "CHSN: .*forwarded $want"
done
note "TCP, unsafe pages and the MCS directory"
expect_ok env CM_UNSAFE_THRESHOLD=0 CM_DIRECTORY=mcs "$CMRUN" -n 4 "$MP/mp_litmus" all --iters 20
expect_out "^litmus all: OK$"
echo "PASS"
