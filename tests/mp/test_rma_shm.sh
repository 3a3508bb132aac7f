#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The one-sided layer over shared memory (posix/sysv): peers' memory is
# directly mapped and no progress thread is needed.
. "$top_srcdir/tests/lib.sh"
use_shm
for np in 2 4; do
    note "mp_rma, $np ranks, shared memory"
    # (CM_WAIT=spin: blocking waits, where processes outnumber cores, need the thread.)
    expect_ok env CM_WAIT=spin "$CMRUN" -n $np "$MP/mp_rma" --expect-mapped yes --expect-thread no
    expect_out "mp_rma: $np ranks OK"
done
note "every wait blocking (CM_WAIT=block): woken by each peer's direct store, none missed"
expect_ok env CM_WAIT=block CM_WAIT_SPIN=0 "$CMRUN" -n 4 "$MP/mp_rma" --expect-mapped yes
expect_out "mp_rma: 4 ranks OK \(mapped=1, progress thread=1\)"
note "atomics UCX emulates with messages (UCX_ATOMIC_MODE=device): the progress thread starts by itself"
expect_ok env UCX_ATOMIC_MODE=device CM_WAIT=spin "$CMRUN" -n 4 "$MP/mp_rma" --expect-mapped yes \
    --expect-thread yes
note "... and without it, a fence orders a direct get behind a swap still waiting for its"
note "sleeping target"
# (CM_PROGRESS_THREAD=off: the thread would serve the swap at once.)
expect_ok env UCX_ATOMIC_MODE=device CM_WAIT=spin CM_PROGRESS_THREAD=off "$CMRUN" -n 4 \
    "$MP/mp_rma" --expect-mapped yes
expect_out "mp_rma: swap, fence, get in order at every rank \([1-9][0-9]* of 3 waited"
note "the protocol with every atomic emulated, the three directory forms"
for dir in mcs cas add; do
    expect_ok env UCX_ATOMIC_MODE=device CM_DIRECTORY=$dir "$CMRUN" -n 4 "$MP/mp_litmus" all \
        --iters 20
    expect_out "^litmus all: OK$"
done
note "progress thread forced on over shared memory still works"
expect_ok env CM_PROGRESS_THREAD=on "$CMRUN" -n 4 "$MP/mp_rma" --expect-mapped yes --expect-thread yes
note "progress thread off (single-threaded UCX worker)"
expect_ok env CM_PROGRESS_THREAD=off "$CMRUN" -n 2 "$MP/mp_rma" --expect-mapped yes --expect-thread no
echo "PASS"
