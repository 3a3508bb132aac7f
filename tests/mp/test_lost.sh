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
dir=$cluster_dir

# ranks_on a|b: pids of the job's ranks on that host (named "exe" once they re-executed
# themselves: the command line tells).
ranks_on() {
    local p comm
    cluster_procs "$1" | while read -r p comm; do
        tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q '^[^ ]*mp_litmus' && echo "$p"
    done
}

# clean_hosts: kills whatever is left on the hosts (after a failure) and waits for it.
clean_hosts() {
    local p
    for p in $(cluster_procs | awk '{print $1}'); do kill -KILL "$p" 2>/dev/null; done
    sleep 0.5
}

for proto in cashmere treadmarks; do
    for fault in link-down far-ranks-killed far-daemon-killed; do
        note "$proto, 2 + 2 ranks, $fault in mid-run"
        log="$dir/job.log"
        rm -f "$dir/rc" "$log"
        # Long enough never to finish on its own (minutes); started in host a, as a user would.
        ( $(cluster_on a) env CM_PROTOCOL=$proto "$CMRUN" -n 4 \
            --hosts $CLUSTER_IPA:2,$CLUSTER_IPB:2 "$MP/mp_litmus" all --iters 1000000 --seed 7 \
            > "$log" 2>&1 < /dev/null; echo $? > "$dir/rc" ) &
        job=$!
        for _ in $(seq 600); do
            [ "$(ranks_on a | wc -l)" -eq 2 ] && [ "$(ranks_on b | wc -l)" -eq 2 ] && break
            [ -e "$dir/rc" ] && break
            sleep 0.1
        done
        [ ! -e "$dir/rc" ] || { sed 's/^/  | /' "$log"; fail "the job ended before the fault"; }
        [ "$(ranks_on b | wc -l)" -eq 2 ] || { clean_hosts; fail "the ranks did not start on both hosts"; }
        sleep 2 # in mid-run: past the start, in the litmus cases
        start=$EPOCHREALTIME
        case $fault in
            link-down) ip -n "${netns_tag}b" link set cmveth down ;;
            far-ranks-killed) kill -KILL $(ranks_on b) ;;
            far-daemon-killed) kill -KILL $(cluster_procs b | awk '$2 == "orted" {print $1}') ;;
        esac
        ended="" empty=""
        for _ in $(seq $((BOUND * 10 + 100))); do
            t=$(echo "$EPOCHREALTIME - $start" | bc)
            [ -z "$ended" ] && [ -e "$dir/rc" ] && ended=$t
            [ -z "$empty" ] && [ -z "$(cluster_procs)" ] && empty=$t
            [ -n "$ended" ] && [ -n "$empty" ] && break
            sleep 0.1
        done
        left=$(cluster_procs)
        sed 's/^/  | /' "$log"
        printf '  cmrun exited %s s after the fault, the last process on either host was gone after %s s\n' \
            "${ended:-(not within $((BOUND + 10)) s)}" "${empty:-(not within $((BOUND + 10)) s)}"
        if [ -n "$left" ]; then
            printf '%s\n' "$left" | sed 's/^/  left: /'
            clean_hosts
        fi
        wait "$job" 2>/dev/null
        ip -n "${netns_tag}b" link set cmveth up
        [ -n "$ended" ] || fail "$proto, $fault: cmrun did not end"
        [ -z "$left" ] || fail "$proto, $fault: processes were left running"
        [ "$(cat "$dir/rc")" -ne 0 ] || fail "$proto, $fault: the job exited 0"
        [ "$(echo "$ended <= $BOUND && $empty <= $BOUND" | bc)" = 1 ] ||
            fail "$proto, $fault: took more than $BOUND s"
        out=$(cat "$log")
        case $fault in
            link-down)
                # One line, from the lowest rank of host a, naming both of host b's ranks.
                [ "$(count_out "^cashmere\\[0\\]: error: lost ranks 2-3 on host ${netns_tag}-b: nothing heard from them for 5 s \\(CM_PEER_TIMEOUT\\)")" -eq 1 ] ||
                    fail "$proto, $fault: not one line from rank 0 naming ranks 2-3 on ${netns_tag}-b"
                [ "$(count_out 'error: lost ')" -eq 1 ] || fail "$proto, $fault: the loss was reported more than once" ;;
            far-ranks-killed)
                # Whoever notices first: mpirun (its daemon saw them die), a rank whose transport
                # found the connection reset, or the heartbeats.
                expect_out "rank [23] .*on node $CLUSTER_IPB exited on signal 9|error: lost ranks? [23](-3)? on host ${netns_tag}-b: " ;;
            far-daemon-killed)
                expect_out "ORTE has lost communication with a remote daemon|error: lost ranks? [23](-3)? on host ${netns_tag}-b: " ;;
        esac
    done
done

# A job stuck on purpose across the hosts: cmrun --timeout asks every rank, on both hosts, what
# it waits for (SIGUSR2 through mpirun and the far orted), then ends the job there too.
note "a deadlock across the hosts, 2 + 2 ranks, --timeout 6: every rank reports, nothing is left"
cluster_job "run 60" 2,2 CM_STUCK_REPORT=0 --timeout 6 "$MP/mp_stuck" deadlock
[ "$rc" -eq 124 ] || fail "exit status $rc, not 124"
for r in 0 1 2 3; do
    expect_out "^cashmere\\[$r\\]: error: at the job's time limit: waiting [0-9]+ s "
done
echo "PASS"
