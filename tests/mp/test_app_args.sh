#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The applications' command lines: an unknown or incomplete flag is a usage error
# (printed once, exit 2, nothing run), --help lists every flag the app takes.
. "$top_srcdir/tests/lib.sh"
use_shm
export CM_APPS_DIR="$top_builddir/apps"
# A usage error ends every rank with status 2; mpirun then waits odls_base_sigkill_timeout
# (1 s) between its SIGTERM and SIGKILL of ranks already gone. Nothing here needs the wait.
export OMPI_MCA_odls_base_sigkill_timeout=0
QUICK=30

# Every app's size flags (the app_long calls in apps/*.c).
declare -A flags=(
    [sor]="--n --iters" [sor_l]="--n --iters" [gauss]="--n" [fft]="--n"
    [mgrid]="--nx --ny --nz --iters --relax" [em3d]="--nodes --degree --iters --remote"
    [water]="--mols --steps" [mp3d]="--particles --steps --cell" [appbt]="--n --steps"
)

for app in sor sor_l gauss fft mgrid em3d water mp3d appbt; do
    note "$app --help: the usage, every flag, on stdout, and nothing run"
    run $QUICK "$CMRUN" -n 2 $app --size test --help
    [ "$rc" -eq 0 ] || fail "$app --help: exit status $rc"
    [ "$(count_out "^usage: cmrun -n P $app ")" -eq 1 ] || fail "$app --help: not one usage line"
    for f in --size --corrupt ${flags[$app]}; do
        expect_out "\\[$f( [^]]*)?\\]"
    done
    [ "$(count_out 'VERIFY')" -eq 0 ] || fail "$app --help ran the app"

    # The parsing is app.h's, shared: every case on one app, the main ones on all.
    bads=("--bogus" "--size" "${flags[$app]%% *}")
    if [ $app = sor ]; then
        bads+=("-x" "extra" "--size huge" "--size test --size" "--n 0")
        run $QUICK "$CMRUN" -n 2 $app -h
        [ "$rc" -eq 0 ] && [ "$(count_out "^usage: cmrun -n P $app ")" -eq 1 ] || fail "$app -h"
    fi
    for bad in "${bads[@]}"; do
        note "$app $bad: refused with one usage line"
        run $QUICK "$CMRUN" -n 2 $app --size test $bad
        [ "$rc" -eq 2 ] || fail "$app $bad: exit status $rc"
        [ "$(count_out "^usage: cmrun -n P $app ")" -eq 1 ] || fail "$app $bad: not one usage line"
        [ "$(count_out "^$app: ")" -le 1 ] || fail "$app $bad: the reason printed more than once"
        [ "$(count_out 'VERIFY')" -eq 0 ] || fail "$app $bad: ran the app"
    done
done
echo "PASS"
