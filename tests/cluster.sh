# SPDX-License-Identifier: BSD-3-Clause
# A two-host cluster on one machine, for tests (sourced after tests/lib.sh): the fixture of
# experiments/lib/netns.sh, which the scoreboard's and the study's two-host mode use too.
#
# Each host has its own network, UTS (hostname), IPC and mount namespace with a private
# /dev/shm and a sysfs of its own network (UCX lists a host's interfaces from /sys/class/net);
# a veth pair on a private link joins them. Host a, where jobs start, shares /tmp with the
# tests; host b has its own. A network namespace alone is not a host: UCX then finds the
# other "host" over shared memory (same hostname, same /dev/shm) while the launcher sees two
# nodes. A sleeping process holds each host's namespaces; `nsenter -t` enters them. mpirun
# starts the other host's daemon through an rsh agent that enters that host, as ssh would.
#
#   cluster_up [MODE]           make the hosts (skips the test, saying why, where it cannot);
#                               MODE (netns.sh): own (default); shared: each host its own network
#                               and hostname, but the same IPC and /dev/shm: the launcher sees
#                               two nodes, UCX one machine (containers on one machine that share
#                               /dev/shm); kernel: the same with one hostname
#   cluster_run N,M [VAR=value...] CMD...   cmrun -n N+M --hosts ... CMD from host a (expect_ok)
#   cluster_fail N,M [VAR=value...] CMD...  the same, the job must fail
#   $(cluster_on a|b) CMD...    CMD inside one host
#   cluster_fault FAULT LEFT_FN CMD...   a fault in mid-run of a job of 2 + 2 ranks (below)
# The hosts are removed when the test exits (trap).

. "$top_srcdir/experiments/lib/netns.sh"
CLUSTER_IPA=$NETNS_IPA
CLUSTER_IPB=$NETNS_IPB
cluster_dir=

cluster_down() { netns_down; }

cluster_up() {
    trap netns_down EXIT
    netns_up "$@"
    case $? in
        0) ;;
        1) skip "$netns_why" ;;
        *) fail "$netns_why" ;;
    esac
    cluster_dir=$netns_dir
    leave_slurm
}

# cluster_on a|b: the command that runs what follows inside that host (for run/expect_ok).
cluster_on() { netns_on "$1"; }

# cluster_procs [a|b]: "pid comm" of every process on both hosts (or one), but the ones that
# hold their namespaces.
cluster_procs() {
    local h p
    for h in ${1:-a b}; do
        for p in $(ip netns pids "$netns_tag$h" 2>/dev/null); do
            [ "$p" = "${netns_pid[a]}" ] || [ "$p" = "${netns_pid[b]}" ] && continue
            echo "$p $(cat "/proc/$p/comm" 2>/dev/null)"
        done
    done
}

