# SPDX-License-Identifier: BSD-3-Clause
# Two hosts on one machine, made of namespaces: for the scoreboard's and the study's two-host
# mode (--hosts netns) and for the tests (tests/cluster.sh). Sourced by bash; needs root,
# iproute2, util-linux and Open MPI's mpirun (the launcher that enters the other host).
#
# Each host has its own network, UTS (hostname), IPC and mount namespace with a private
# /dev/shm and a sysfs of its own network (UCX lists a host's interfaces from /sys/class/net);
# a veth pair on a private link joins them. Host a, where jobs are launched, shares /tmp with
# the machine (the scripts' results directories, as a login node's); host b has its own, so
# that cmrun's run directory (CM_RUN_DIR) and the launcher's session files are where they are
# on real hosts: cmrun cannot see the other host's ranks through them. A network namespace alone is not a
# host: UCX then finds the other "host" over shared memory (same hostname, same /dev/shm) while the launcher
# sees two nodes. A sleeping process holds each host's namespaces; `nsenter -t` enters them.
# mpirun starts the other host's daemon through an rsh agent that enters that host, as ssh would.
#
#   netns_up [MODE]     make the hosts; 0, or with the reason in $netns_why: 1 where this
#                       machine cannot (no root, no namespaces), 2 where it broke on the way.
#                       MODE own (default): each host its own network, hostname, IPC, /dev/shm;
#                       shared: its own network and hostname, but the same IPC and /dev/shm
#                       (the launcher sees two nodes, UCX one machine); kernel: only its own
#                       network (and mount, for its /sys): namespaces of one kernel with one
#                       hostname, as containers that share the host's IPC can look
#   netns_down          remove them (also what netns_up leaves behind when it fails)
#   $(netns_on a|b) CMD...   CMD inside one host
#   $netns_hosts        the cmrun host list for N,M processes: netns_hostlist N M
# After netns_up, CM_LAUNCHER and CM_LAUNCHER_ARGS make cmrun launch across the hosts, and
# UCX_TLS and UCX_NET_DEVICES are unset (UCX picks shared memory inside a host, TCP across).

NETNS_IPA=10.213.79.1
NETNS_IPB=10.213.79.2
netns_tag=cmn$$
netns_dir=
netns_why=
declare -gA netns_pid=() # global: this file may be sourced inside a function

netns_down() {
    local h
    for h in a b; do
        [ -n "${netns_pid[$h]:-}" ] && kill "${netns_pid[$h]}" 2>/dev/null
        ip netns del "$netns_tag$h" 2>/dev/null
    done
    netns_pid=()
    [ -n "$netns_dir" ] && rm -rf "$netns_dir" && unset CM_LAUNCHER CM_LAUNCHER_ARGS
    netns_dir=
}

# netns_fail REASON [STATUS]: records why, undoes what was made, returns STATUS (1).
netns_fail() {
    netns_why=$1
    netns_down
    return "${2:-1}"
}

