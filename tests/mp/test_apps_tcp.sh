#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The application suite over TCP under the software-read/software-write variants (NSS*:
# line fills by emulated gets, stores doubled by emulated puts, every one served by the
# target's progress thread), at 2 and 4 processes. Which variants: the table's rows with a
# line fill and store hooks (cm_info --variants), available over TCP.
. "$top_srcdir/tests/lib.sh"
use_tcp lo
export CM_APPS_DIR="$top_builddir/apps"

variants=$("$CM_INFO" --variants |
           awk '$2 == "available" && / fill=line / && / write=hooks / {print $1}' | paste -sd' ')
[ -n "$variants" ] || fail "no variant with line fills and store hooks runs over TCP here"
runs=0
for v in $variants; do
    for app in sor sor_l gauss fft mgrid em3d water mp3d appbt; do
        for np in 2 4; do
            note "TCP, $app, $np processes, $v"
            expect_ok env CM_VARIANT=$v "$CMRUN" -n $np $app --size test
            expect_out "^$app: .*, $np processes: parallel section [0-9.]+ s, protocol cashmere variant $v$"
            expect_out "^VERIFY OK$"
            runs=$((runs + 1))
        done
    done
done
echo "($runs runs: $variants)"
echo "PASS"
