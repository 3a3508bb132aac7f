#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The application suite at its test size verifies under both protocols: every
# variant of the table this machine can run and TreadMarks with both write
# detections, over shared memory; cmrun finds an app by its bare name in
# CM_APPS_DIR; a corrupted result fails verification. The sequential baseline
# (CM_PROTOCOL=none) verifies at 1 process (plain, hooked and access builds), and refuses 2.
#
# The matrix (CMT_APPS_MATRIX): rotate (the default) runs every app under every setting at 2
# processes, and a third of the (app, setting) pairs, a different third each time (printed;
# CMT_APPS_ROTATE=0..2 repeats one), also at 1 and 4: three make checks cover every triple.
# full: every app under every setting at 1, 2 and 4 processes. pairs, a quicker one for
# development: each app under each setting once, at 2 or 4 processes in turn (every setting
# and every app meets both counts), and at 1 process under the default variant and TreadMarks.
. "$top_srcdir/tests/lib.sh"
use_shm
export CM_APPS_DIR="$top_builddir/apps"
QUICK=60 # seconds: the watchdog of a single run

# Each setting, and how the result line names what ran under it.
settings=("CM_PROTOCOL=treadmarks" "CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=scan")
ran=("protocol treadmarks" "protocol treadmarks")
for v in $(available_variants); do
    settings+=("CM_PROTOCOL=cashmere CM_VARIANT=$v")
    ran+=("protocol cashmere variant $v")
done
case "${CMT_APPS_MATRIX:=rotate}" in
    pairs|full) ;;
    rotate) rot=${CMT_APPS_ROTATE:-$((RANDOM % 3))}
            [[ "$rot" =~ ^[0-2]$ ]] || fail "CMT_APPS_ROTATE='$rot': 0, 1 or 2"
            echo "matrix: every pair at 2 processes, third $rot of the pairs also at 1 and 4" \
                 "(CMT_APPS_ROTATE=$rot repeats it; CMT_APPS_MATRIX=full runs every triple)" ;;
    *) fail "CMT_APPS_MATRIX='$CMT_APPS_MATRIX': rotate, pairs or full" ;;
esac

# The process counts of (app a, setting s) in the matrix.
counts() {
    if [ "$CMT_APPS_MATRIX" = full ]; then
        echo 1 2 4
        return
    fi
    if [ "$CMT_APPS_MATRIX" = rotate ]; then
        if [ $(( ($1 * ${#settings[@]} + $2) % 3 )) = "$rot" ]; then echo 1 2 4; else echo 2; fi
        return
    fi
    local n=$(( ($1 + $2) % 2 ? 4 : 2 ))
    case "${settings[$2]}" in
        "CM_PROTOCOL=treadmarks"|"CM_PROTOCOL=cashmere CM_VARIANT=CHSM") echo 1 $n ;;
        *) echo $n ;;
    esac
}

runs=0
a=0
for app in sor sor_l gauss fft mgrid em3d water mp3d appbt; do
    for s in "${!settings[@]}"; do
        setting=${settings[$s]}
        for np in $(counts $a $s); do
            note "$app, $np processes, $setting"
            expect_ok env $setting "$CMRUN" -n $np $app --size test
            expect_out "^$app: .*, $np processes: parallel section [0-9.]+ s, ${ran[$s]}$"
            expect_out "^VERIFY OK$"
            runs=$((runs + 1))
        done
    done
    a=$((a + 1))
    note "$app, the sequential baseline (CM_PROTOCOL=none)"
    for bin in $app "$CM_APPS_DIR/$app.hooks" "$CM_APPS_DIR/$app.access"; do
        expect_ok env CM_PROTOCOL=none "$CMRUN" -n 1 $bin --size test
        expect_out "^$app: .*, 1 processes: parallel section [0-9.]+ s, protocol none$"
        expect_out "^VERIFY OK$"
    done
    note "$app: a corrupted result is caught"
    run $QUICK "$CMRUN" -n 2 $app --size test --corrupt
    [ "$rc" -ne 0 ] || fail "$app --corrupt exited 0"
    expect_out "^VERIFY FAILED$"
done

echo "($runs parallel runs: ${#settings[@]} settings, matrix $CMT_APPS_MATRIX)"

note "CM_PROTOCOL=none refuses more than one process, before the job starts"
expect_fail env CM_PROTOCOL=none "$CMRUN" -n 2 sor --size test
expect_out "CM_PROTOCOL=none runs at most 1"
[ "$(count_out 'error:')" -eq 1 ] || fail "not one error line"

note "a bad size flag"
expect_fail "$CMRUN" -n 2 sor --size huge
expect_out "usage: cmrun -n P sor"
echo "PASS"
