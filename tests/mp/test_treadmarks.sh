#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The TreadMarks baseline (CM_PROTOCOL=treadmarks): the release-consistency
# litmus tests with the very binaries Cashmere runs (plain and hooked), at 2
# and 4 processes over shared memory and TCP, with garbage collection forced
# and with requests served only inside library calls; and the message count of
# each operation against Table 2.1 of Keleher's thesis. All of it again with
# written pages found by scanning (CM_TMK_WRITE_DETECT=scan).
. "$top_srcdir/tests/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CM_PROTOCOL=treadmarks

use_shm
for np in 2 4; do
    for bin in mp_litmus mp_litmus.hooks; do
        note "shared memory, $np processes, $bin"
        expect_ok env CM_STATS="$tmp/s.json" "$CMRUN" -n $np "$MP/$bin" all --iters 30 --seed $np
        expect_out "^litmus all: OK$"
        for c in intervals twins diffs_created diffs_applied cold_misses interrupts msgs_lock_grant \
                 msgs_diff_reply; do
            [ "$(stats_total $c "$tmp/s.json")" -gt 0 ] || fail "statistic $c is 0"
        done
        [ "$(stats_total gc_runs "$tmp/s.json")" -eq 0 ] || fail "garbage collected below the threshold"
    done
done

note "lock-protected words of one page (a combined diff goes to the oldest notice only)"
for np in 2 4; do
    expect_ok "$CMRUN" -n $np "$MP/mp_litmus" wordlocks --iters 40 --seed $np
    expect_out "^litmus wordlocks: OK$"
done

note "garbage collection at every barrier (CM_TMK_GC_BYTES=4k)"
expect_ok env CM_TMK_GC_BYTES=4k CM_STATS="$tmp/g.json" "$CMRUN" -n 4 "$MP/mp_litmus" all --iters 20
expect_out "^litmus all: OK$"
[ "$(stats_total gc_runs "$tmp/g.json")" -gt 0 ] || fail "no garbage collection ran"

note "no progress thread: requests served only inside library calls"
expect_ok env CM_PROGRESS_THREAD=off CM_STATS="$tmp/o.json" "$CMRUN" -n 4 "$MP/mp_litmus" all \
    --iters 20 --seed 9
expect_out "^litmus all: OK$"
[ "$(stats_total interrupts "$tmp/o.json")" -eq 0 ] || fail "interrupts counted without a progress thread"

note "message counts per operation (thesis Table 2.1)"
for np in 3 4; do
    expect_ok "$CMRUN" -n $np "$MP/mp_tmk"
    expect_out "lock, manager holds the token \(2-hop\) +2 messages"
    expect_out "lock, token at the last requester \(3-hop\) +3 messages"
    expect_out "barrier, 2\(n-1\) +$((2 * (np - 1))) messages"
    expect_out "access miss, two concurrent writers \(2m, m=2\) +4 messages"
    expect_out "mp_tmk: OK \($np processes\)"
done

use_tcp lo
for np in 2 4; do
    note "TCP, $np processes"
    expect_ok "$CMRUN" -n $np "$MP/mp_litmus" all --iters 10 --seed $np
    expect_out "^litmus all: OK$"
done

# Write detection by scanning writable pages (CM_TMK_WRITE_DETECT=scan): the same cases, and
# the scan must really have found pages written and clean.
export CM_TMK_WRITE_DETECT=scan
use_shm
for np in 2 4; do
    note "scan: shared memory, $np processes"
    expect_ok env CM_STATS="$tmp/c.json" "$CMRUN" -n $np "$MP/mp_litmus.hooks" all --iters 30 \
        --seed $((np + 20))
    expect_out "^litmus all: OK$"
    for c in scan_written scan_clean twins diffs_created; do
        [ "$(stats_total $c "$tmp/c.json")" -gt 0 ] || fail "scan: statistic $c is 0"
    done
    expect_ok "$CMRUN" -n $np "$MP/mp_litmus" wordlocks --iters 40 --seed $((np + 20))
    expect_out "^litmus wordlocks: OK$"
done
note "scan: garbage collection at every barrier"
expect_ok env CM_TMK_GC_BYTES=4k "$CMRUN" -n 4 "$MP/mp_litmus" all --iters 20 --seed 21
expect_out "^litmus all: OK$"
note "scan: no progress thread"
expect_ok env CM_PROGRESS_THREAD=off "$CMRUN" -n 4 "$MP/mp_litmus" all --iters 20 --seed 22
expect_out "^litmus all: OK$"
note "scan: message counts per operation"
expect_ok "$CMRUN" -n 3 "$MP/mp_tmk"
expect_out "mp_tmk: OK \(3 processes\)"
use_tcp lo
note "scan: TCP, 4 processes"
expect_ok "$CMRUN" -n 4 "$MP/mp_litmus" all --iters 10 --seed 23
expect_out "^litmus all: OK$"

# A write after the last barrier, whose diff the others ask for while cm_finalize frees the
# history (mp_finale.c): glibc's heap checks catch the use after free, if any (it failed 19
# of 20 runs at 2 processes, and 9 of 20 at 4, before tm_fini waited for the others).
export MALLOC_CHECK_=3 MALLOC_PERTURB_=165
for detect in fault scan; do
    for np in 2 4; do
        note "TCP, $detect, $np processes: a write after the last barrier, 5 runs under glibc's heap checks"
        for _ in 1 2 3 4 5; do
            expect_ok env CM_TMK_WRITE_DETECT=$detect "$CMRUN" -n $np -x MALLOC_CHECK_ \
                -x MALLOC_PERTURB_ "$MP/mp_finale"
            expect_out "^mp_finale: $np processes, 4096 pages"
        done
    done
done
unset MALLOC_CHECK_ MALLOC_PERTURB_
echo "PASS"
