#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Start-up: singleton without launcher, 2 and 4 ranks through cmrun, the shared
# region at one address in every process.
. "$top_srcdir/tests/lib.sh"

note "singleton: no launcher is a 1-process job"
expect_ok "$MP/mp_init.hooks" info
expect_out '^rank 0 of 1: shared 0x200000000000\+68719476736'

for np in 2 4; do
    note "$np ranks over shared memory"
    use_shm
    # (CM_WAIT=spin: blocking waits, where processes outnumber cores, need the thread.)
    expect_ok env CM_WAIT=spin "$CMRUN" -n $np "$MP/mp_init" info
    [ "$(count_out '^rank [0-9]+ of '$np': shared 0x200000000000')" -eq $np ] || fail "not every rank reported"
    expect_out "mapped=1 thread=0"
done

note "a different CM_SHARED_BASE and size are honoured everywhere"
expect_ok env CM_SHARED_BASE=0x300000000000 CM_SHARED_SIZE=64m "$CMRUN" -n 2 "$MP/mp_init" info
[ "$(count_out '^rank [01] of 2: shared 0x300000000000\+67108864')" -eq 2 ] || fail "base/size not used"
echo "PASS"
