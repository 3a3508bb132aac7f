#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Every protocol across two hosts (tests/cluster.sh: each host its own network, hostname, IPC
# and /dev/shm, a veth link between them), launched by mpirun through an rsh agent, with UCX
# choosing its transports: shared memory inside a host, TCP across.
#   - the ranks run on both hosts and one job mixes the transports (statistics: transports);
#   - every litmus case under every variant of the table whose fabric is "any" (C and NS), with
#     both directory forms (one at each layout), and TreadMarks with fault and scan write
#     detection, at 2 hosts x 1 and 2 hosts x 2 processes;
#   - the variants that map peers' memory (NH) are refused in one line naming the peers on the
#     other host, within seconds;
#   - the nine apps at test size verify at 2 hosts x 2 under TreadMarks and half the variants
#     each (every variant 4 or 5 apps; CMT_CLUSTER_MATRIX=full: every pair);
#   - injected delays across the hosts: messages due by a duration, interrupts counted, an app;
#   - one stress round across the hosts (stress.sh --transports hosts, time-bounded).
# Hosts that share /dev/shm and IPC (the launcher sees two nodes, UCX one machine):
# test_onekernel.sh.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/cluster.sh"
cluster_up
export CM_APPS_DIR="$top_builddir/apps"
stats="$cluster_dir/stats.json"

# two_hosts: mp_init info at 2 + 2 (statistics in $stats) ran in two network namespaces, and the
# launcher counted two nodes.
two_hosts() {
    cluster_run 2,2 CM_STATS="$stats" "$MP/mp_init" info
    [ "$(printf '%s\n' "$out" | grep -o 'netns=net:\[[0-9]*\]' | sort -u | wc -l)" -eq 2 ] ||
        fail "the ranks did not run on two hosts"
    grep -q '"nodes": 2' "$stats" || fail "the statistics do not count two nodes"
}

note "where the ranks run, and over what"
two_hosts
grep -q '"transports": "[^"]*tcp/cmveth' "$stats" || fail "no rank reached another over tcp/cmveth"
grep -Eq '"transports": "[^"]*(posix|sysv)/memory' "$stats" || fail "no rank used shared memory inside its host"

# The variants that run across hosts; TreadMarks in both write detections. At each layout a
# variant runs one directory form, the other at the other layout (CMT_CLUSTER_MATRIX=full: both
# forms at both), so that every variant meets both forms across the hosts.
tmk=("CM_PROTOCOL=treadmarks" "CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=scan")
variants=()
mapped=()
while read -r v avail rest; do
    case "$rest" in
        *fabric=map*) mapped+=("$v") ;;
        *fabric=any*) variants+=("$v") ;;
        *) fail "cm_info --variants: no fabric for $v" ;;
    esac
