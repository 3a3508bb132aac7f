#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The one-sided layer over TCP only, where UCX emulates RMA and atomics in
# software at the target: not mapped, progress thread on by default.
. "$top_srcdir/tests/lib.sh"
use_tcp lo
for np in 2 4; do
    note "mp_rma, $np ranks, TCP"
    expect_ok "$CMRUN" -n $np "$MP/mp_rma" --expect-mapped no --expect-thread yes --iters 100
    expect_out "mp_rma: $np ranks OK"
done
echo "PASS"
