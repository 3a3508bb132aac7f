#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Blocking waits (CM_WAIT=block): a waiter that sleeps is woken by a node-local peer's store
# (futex), by its progress thread after a TCP peer's emulated put or a message, and never
# misses a wake-up (a sleep that outlasts a change of its word is counted: wait_missed).
# CM_WAIT_SPIN=0 makes nearly every wait sleep. Verdicts are results and counts, no timing.
. "$top_srcdir/tests/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
slept() {
    local b m
    b=$(stats_total wait_blocks "$1"); m=$(stats_total wait_missed "$1")
    [ "${b:-0}" -gt 0 ] || fail "no wait slept ($1: wait_blocks=${b:-none})"
    [ "${m:-1}" -eq 0 ] || fail "$m sleeps outlasted a change of their word (missed wake-ups)"
    echo "  slept $b times, missed 0"
}
block=(CM_WAIT=block CM_WAIT_SPIN=0)

for t in shm tcp; do
    if [ $t = shm ]; then use_shm; else use_tcp lo; fi
    for v in CHSM CHSN; do
        note "$t, $v: litmus at 4 processes, every wait blocking"
        expect_ok env "${block[@]}" CM_VARIANT=$v CM_STATS="$tmp/l.json" "$CMRUN" -n 4 \
            "$MP/mp_litmus" all --iters 20 --seed 7
        slept "$tmp/l.json"
    done
    note "$t, TreadMarks: litmus at 4 processes, every wait blocking"
    expect_ok env "${block[@]}" CM_PROTOCOL=treadmarks CM_STATS="$tmp/t.json" "$CMRUN" -n 4 \
        "$MP/mp_litmus" all --iters 20 --seed 7
    slept "$tmp/t.json"
done

use_shm
for p in cashmere treadmarks; do
    note "shm, $p: sor and water at 4 processes, every wait blocking"
    for app in sor water; do
        expect_ok env "${block[@]}" CM_PROTOCOL=$p CM_STATS="$tmp/a.json" "$CMRUN" -n 4 \
            "$top_builddir/apps/$app" --size test
        expect_out "VERIFY OK"
        slept "$tmp/a.json"
    done
done

note "auto: 4 processes on $(nproc) cores"
expect_ok env CM_LOG_LEVEL=debug "$CMRUN" -n 4 "$MP/mp_litmus" mp --iters 5
if [ "$(nproc)" -lt 4 ]; then expect_out "waits block after"; else expect_out "waits spin"; fi

note "block without a progress thread: refused at start, one line"
expect_fail env CM_WAIT=block CM_PROGRESS_THREAD=off "$CMRUN" -n 2 "$MP/mp_litmus" mp --iters 5
expect_out "CM_WAIT=block: .*CM_PROGRESS_THREAD=off"
n=$(count_out "CM_WAIT=block:")
[ "$n" -eq 1 ] || fail "the refusal printed $n times"
echo "PASS"
