#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A stuck wait says what it waits for (CM_STUCK_REPORT), and cmrun --timeout ends a job with
# every rank's report (tests/mp/mp_stuck.c makes the jobs):
#   - two locks taken in opposite order by ranks 0 and 1, a third rank in a barrier, under
#     Cashmere and TreadMarks: within the setting each rank prints one line naming what it
#     waits for (the lock, the rank it waits on), again at twice the time; at --timeout every
#     rank reports, cmrun exits 124 soon after, and nothing of the job is left;
#   - CM_STUCK_REPORT=0: no lines, but --timeout's reports still come;
#   - a rank computing outside the library: the others' lines name it; the job goes on and
#     ends well; at a time limit it says it is not waiting in the library;
#   - bad --timeout values: one line and exit 1, before anything starts.
# Verdicts are the lines and exit statuses; the times checked are bounds (a loaded machine
# may be slow to start a job), never measurements.
. "$top_srcdir/tests/lib.sh"
STUCK="$MP/mp_stuck"

# ranks_said PATTERN N: N distinct ranks printed a line matching PATTERN.
ranks_said() {
    local n
    n=$(printf '%s\n' "$out" | grep -E -- "$1" | grep -o '^cashmere\[[0-9]*\]' | sort -u | wc -l)
    [ "$n" -eq "$2" ] || fail "$n ranks, not $2, printed /$1/"
}

for proto in cashmere treadmarks; do
    note "$proto: a deadlock (two locks in opposite order) at 3 processes, CM_STUCK_REPORT=2s, --timeout 10"
    start=$(date +%s)
    run 60 env CM_PROTOCOL=$proto CM_STUCK_REPORT=2s "$CMRUN" -n 3 --timeout 10 "$STUCK" deadlock
    took=$(($(date +%s) - start))
    [ "$rc" -eq 124 ] || fail "exit status $rc, not 124 (the time limit)"
    [ "$took" -lt 30 ] || fail "the job ended $took s after it started (--timeout 10)"
    expect_out "^cmrun: error: the job ran past --timeout 10 s"
    # Each line: how long, since when, what, and (where one rank can end it) the rank.
    expect_out "^cashmere\[0\]: warning: waiting [0-9]+ s \(since [0-9:]{8}\) for .*rank .*; in cm_lock_acquire\(2\)"
    expect_out "^cashmere\[1\]: warning: waiting [0-9]+ s \(since [0-9:]{8}\) for .*rank .*; in cm_lock_acquire\(1\)"
    expect_out "^cashmere\[2\]: warning: waiting [0-9]+ s \(since [0-9:]{8}\) for .*; in cm_barrier"
    expect_out "CM_STUCK_REPORT: again after 4 s"
    expect_out "CM_STUCK_REPORT: again after 8 s" # the second line, at twice the time
    ranks_said "warning: waiting [0-9]+ s .*again after 4 s" 3
    ranks_said "error: at the job's time limit: waiting" 3
    if [ $proto = cashmere ]; then
        # The MCS queue says who is ahead: each waits on the other.
        expect_out "cashmere\[0\]: warning: .*the hand-off from rank 1.*a heartbeat"
        expect_out "cashmere\[1\]: warning: .*the hand-off from rank 0.*a heartbeat"
    else
        # A TreadMarks requester knows the lock's manager, not its holder.
        expect_out "cashmere\[0\]: warning: .*the grant of lock 2 .*last from rank 2: "
    fi
done

note "CM_STUCK_REPORT=0: no lines while it waits; the time limit's reports all the same"
run 60 env CM_STUCK_REPORT=0 "$CMRUN" -n 3 --timeout 6 "$STUCK" deadlock
[ "$rc" -eq 124 ] || fail "exit status $rc, not 124"
[ "$(count_out 'warning: waiting')" -eq 0 ] || fail "lines printed with CM_STUCK_REPORT=0"
ranks_said "error: at the job's time limit: waiting" 3

note "rank 0 computes 6 s outside the library: the others say they wait for it; the job goes on"
expect_ok env CM_STUCK_REPORT=2s "$CMRUN" -n 3 "$STUCK" compute 6
expect_out "^mp_stuck: computed 6.0 s$"
ranks_said "warning: waiting [0-9]+ s .* in cm_barrier" 2
[ "$(count_out '^cashmere\[0\]: warning: waiting')" -eq 0 ] || fail "rank 0, computing, said it waits"

note "the same past a time limit (CM_TIMEOUT=6): rank 0 is not waiting in the library"
run 60 env CM_TIMEOUT=6 "$CMRUN" -n 3 "$STUCK" compute 30
[ "$rc" -eq 124 ] || fail "exit status $rc, not 124"
expect_out "^cashmere\[0\]: error: at the job's time limit: not waiting in the library"
ranks_said "error: at the job's time limit: waiting [0-9]+ s .* in cm_barrier" 2

for bad in 1x -3 1.5s; do
    note "--timeout '$bad': refused in one line"
    run 20 "$CMRUN" -n 2 --timeout "$bad" "$STUCK" compute 1
    [ "$rc" -eq 1 ] || fail "exit $rc"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "not one line"
    expect_out "^cmrun: error: --timeout \(CM_TIMEOUT\) takes whole seconds"
done
echo "PASS"
