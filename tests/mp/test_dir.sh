#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The directory's entry updates under contention, apart from the rest of the
# protocol (mp_dir): both forms, shared memory and TCP, 2 and 4 ranks, with and
# without injected latency. A lost update, two held sections of one page at
# once or a wait that never ends fails.
. "$top_srcdir/tests/lib.sh"
# The protocol itself stays out of the way: mp_dir keeps its own directory in
# the scratch area, and TreadMarks needs no store hooks.
export CM_PROTOCOL=treadmarks
for tp in shm tcp; do
    if [ $tp = shm ]; then use_shm; else use_tcp lo; fi
    for form in mcs cas; do
        for np in 2 4; do
            for lat in 0 5us; do
                note "mp_dir, $form form, $np ranks, $tp, CM_NET_LATENCY=$lat"
                expect_ok env CM_NET_LATENCY=$lat "$CMRUN" -n $np "$MP/mp_dir" --dir $form --iters 2000
                expect_out "mp_dir: $np ranks, $form form, 2000 updates or more each, [0-9]+ held sections, OK"
            done
        done
    done
done
echo "PASS"
