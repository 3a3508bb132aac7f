#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A lost host ends the job within seconds, with nothing left running on either host
# (tests/cluster.sh: two hosts made of namespaces, each its own network, hostname, IPC, /dev/shm
# and /tmp, mpirun starting the far host's daemon through an rsh agent). Under Cashmere and
# TreadMarks, a job of 2 + 2 ranks in mid-run meets:
#   - the link down for good (the far host unreachable, as if powered off): the near ranks hear
#     no heartbeat for CM_PEER_TIMEOUT (5 s) and one line names the far host's ranks; the far
#     ranks do the same and exit, and cm_guard ends the far orted, stranded without mpirun;
#   - the far host's ranks SIGKILLed (the kernel's OOM killer there);
#   - the far host's launcher daemon (orted) SIGKILLed.
# Each checks that cmrun exits non-zero, that no process is left on either host, and the time
# both took (the goal: 10 s; the bound checked: 20 s, for a loaded machine).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/cluster.sh"
cluster_up
BOUND=20

for proto in cashmere treadmarks; do
    for fault in link-down far-ranks-killed far-daemon-killed; do
        note "$proto, 2 + 2 ranks, $fault in mid-run"
        # Long enough never to finish on its own (minutes); started in host a, as a user would.
        cluster_fault $fault cluster_procs env CM_PROTOCOL=$proto "$CMRUN" -n 4 \
            --hosts $CLUSTER_IPA:2,$CLUSTER_IPB:2 "$MP/mp_litmus" all --iters 1000000 --seed 7
        [ -n "$ended" ] || fail "$proto, $fault: cmrun did not end"
        [ -z "$left" ] || fail "$proto, $fault: processes were left running"
        [ "$job_rc" != 0 ] || fail "$proto, $fault: the job exited 0"
        [ "$(echo "$ended <= $BOUND && $empty <= $BOUND" | bc)" = 1 ] ||
            fail "$proto, $fault: took more than $BOUND s"
        case $fault in
            link-down)
                # One line, from the lowest rank of host a, naming both of host b's ranks.
                [ "$(count_out "^cashmere\\[0\\]: error: lost ranks 2-3 on host ${netns_tag}-b: nothing heard from them for 5 s \\(CM_PEER_TIMEOUT\\)")" -eq 1 ] ||
                    fail "$proto, $fault: not one line from rank 0 naming ranks 2-3 on ${netns_tag}-b"
                [ "$(count_out 'error: lost ')" -eq 1 ] || fail "$proto, $fault: the loss was reported more than once" ;;
            far-ranks-killed)
                # Whoever notices first: mpirun (its daemon saw them die), a rank whose transport
                # found the connection reset, or the heartbeats; or cmrun, naming a near rank,
                # where mpirun crashed in its abort (Open MPI 4.1 in PMIx_Finalize, 3 runs in 12
                # here) before it passed the ranks' lines on.
                expect_out "rank [23] .*on node $CLUSTER_IPB exited on signal 9|error: lost ranks? [23](-3)? on host ${netns_tag}-b: |^cmrun: error: rank [01] \\(pid" ;;
            far-daemon-killed)
                expect_out "ORTE has lost communication with a remote daemon|error: lost ranks? [23](-3)? on host ${netns_tag}-b: |^cmrun: error: rank [01] \\(pid" ;;
        esac
    done
done

# A job stuck on purpose across the hosts: cmrun --timeout asks every rank, on both hosts, what
# it waits for (SIGUSR2 through mpirun and the far orted), then ends the job there too.
note "a deadlock across the hosts, 2 + 2 ranks, --timeout 8: every rank reports, nothing is left"
cluster_fault none cluster_procs env CM_STUCK_REPORT=0 "$CMRUN" -n 4 \
    --hosts $CLUSTER_IPA:2,$CLUSTER_IPB:2 --timeout 8 "$MP/mp_stuck" deadlock
[ "$job_rc" = 124 ] || fail "exit status $job_rc, not 124"
[ -n "$ended" ] || fail "cmrun did not end"
[ -z "$left" ] || fail "processes were left running"
[ "$(echo "$empty <= $BOUND" | bc)" = 1 ] || fail "processes outlived cmrun by more than $BOUND s"
for r in 0 1 2 3; do
    expect_out "^cashmere\\[$r\\]: error: at the job's time limit: waiting [0-9]+ s "
done
echo "PASS"
