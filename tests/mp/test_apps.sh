#!/bin/bash
# The application suite at its test size verifies under every implemented
# protocol and variant at 1, 2 and 4 processes over shared memory; cmrun finds
# an app by its bare name in CM_APPS_DIR; a corrupted result fails verification.
. "$top_srcdir/tests/lib.sh"
use_shm
export CM_APPS_DIR="$top_builddir/apps"
QUICK=60 # seconds: the watchdog of a single run

for app in sor sor_l gauss fft mgrid em3d water mp3d appbt; do
    for np in 1 2 4; do
        for setting in "CM_PROTOCOL=cashmere CM_VARIANT=CHSM" "CM_PROTOCOL=cashmere CM_VARIANT=CHSN" \
                       "CM_PROTOCOL=treadmarks"; do
            note "$app, $np processes, $setting"
            expect_ok env $setting "$CMRUN" -n $np $app --size test
            expect_out "^$app: .*, $np processes: parallel section [0-9.]+ s$"
            expect_out "^VERIFY OK$"
        done
    done
    note "$app: a corrupted result is caught"
    run $QUICK "$CMRUN" -n 2 $app --size test --corrupt
    [ "$rc" -ne 0 ] || fail "$app --corrupt exited 0"
    expect_out "^VERIFY FAILED$"
done

note "a bad size flag"
expect_fail "$CMRUN" -n 2 sor --size huge
expect_out "usage: cmrun -n P sor"
echo "PASS"
