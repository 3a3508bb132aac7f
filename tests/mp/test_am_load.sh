#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Active messages under load (issue 10): mp_am at 4 processes over shared
# memory, run after run, with two busy loops competing for the 2 cores. A
# message posted while rank 0's FIFO is full (a reply from a handler in the
# progress thread, or a post from the application thread) is queued in UCX and
# goes out only through the target's own progress; a progress thread that
# slept on it anyway hung the job, and the watchdog fails the test. Half the
# runs shrink the FIFOs to 4 slots so that both kinds are queued in most runs
# (the targets count them: the test checks both paths were taken); the others
# keep UCX's default, as the hang was found.
. "$top_srcdir/tests/lib.sh"
tmp=$(mktemp -d)
busy=()
cleanup() {
    for p in "${busy[@]+"${busy[@]}"}"; do kill "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
runs=${CMT_AM_LOAD_RUNS:-8}

# Each loop also ends by itself when this script dies without its trap (SIGKILL).
for i in 1 2; do
    ( while kill -0 $$ 2>/dev/null; do :; done ) &
    busy+=($!)
done

use_shm
replies=0
posts=0
for fifo in 4 default; do
    for i in $(seq "$runs"); do
        note "shared memory, 4 ranks, 2 busy loops, FIFO $fifo, run $i of $runs"
        if [ "$fifo" = default ]; then
            expect_ok env CM_PROGRESS_THREAD=on "$CMRUN" -n 4 "$MP/mp_am" "$tmp/fifo"
        else
            expect_ok env CM_PROGRESS_THREAD=on UCX_POSIX_FIFO_SIZE=$fifo UCX_SYSV_FIFO_SIZE=$fifo \
                "$CMRUN" -n 4 "$MP/mp_am" "$tmp/fifo"
            q=$(printf '%s\n' "$out" |
                sed -nE 's/.*rank [0-9]+: ([0-9]+) replies and ([0-9]+) posts queued by UCX.*/\1 \2/p' |
                awk '{r += $1; p += $2} END {print r + 0, p + 0}')
            replies=$((replies + ${q% *}))
            posts=$((posts + ${q#* }))
        fi
        expect_out "40 messages posted by the application thread of each of 3 targets, all arrived"
        expect_out "mp_am: OK \(progress thread on\)"
    done
done
note "queued by UCX in the runs with 4-slot FIFOs: $replies replies, $posts posts"
[ "$replies" -gt 0 ] || fail "no reply was ever queued: the runs missed a path under test"
[ "$posts" -gt 0 ] || fail "no post was ever queued: the runs missed a path under test"
echo "PASS"
