# SPDX-License-Identifier: BSD-3-Clause
# A two-host cluster on one machine, for tests (sourced after tests/lib.sh).
#
# Each host has its own network, UTS (hostname), IPC and mount namespace with a private
# /dev/shm and a sysfs of its own network (UCX lists a host's interfaces from /sys/class/net);
# a veth pair on a private link joins them. A network namespace alone is not a host: UCX then
# finds the other "host" over shared memory (same hostname, same /dev/shm) while the launcher
# sees two nodes. A sleeping process holds each host's namespaces; `nsenter -t` enters them.
# mpirun starts the other host's daemon through an rsh agent that enters that host, as ssh would.
#
#   cluster_up [shared]         make the hosts (skips the test, saying why, where it cannot);
#                               shared: each host its own network and hostname, but the same
#                               IPC and /dev/shm: the launcher sees two nodes, UCX one machine
#                               (containers on one machine that share /dev/shm)
#   cluster_run N,M [VAR=value...] CMD...   cmrun -n N+M --hosts ... CMD from host a (expect_ok)
#   cluster_fail N,M [VAR=value...] CMD...  the same, the job must fail
#   $(cluster_on a|b) CMD...    CMD inside one host
# The hosts are removed when the test exits (trap).

CLUSTER_IPA=10.213.79.1
CLUSTER_IPB=10.213.79.2
cluster_tag=cmc$$
declare -A cluster_pid

cluster_down() {
    local h
    for h in a b; do
        [ -n "${cluster_pid[$h]}" ] && kill "${cluster_pid[$h]}" 2>/dev/null
        ip netns del "$cluster_tag$h" 2>/dev/null
    done
    [ -n "$cluster_dir" ] && rm -rf "$cluster_dir"
}

cluster_up() {
    local h err ns=(--uts --ipc --mount) own
    if [ "${1:-}" = shared ]; then
        ns=(--uts --mount)
    fi
    [ "$(id -u)" = 0 ] || skip "needs root to create the hosts' namespaces"
    for c in ip nsenter unshare mpirun; do
        command -v $c >/dev/null 2>&1 || skip "$c is not installed (iproute2, util-linux, openmpi-bin)"
    done
    cluster_dir=$(mktemp -d)
    trap cluster_down EXIT
    err="$cluster_dir/err"
    for h in a b; do
        ip netns add "$cluster_tag$h" 2>"$err" || skip "cannot create a network namespace: $(head -1 "$err")"
        own="mount -t sysfs sysfs /sys && hostname $cluster_tag-$h"
        [ "${1:-}" = shared ] || own="mount -t tmpfs -o size=2g tmpfs /dev/shm && $own"
        nsenter --net="/run/netns/$cluster_tag$h" unshare "${ns[@]}" --propagation private \
            sh -c "$own && touch $cluster_dir/up.$h && exec sleep 100000" 2>"$err.$h" &
        cluster_pid[$h]=$!
    done
    for _ in $(seq 50); do
        [ -f "$cluster_dir/up.a" ] && [ -f "$cluster_dir/up.b" ] && break
        sleep 0.1
    done
    for h in a b; do
        [ -f "$cluster_dir/up.$h" ] ||
            skip "cannot give a host its own UTS, IPC and mount namespace: $(head -1 "$err.$h")"
    done
    ip link add "$cluster_tag-va" type veth peer name "$cluster_tag-vb" || skip "cannot create a veth pair"
    ip link set "$cluster_tag-va" netns "${cluster_tag}a" && ip link set "$cluster_tag-vb" netns "${cluster_tag}b" &&
        ip -n "${cluster_tag}a" link set "$cluster_tag-va" name cmveth &&
        ip -n "${cluster_tag}b" link set "$cluster_tag-vb" name cmveth &&
        ip -n "${cluster_tag}a" addr add $CLUSTER_IPA/24 dev cmveth &&
        ip -n "${cluster_tag}b" addr add $CLUSTER_IPB/24 dev cmveth || fail "setting up the veth link"
    for h in a b; do
        ip -n "$cluster_tag$h" link set lo up && ip -n "$cluster_tag$h" link set cmveth up || fail "link up"
    done
    cat > "$cluster_dir/agent" <<AGENT
#!/bin/sh
while [ "\$1" = -p ] || [ "\$1" = -o ]; do shift 2; done
host=\$1; shift
case "\$host" in
    $CLUSTER_IPA) p=${cluster_pid[a]} ;;
    $CLUSTER_IPB) p=${cluster_pid[b]} ;;
    *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec nsenter -t \$p -n -u -i -m --wd="\$PWD" sh -c "\$*"
AGENT
    chmod +x "$cluster_dir/agent"
    # UCX picks its transports: shared memory inside a host, TCP over the link across.
    unset UCX_TLS UCX_NET_DEVICES
    leave_slurm
    export CM_LAUNCHER=mpirun
    export CM_LAUNCHER_ARGS="--mca plm_rsh_agent $cluster_dir/agent --mca oob_tcp_if_include cmveth"
}

# cluster_on a|b: the command that runs what follows inside that host (for run/expect_ok).
cluster_on() {
    echo nsenter -t "${cluster_pid[$1]}" -n -u -i -m --wd="$PWD"
}

# cluster_job EXPECT N,M [VAR=value...] CMD...: cmrun from host a with the settings in its
# environment (cmrun passes CM_* to every rank and picks the build the variant needs).
cluster_job() {
    local expect=$1 n=${2%,*} m=${2#*,} vars=()
    shift 2
    while [[ "$1" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
        vars+=("$1")
        shift
    done
    $expect $(cluster_on a) env "${vars[@]}" "$CMRUN" -n $((n + m)) \
        --hosts $CLUSTER_IPA:$n,$CLUSTER_IPB:$m "$@"
}

# cluster_run N,M [VAR=value...] CMD...: N ranks on host a, M on host b, as expect_ok's job.
cluster_run() { cluster_job expect_ok "$@"; }
# cluster_fail N,M [VAR=value...] CMD...: the same, the job must fail.
cluster_fail() { cluster_job expect_fail "$@"; }