netns_up() {
    local h c err own ns=(--uts --ipc --mount) mode=${1:-own}
    case $mode in
        own) ;;
        shared) ns=(--uts --mount) ;;
        kernel) ns=(--mount) ;;
        *) netns_why="netns_up: unknown mode $mode"; return 2 ;;
    esac
    [ "$(id -u)" = 0 ] || { netns_why="needs root to create the hosts' namespaces"; return 1; }
    for c in ip nsenter unshare mpirun; do
        command -v $c >/dev/null 2>&1 ||
            { netns_why="$c is not installed (iproute2, util-linux, openmpi-bin)"; return 1; }
    done
    # Outside /tmp: host b has a /tmp of its own, and both hosts must see the rsh agent.
    netns_dir=$(mktemp -d -p /var/tmp cm-netns.XXXXXX)
    err="$netns_dir/err"
    for h in a b; do
        ip netns add "$netns_tag$h" 2>"$err" ||
            { netns_fail "cannot create a network namespace: $(head -1 "$err")"; return 1; }
        # The host's own sysfs (its network's interfaces), with the machine's cgroup tree kept
        # under it (slurmd needs one: tests/slurm.sh), moved aside and back.
        mkdir "$netns_dir/cg.$h"
        own="{ mount --rbind /sys/fs/cgroup $netns_dir/cg.$h 2>/dev/null || :; } &&
             mount -t sysfs sysfs /sys &&
             { mount --rbind $netns_dir/cg.$h /sys/fs/cgroup 2>/dev/null || :; }"
        [ "$mode" = kernel ] || own="$own && hostname $netns_tag-$h"
        # Host a is where the job is launched from, as a login node: it shares /tmp with the
        # scripts that drive it (their results directories). Host b's /tmp is its own.
        [ "$h" = b ] && own="mount -t tmpfs -o size=1g tmpfs /tmp && $own"
        if [ "$mode" = own ]; then own="mount -t tmpfs -o size=2g tmpfs /dev/shm && $own"; fi
        nsenter --net="/run/netns/$netns_tag$h" unshare "${ns[@]}" --propagation private \
            sh -c "$own && touch $netns_dir/up.$h && exec sleep 100000" 2>"$err.$h" &
        netns_pid[$h]=$!
    done
    for _ in $(seq 50); do
        [ -f "$netns_dir/up.a" ] && [ -f "$netns_dir/up.b" ] && break
        sleep 0.1
    done
    for h in a b; do
        [ -f "$netns_dir/up.$h" ] || { netns_fail "cannot give a host its own UTS, IPC and mount namespace: $(head -1 "$err.$h")"; return 1; }
    done
    ip link add "$netns_tag-va" type veth peer name "$netns_tag-vb" 2>"$err" ||
        { netns_fail "cannot create a veth pair: $(head -1 "$err")"; return 1; }
    { ip link set "$netns_tag-va" netns "${netns_tag}a" && ip link set "$netns_tag-vb" netns "${netns_tag}b" &&
        ip -n "${netns_tag}a" link set "$netns_tag-va" name cmveth &&
        ip -n "${netns_tag}b" link set "$netns_tag-vb" name cmveth &&
        ip -n "${netns_tag}a" addr add $NETNS_IPA/24 dev cmveth &&
        ip -n "${netns_tag}b" addr add $NETNS_IPB/24 dev cmveth &&
        ip -n "${netns_tag}a" link set lo up && ip -n "${netns_tag}a" link set cmveth up &&
        ip -n "${netns_tag}b" link set lo up && ip -n "${netns_tag}b" link set cmveth up; } 2>"$err" ||
        { netns_fail "setting up the veth link: $(head -1 "$err")" 2; return 2; }
    cat > "$netns_dir/agent" <<AGENT
#!/bin/sh
while [ "\$1" = -p ] || [ "\$1" = -o ]; do shift 2; done
host=\$1; shift
case "\$host" in
    $NETNS_IPA) p=${netns_pid[a]} ;;
    $NETNS_IPB) p=${netns_pid[b]} ;;
    *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec nsenter -t \$p -n -u -i -m --wd="\$PWD" sh -c "\$*"
AGENT
    chmod +x "$netns_dir/agent"
    unset UCX_TLS UCX_NET_DEVICES
    export CM_LAUNCHER=mpirun
    export CM_LAUNCHER_ARGS="--mca plm_rsh_agent $netns_dir/agent --mca oob_tcp_if_include cmveth"
    return 0
}

# netns_on a|b: the command that runs what follows inside that host.
netns_on() {
    echo nsenter -t "${netns_pid[$1]}" -n -u -i -m --wd="$PWD"
}

# netns_hostlist N M: cmrun's --hosts value for N processes on host a and M on host b.
netns_hostlist() {
    echo "$NETNS_IPA:$1,$NETNS_IPB:$2"
}
