#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Programs written for TreadMarks (Tmk.h) and for the PARMACS macros (SPLASH-2
# and SPLASH-3 style, through cashmere.m4) run unmodified and check their own
# results, under every variant this machine runs and TreadMarks with both write
# detections, at 2 and 4 processes, and at 1 under CHSM, NSSN and TreadMarks.
# Their waits (PAUSE flags, condition variables, Tmk_lock_cond_wait) read
# shared words the runtime reads itself: under the software line fills of the
# NS variants those reads hung until the runtime made them current. The waits
# sleep until a process that changed the word wakes them (locks/cm_sleep.h).
# Misuse (a worker count that is not the job's) is a clear error on every rank.
. "$top_srcdir/tests/lib.sh"
use_shm
C="$top_builddir/tests/compat"
QUICK=60
input=$(mktemp)
trap 'rm -f "$input" "$input.json"' EXIT

settings=("CM_PROTOCOL=treadmarks" "CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=scan")
for v in $(available_variants); do
    settings+=("CM_PROTOCOL=cashmere CM_VARIANT=$v")
done

for np in 1 2 4; do
    for setting in "${settings[@]}"; do
        if [ $np = 1 ]; then
            case "$setting" in
                *=treadmarks|*=CHSM|*=NSSN) ;;
                *) continue ;;
            esac
        fi
        note "$np processes, $setting"
        expect_ok env $setting "$CMRUN" -n $np "$C/tmk_jacobi" 12
        expect_out "^tmk_jacobi: $np processes, 12 iterations: OK$"
        expect_ok env $setting "$CMRUN" -n $np "$C/tmk_queue" 40
        expect_out "^tmk_queue: $np processes, $((40 * np)) nodes listed: OK$"

        echo "100000 $np" > "$input"
        expect_ok env $setting "$CMRUN" -n $np --stdin "$input" "$C/p_sum"
        expect_out "^p_sum: sum 49950000 \(expected 49950000\), initcount 1, ids $np, [0-9]+ us: OK$"
        # Output before CREATE and after WAIT_FOR_END comes from process 0 only.
        [ "$(count_out '^p_sum: N = 100000')" = 1 ] || fail "p_sum printed its header more than once"
        [ "$(count_out '^p_sum: sum')" = 1 ] || fail "p_sum printed its result more than once"
        expect_ok env $setting "$CMRUN" -n $np "$C/p_locks" $np
        expect_out "^p_locks: $((4096 * np)) increments under 65536 locks \(expected $((4096 * np))\): OK$"
        expect_ok env $setting "$CMRUN" -n $np "$C/p_sync" $np
        expect_out "^p_sync: relay $((np * (np - 1) / 2)) \(expected $((np * (np - 1) / 2))\), 0 bad tasks/queue: OK$"
    done
done

# Long waits sleep until woken: two 0.3 s waits (a PAUSE flag, a condition) cost a waiter a
# few lock acquires, not one per poll (over a million when the layers polled under the lock).
for np in 2 4; do
    for setting in "CM_PROTOCOL=treadmarks" "CM_PROTOCOL=cashmere CM_VARIANT=CHSM" \
                   "CM_PROTOCOL=cashmere CM_VARIANT=NSSN"; do
        note "$np processes, $setting: waits that sleep"
        expect_ok env $setting CM_STATS="$input.json" "$CMRUN" -n $np "$C/p_sync" $np sleep
        expect_out "^p_sync: $((np - 1)) waiters woken, 0 not: OK$"
        expect_slept "$input.json" $((20 * np))
    done
done

note "a SPLASH-3 program told P=2 on 4 processes"
expect_fail "$CMRUN" -n 4 "$C/p_locks" 2
expect_out "CREATE\(fn, 2\): the job has 4 processes"
note "a SPLASH-2 program told P=3 on 2 processes"
echo "1000 3" > "$input"
expect_fail "$CMRUN" -n 2 --stdin "$input" "$C/p_sum"
expect_out "BARRIER\(bar, 3\): the job has 2 processes|CREATE was called 2 times"
note "Tmk_distribute of a stack variable"
expect_fail "$CMRUN" -n 2 "$C/tmk_jacobi" stack
expect_out "Tmk_distribute\(0x[0-9a-f]+, 4\): not a global variable"
echo "PASS"