done < <("$CM_INFO" --variants)
[ ${#mapped[@]} -gt 0 ] || fail "cm_info --variants lists no variant that maps peers' memory"
[ ${#variants[@]} -gt 0 ] || fail "cm_info --variants lists no variant that runs across hosts"
full=0
case "${CMT_CLUSTER_MATRIX:=rotate}" in
    full) full=1 ;; rotate) ;; *) fail "CMT_CLUSTER_MATRIX='$CMT_CLUSTER_MATRIX': rotate or full" ;;
esac

l=0
for layout in 1,1 2,2; do
    settings=("${tmk[@]}")
    for i in "${!variants[@]}"; do
        for d in 0 1; do
            [ $full = 1 ] || [ $(((i + l) % 2)) = $d ] || continue
            dir=(cas mcs)
            settings+=("CM_PROTOCOL=cashmere CM_VARIANT=${variants[$i]} CM_DIRECTORY=${dir[$d]}")
        done
    done
    for setting in "${settings[@]}"; do
        note "litmus, hosts x processes ${layout/,/ + }, $setting"
        cluster_run $layout $setting "$MP/mp_litmus" all --iters 20 --seed 7
        expect_out "^litmus all: OK$"
    done
    l=$((l + 1))
done

for v in "${mapped[@]}"; do
    note "$v across hosts: refused, naming the peers on the other host"
    start=$(date +%s)
    cluster_fail 2,2 CM_PROTOCOL=cashmere CM_VARIANT=$v "$MP/mp_litmus" mp --iters 5
    [ $(($(date +%s) - start)) -lt 30 ] || fail "the refusal took $(($(date +%s) - start)) s"
    expect_out "CM_VARIANT=$v maps each page onto its home's memory, but 2 peers of rank 0 are not mapped here: ranks 2 \\(tcp/cmveth\\), 3 \\(tcp/cmveth\\)"
    [ "$(count_out 'error: CM_VARIANT=')" = 1 ] || fail "the refusal came $(count_out 'error: CM_VARIANT=') times"
    [ "$(count_out 'error:')" = 1 ] || fail "the refusal is not the only error line"
done

# Every app under TreadMarks (both detections) and half the variants, the other half at the
# next app (one-host runs of every pair: test_apps.sh), so every variant runs 4 or 5 apps here.
a=0
for app in sor sor_l gauss fft mgrid em3d water mp3d appbt; do
    settings=("${tmk[@]}")
    for i in "${!variants[@]}"; do
        [ $full = 1 ] || [ $(((i + a) % 2)) = 0 ] || continue
        settings+=("CM_PROTOCOL=cashmere CM_VARIANT=${variants[$i]} CM_DIRECTORY=cas")
    done
    a=$((a + 1))
    for setting in "${settings[@]}"; do
        note "$app at test size, 2 hosts x 2, $setting"
        cluster_run 2,2 $setting $app --size test
        expect_out "^VERIFY OK$"
    done
done
# Before tm_fini waited for the others, 8 of 20 such runs freed memory still in use (glibc's
# "double free or corruption" after the program's last line; mp_finale.c).
note "a write after the last barrier across the hosts, 2 + 2, 5 runs under each TreadMarks setting"
for setting in "${tmk[@]}"; do
    for _ in 1 2 3 4 5; do
        cluster_run 2,2 $setting "$MP/mp_finale"
        expect_out "^mp_finale: 4 processes"
    done
done
# Across hosts a message says when it is due as a duration from its arrival (the hosts' clocks
# are not one): with the overhead alone it is due on leaving, never a wait of 2^64 ns.
note "injected delays across the hosts (CM_NET_*): messages due by duration, interrupts at the target"
cluster_run 1,1 CM_NET_OVERHEAD=50us "$MP/mp_delay"
expect_out "^mp_delay: OK"
cluster_run 1,1 CM_NET_LATENCY=200us CM_NET_INTERRUPT=100us CM_NET_OCCUPANCY=10us "$MP/mp_delay"
expect_out "message round trips: .* >= 6400000 ns injected" # 20 x (2 x 10 + 200 + 100) us
expect_out "^mp_delay: 20 interrupts at the target"
cluster_run 2,2 CM_PROTOCOL=treadmarks CM_NET_OVERHEAD=20us CM_NET_INTERRUPT=20us "$top_builddir/apps/water" --size test
expect_out "^VERIFY OK$"
note "one stress round across the hosts (tests/mp/stress.sh, 2 + 2 ranks; no run starts after 45 s)"
seed=()
[ -z "${CMT_STRESS_SEED-}" ] || seed=(--seed "$CMT_STRESS_SEED")
CMT_STRESS_HOSTS="$CLUSTER_IPA $CLUSTER_IPB" CMT_STRESS_PREFIX="$(cluster_on a)" \
    "$BASH" "$top_srcdir/tests/mp/stress.sh" --transports hosts --procs 4 --rounds 1 \
    --budget 45 "${seed[@]}" || fail "the stress round across hosts"

echo "PASS"
