#!/bin/bash
# The application suite at its test size verifies under both protocols: every
# variant of the table this machine can run, TreadMarks with both write detections at 1, 2 and 4
# processes over shared memory; cmrun finds
# an app by its bare name in CM_APPS_DIR; a corrupted result fails verification.
# The sequential baseline (CM_PROTOCOL=none) verifies at 1 process, plain binary
# and hooked, and refuses 2 processes.
. "$top_srcdir/tests/lib.sh"
use_shm
export CM_APPS_DIR="$top_builddir/apps"
QUICK=60 # seconds: the watchdog of a single run

# The matrix: every variant of the table this machine can run, and TreadMarks.
settings=("CM_PROTOCOL=treadmarks" "CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=scan")
for v in $(available_variants); do
    settings+=("CM_PROTOCOL=cashmere CM_VARIANT=$v")
done
for app in sor sor_l gauss fft mgrid em3d water mp3d appbt; do
    for np in 1 2 4; do
        for setting in "${settings[@]}"; do
            note "$app, $np processes, $setting"
            expect_ok env $setting "$CMRUN" -n $np $app --size test
            expect_out "^$app: .*, $np processes: parallel section [0-9.]+ s$"
            expect_out "^VERIFY OK$"
        done
    done
    note "$app, the sequential baseline (CM_PROTOCOL=none)"
    for bin in $app "$CM_APPS_DIR/$app.hooks"; do
        expect_ok env CM_PROTOCOL=none "$CMRUN" -n 1 $bin --size test
        expect_out "^$app: .*, 1 processes: parallel section [0-9.]+ s$"
        expect_out "^VERIFY OK$"
    done
    note "$app: a corrupted result is caught"
    run $QUICK "$CMRUN" -n 2 $app --size test --corrupt
    [ "$rc" -ne 0 ] || fail "$app --corrupt exited 0"
    expect_out "^VERIFY FAILED$"
done

note "CM_PROTOCOL=none refuses more than one process, before the job starts"
expect_fail env CM_PROTOCOL=none "$CMRUN" -n 2 sor --size test
expect_out "CM_PROTOCOL=none runs at most 1"
[ "$(count_out 'error:')" -eq 1 ] || fail "not one error line"

note "a bad size flag"
expect_fail "$CMRUN" -n 2 sor --size huge
expect_out "usage: cmrun -n P sor"
echo "PASS"
