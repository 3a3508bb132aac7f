#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Active messages are served while their target blocks outside the library
# (read() on a FIFO): requests of 8 B to 70 KB, replies posted from inside the
# handlers, then messages posted by the application threads just before they
# block, over shared memory and TCP. Without asynchronous service the job
# deadlocks and times out, so the verdict involves no timing.
. "$top_srcdir/tests/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

use_shm
for np in 2 4; do
    note "shared memory, $np ranks, progress thread on"
    expect_ok env CM_PROGRESS_THREAD=on "$CMRUN" -n $np "$MP/mp_am" "$tmp/fifo$np"
    expect_out "40 requests \(8 B to 70 KB\) to each of $((np - 1)) targets blocked in read\(\)"
    expect_out "40 messages posted by the application thread of each of $((np - 1)) targets, all arrived"
    expect_out "mp_am: OK \(progress thread on\)"
done

use_tcp lo
for np in 2 4; do
    note "TCP, $np ranks, progress thread auto"
    expect_ok "$CMRUN" -n $np "$MP/mp_am" "$tmp/tfifo$np" --count 20
    expect_out "20 messages posted by the application thread of each of $((np - 1)) targets, all arrived"
    expect_out "mp_am: OK \(progress thread on\)"
done
echo "PASS"