# cluster_job EXPECT N,M [VAR=value...] CMD...: cmrun from host a with the settings in its
# environment (cmrun passes CM_* to every rank and picks the build the variant needs). Once
# cmrun has returned, nothing of the job may be left on either host (the far host's daemon
# and its cm_guard included) after 0.5 s.
cluster_job() {
    local expect=$1 n=${2%,*} m=${2#*,} vars=() left
    shift 2
    while [[ "$1" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
        vars+=("$1")
        shift
    done
    $expect $(cluster_on a) env "${vars[@]}" "$CMRUN" -n $((n + m)) \
        --hosts $CLUSTER_IPA:$n,$CLUSTER_IPB:$m "$@"
    # mpirun returns without waiting for the far host's shell, which ends with the daemon at
    # about the same moment: what is still there 0.5 s later was left behind.
    for _ in 1 2 3 4 5 6; do
        left=$(cluster_procs)
        [ -n "$left" ] || break
        sleep 0.1
    done
    [ -z "$left" ] || fail "processes outlived the job on the hosts: $(echo $left)"
}

# cluster_run N,M [VAR=value...] CMD...: N ranks on host a, M on host b, as expect_ok's job.
cluster_run() { cluster_job expect_ok "$@"; }
# cluster_fail N,M [VAR=value...] CMD...: the same, the job must fail.
cluster_fail() { cluster_job expect_fail "$@"; }

# cluster_ranks_on a|b: pids of the job's ranks on that host, a tests/mp program (named "exe"
# once they re-executed themselves: the command line tells).
cluster_ranks_on() {
    local p comm
    cluster_procs "$1" | while read -r p comm; do
        tr '\0' ' ' 2>/dev/null < "/proc/$p/cmdline" | grep -q '^[^ ]*/mp_[a-z]*' && echo "$p"
    done
}

# cluster_fault FAULT LEFT_FN CMD...: runs CMD inside host a in the background (a job that runs
# for minutes: 2 ranks on each host), and 2 s after its ranks run on both hosts meets FAULT:
#   link-down           host b's link down for good (as if powered off)
#   far-ranks-killed    host b's ranks SIGKILLed (the kernel's OOM killer there)
#   far-daemon-killed   host b's orted SIGKILLed (mpirun's daemon)
#   none                nothing: the job ends by itself (cmrun --timeout)
# Then watches, for up to 30 s: $ended, seconds until CMD exited, and $empty, until LEFT_FN
# (a function printing what of the job is still running) prints nothing; empty where not
# reached. $left is what LEFT_FN prints at the end (then killed), $out CMD's output, $job_rc its
# exit status. The link is up again afterwards. Fails the test if the job ended before the fault
# or its ranks did not start on both hosts.
cluster_fault() {
    local fault=$1 left_fn=$2 log="$cluster_dir/fault.log" rcf="$cluster_dir/fault.rc" job start t
    shift 2
    rm -f "$rcf" "$log"
    ( $(cluster_on a) "$@" > "$log" 2>&1 < /dev/null; echo $? > "$rcf" ) &
    job=$!
    # Two ranks on each host at two looks in a row: a look can also count a rank of the
    # previous job still on its way out.
    local seen=0 na nb
    for _ in $(seq 600); do
        na=$(cluster_ranks_on a | wc -l) nb=$(cluster_ranks_on b | wc -l)
        if [ "$na" -eq 2 ] && [ "$nb" -eq 2 ]; then seen=$((seen + 1)); else seen=0; fi
        [ "$seen" -ge 2 ] && break
        [ -e "$rcf" ] && break
        sleep 0.1
    done
    [ ! -e "$rcf" ] || { sed 's/^/  | /' "$log"; fail "the job ended before the fault"; }
    [ "$seen" -ge 2 ] || { sed 's/^/  | /' "$log"; cluster_procs b | sed 's/^/  b: /'
                           "$left_fn" | awk '{print $1}' | xargs -r kill -KILL 2>/dev/null
                           fail "the ranks did not start on both hosts ($na on a, $nb on b)"; }
    sleep 2 # in mid-run: past the start, in the litmus cases
    start=$EPOCHREALTIME
    case $fault in
        link-down) ip -n "${netns_tag}b" link set cmveth down ;;
        far-ranks-killed) kill -KILL $(cluster_ranks_on b) ;;
        far-daemon-killed) kill -KILL $(cluster_procs b | awk '$2 == "orted" {print $1}') ;;
        none) ;;
        *) fail "cluster_fault: unknown fault $fault" ;;
    esac
    ended="" empty=""
    for _ in $(seq 300); do
        t=$(echo "$EPOCHREALTIME - $start" | bc)
        [ -z "$ended" ] && [ -e "$rcf" ] && ended=$t
        [ -z "$empty" ] && [ -z "$("$left_fn")" ] && empty=$t
        [ -n "$ended" ] && [ -n "$empty" ] && break
        sleep 0.1
    done
    left=$("$left_fn")
    out=$(cat "$log")
    printf '%s\n' "$out" | sed 's/^/  | /'
    printf '  cmrun exited %s s after the fault, the last of the job was gone after %s s\n' \
        "${ended:-(not within 30 s)}" "${empty:-(not within 30 s)}"
    if [ -n "$left" ]; then
        printf '%s\n' "$left" | sed 's/^/  left: /'
        printf '%s\n' "$left" | awk '{print $1}' | xargs -r kill -KILL 2>/dev/null
        sleep 0.5
    fi
    ip -n "${netns_tag}b" link set cmveth up
    wait "$job" 2>/dev/null
    job_rc=$(cat "$rcf" 2>/dev/null || echo none)
}
