#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# One-sided operations complete while their target blocks outside the library
# (read() on a FIFO), waits (also inside a hold of the worker), sits in a barrier, or is
# already in cm_finalize.
# Over TCP, and for atomics UCX emulates with messages, only the target's progress can
# complete them; the "blocked" phase deadlocks (and times out) without it, so its verdict
# involves no timing.
. "$top_srcdir/tests/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

use_tcp lo
for np in 2 4; do
    note "TCP, $np ranks, progress thread auto"
    expect_ok "$CMRUN" -n $np "$MP/mp_progress" "$tmp/fifo$np" blocked wait barrier finalize
    expect_out "blocked: $((np - 1)) targets served while blocked in read"
    expect_out "finalize: $((np - 1)) targets served while in cm_finalize"
    expect_out "OK \(progress thread on\)"
done

note "TCP, every wait blocking: a wait inside a hold of the worker (cm_rma_hold_begin) hands it back"
# A release, acquire or fault issues its operations with the progress thread parked. A wait
# there that sleeps on the futex must unpark it: only the thread serves a TCP peer's put and
# wakes the sleeper. Kept parked, each of rank 0's operations waited for the sleeper's
# one-second backstop, and the job outlived its timeout.
expect_ok env CM_WAIT=block CM_WAIT_SPIN=0 "$CMRUN" -n 2 --timeout 60 "$MP/mp_progress" "$tmp/fifo_held" held
expect_out "held: 1 targets served while waiting in a hold"
expect_out "OK \(progress thread on\)"

note "TCP, progress thread off: waits inside the library still progress"
expect_ok env CM_PROGRESS_THREAD=off "$CMRUN" -n 4 "$MP/mp_progress" "$tmp/fifo_off" wait barrier finalize
expect_out "OK \(progress thread off\)"

note "shared memory: the target's CPU is not needed at all"
use_shm
# (CM_WAIT=spin: at 4 processes on fewer cores blocking waits would start the thread.)
expect_ok env CM_WAIT=spin "$CMRUN" -n 4 "$MP/mp_progress" "$tmp/fifo_shm" blocked wait barrier finalize
expect_out "OK \(progress thread off\)"

note "shared memory, atomics emulated with messages (UCX_ATOMIC_MODE=device): the thread starts by itself"
# Peers' memory is mapped, but their atomics are messages the target's CPU executes: with
# no thread, the fetch-and-add on a target blocked in read() waited for ever.
expect_ok env UCX_ATOMIC_MODE=device CM_WAIT=spin "$CMRUN" -n 4 "$MP/mp_progress" "$tmp/fifo_amo" \
    blocked wait barrier finalize
expect_out "OK \(progress thread on\)"

note "shared memory, every wait blocking: the thread serves, direct stores wake, none missed"
expect_ok env CM_WAIT=block CM_WAIT_SPIN=0 "$CMRUN" -n 4 "$MP/mp_progress" "$tmp/fifo_blk" blocked \
    wait barrier finalize
expect_out "OK \(progress thread on\)"
echo "PASS"
