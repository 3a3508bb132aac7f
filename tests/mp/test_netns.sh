#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Two "hosts" on one machine: network namespaces joined by a veth pair on a
# private link, the job launched across them, one-sided traffic over TCP only.
# The test creates and removes everything it uses.
. "$top_srcdir/tests/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces (ip netns add)"
command -v ip >/dev/null 2>&1 || skip "iproute2 (ip) is not installed"
command -v mpirun >/dev/null 2>&1 || skip "the two-host run uses Open MPI's mpirun with an rsh agent"

tag=$$
nsa=cmt$tag-a; nsb=cmt$tag-b
ipa=10.213.77.1; ipb=10.213.77.2
tmp=$(mktemp -d)
cleanup() {
    ip netns del "$nsa" 2>/dev/null
    ip netns del "$nsb" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

ip netns add "$nsa" 2>"$tmp/err" || skip "cannot create a network namespace here: $(cat "$tmp/err")"
ip netns add "$nsb" || fail "ip netns add $nsb"
ip netns exec "$nsa" true 2>"$tmp/err" || skip "cannot enter a network namespace here: $(head -1 "$tmp/err")"
ip link add cmt$tag-va type veth peer name cmt$tag-vb || skip "cannot create a veth pair here"
ip link set cmt$tag-va netns "$nsa" && ip link set cmt$tag-vb netns "$nsb" || fail "moving veth ends"
# Same device name in both namespaces, so one UCX_NET_DEVICES fits both hosts.
ip -n "$nsa" link set cmt$tag-va name cmveth && ip -n "$nsb" link set cmt$tag-vb name cmveth || fail "rename"
ip -n "$nsa" addr add $ipa/24 dev cmveth && ip -n "$nsb" addr add $ipb/24 dev cmveth || fail "addresses"
for ns in "$nsa" "$nsb"; do
    ip -n "$ns" link set lo up && ip -n "$ns" link set cmveth up || fail "link up in $ns"
done

# mpirun starts its daemon on the other "host" through this agent instead of ssh.
# ssh's options (CM_LAUNCHER_ARGS' plm_rsh_args) come first: the agent notes and skips them.
cat > "$tmp/agent" <<AGENT
#!/bin/sh
while [ "\$1" = -p ] || [ "\$1" = -o ]; do
    echo "\$1 \$2" >> "$tmp/ssh_options"; shift 2
done
host=\$1; shift
case "\$host" in
    $ipa) ns=$nsa ;;
    $ipb) ns=$nsb ;;
    *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x "$tmp/agent"

use_tcp cmveth
leave_slurm # mpirun's own host list, not an allocation's nodes
export CM_LAUNCHER=mpirun
# Quoted as a user passes ssh options (cmrun splits it as a shell would).
export CM_LAUNCHER_ARGS="--mca plm_rsh_agent $tmp/agent --mca oob_tcp_if_include cmveth \
--mca plm_rsh_args '-p 2222 -o StrictHostKeyChecking=no'"

note "4 ranks on two namespaces: where each rank runs"
expect_ok ip netns exec "$nsa" "$CMRUN" -n 4 --hosts $ipa:2,$ipb:2 "$MP/mp_init" info
[ "$(printf '%s\n' "$out" | grep -o 'netns=net:\[[0-9]*\]' | sort -u | wc -l)" -eq 2 ] ||
    fail "ranks did not run in two network namespaces"

[ "$(sort -u "$tmp/ssh_options" 2>/dev/null | paste -sd,)" = "-o StrictHostKeyChecking=no,-p 2222" ] ||
    fail "the ssh options in CM_LAUNCHER_ARGS did not reach the remote start: $(cat "$tmp/ssh_options" 2>/dev/null)"

note "a hostfile through CM_LAUNCHER_ARGS instead of --hosts"
printf '%s slots=2\n' $ipa $ipb > "$tmp/hostfile"
expect_ok env CM_LAUNCHER_ARGS="$CM_LAUNCHER_ARGS --hostfile $tmp/hostfile" \
    ip netns exec "$nsa" "$CMRUN" -n 4 "$MP/mp_init" info
[ "$(printf '%s\n' "$out" | grep -o 'netns=net:\[[0-9]*\]' | sort -u | wc -l)" -eq 2 ] ||
    fail "ranks did not run on both hosts of the hostfile"

note "one-sided layer across the veth link"
expect_ok ip netns exec "$nsa" "$CMRUN" -n 4 --hosts $ipa:2,$ipb:2 "$MP/mp_rma" \
    --expect-mapped no --expect-thread yes --iters 60
expect_out "mp_rma: 4 ranks OK"

note "targets blocked outside the library on the other host"
expect_ok ip netns exec "$nsa" "$CMRUN" -n 2 --hosts $ipa:1,$ipb:1 "$MP/mp_progress" "$tmp/fifo" \
    blocked wait barrier finalize
expect_out "blocked: 1 targets served while blocked in read"

note "PAUSE and condition waits sleep until a process of either host wakes them"
for setting in "CM_PROTOCOL=cashmere CM_VARIANT=CHSM" "CM_PROTOCOL=treadmarks"; do
    expect_ok ip netns exec "$nsa" env $setting CM_STATS="$tmp/sleep.json" "$CMRUN" -n 4 \
        --hosts $ipa:2,$ipb:2 "$top_builddir/tests/compat/p_sync" 4 sleep
    expect_out "^p_sync: 3 waiters woken, 0 not: OK$"
    expect_slept "$tmp/sleep.json" 80
done
echo "PASS"
