#!/bin/bash
# Active messages under load (issue 10): mp_am at 4 processes over shared
# memory, run after run, with two busy loops competing for the 2 cores. A
# reply that a target's handler posts while rank 0's FIFO is full is queued in
# UCX and goes out only through the target's own progress; a progress thread
# that slept on it anyway (armed for receives only) hung the job, and the
# watchdog fails the test. Half the runs shrink the FIFOs to 4 slots so that
# replies are queued in most runs (the targets count them: the test checks the
# path was taken); the others keep UCX's default, as the hang was found.
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
queued=0
for fifo in 4 default; do
    for i in $(seq "$runs"); do
        note "shared memory, 4 ranks, 2 busy loops, FIFO $fifo, run $i of $runs"
        if [ "$fifo" = default ]; then
            expect_ok env CM_PROGRESS_THREAD=on "$CMRUN" -n 4 "$MP/mp_am" "$tmp/fifo"
        else
            expect_ok env CM_PROGRESS_THREAD=on UCX_POSIX_FIFO_SIZE=$fifo UCX_SYSV_FIFO_SIZE=$fifo \
                "$CMRUN" -n 4 "$MP/mp_am" "$tmp/fifo"
            queued=$((queued + $(printf '%s\n' "$out" |
                sed -nE 's/.*rank [0-9]+: ([0-9]+) replies queued by UCX.*/\1/p' |
                awk '{s += $1} END {print s + 0}')))
        fi
        expect_out "mp_am: OK \(progress thread on\)"
    done
done
note "replies queued by UCX in the runs with 4-slot FIFOs: $queued"
[ "$queued" -gt 0 ] || fail "no reply was ever queued: the runs did not exercise the path under test"
echo "PASS"
