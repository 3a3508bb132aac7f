#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Hosts that are namespaces of one kernel: the launcher sees two nodes, UCX one machine.
# tests/cluster.sh's "kernel" fixture: each host its own network namespace (and mount, for its
# /sys/class/net), but the machine's hostname, IPC namespace and /dev/shm, as containers that
# share the host's IPC, or cluster nodes that report one hostname, can look. UCX then reaches
# every peer through shared memory, and its wake-up signal (a datagram to an abstract Unix
# socket, which belongs to a network namespace) never reaches a peer of the other "host":
# TreadMarks hung 4 of 4 times here (tmk_queue: a process polling its flag between local lock
# acquires never served the forwarded request). The doorbell (rma/cm_rma_bell.c) wakes them.
#   - what the launcher and UCX each see; tmk_queue under TreadMarks (fault, scan), the
#     doorbells rung; every wait blocking; the litmus suite under every protocol and variant,
#     both directory forms; atomics that are messages (UCX_ATOMIC_MODE=device: sleeps poll);
#     heartbeats across the namespaces (CM_PEER_TIMEOUT=3s on every run); a stress round;
#   - the "shared" fixture (each host its own hostname, the same IPC and /dev/shm);
#   - the opposite mismatch: the launcher says one host, UCX finds no shared memory (TCP).
# CMT_ONEKERNEL_MATRIX=full runs both directory forms of every variant (default: alternating).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/cluster.sh"
hb=CM_PEER_TIMEOUT=3s

# queue SETTING...: tmk_queue at 2 + 2 (the hang's reproducer); statistics in $tmp/q.json.
queue() {
    cluster_run 2,2 $hb CM_STATS="$tmp/q.json" "$@" "$top_builddir/tests/compat/tmk_queue"
    expect_out "^tmk_queue: 4 processes, 200 nodes listed: OK$"
}

cluster_up kernel
tmp=$cluster_dir # both hosts see it (host b has a /tmp of its own)
note "one kernel, two launcher hosts: what each sees"
cluster_run 2,2 CM_STATS="$tmp/i.json" "$MP/mp_init" info
[ "$(printf '%s\n' "$out" | grep -o 'netns=net:\[[0-9]*\]' | sort -u | wc -l)" -eq 2 ] ||
    fail "the ranks did not run in two network namespaces"
[ "$(grep -c '"local_procs": 2' "$tmp/i.json")" = 4 ] ||
    fail "the launcher did not put 2 processes on each node: $(grep -o '"local_procs": [0-9]*' "$tmp/i.json")"
[ "$(grep -o '"host": "[^"]*"' "$tmp/i.json" | sort -u | wc -l)" -eq 1 ] ||
    fail "the hosts do not share one hostname: $(grep -o '"host": "[^"]*"' "$tmp/i.json" | sort -u)"
grep -o '"transports": "[^"]*"' "$tmp/i.json" | sort | uniq -c | sed 's/^/  /'
if grep -q '"transports": "[^"]*tcp' "$tmp/i.json"; then
    fail "UCX reached a peer over TCP: the hosts do not share /dev/shm"
fi

for s in "" CM_TMK_WRITE_DETECT=scan; do
    note "TreadMarks${s:+, $s}: a process polls its flag between local lock acquires (tmk_queue)"
    queue CM_PROTOCOL=treadmarks $s
    bells=$(stats_total wake_bells "$tmp/q.json")
    [ "${bells:-0}" -gt 0 ] || fail "no doorbell rung: the hang's path was not taken"
    echo "  $bells doorbells rung"
done

note "TreadMarks, every wait blocking: woken across the namespaces, never late"
queue CM_PROTOCOL=treadmarks CM_WAIT=block CM_WAIT_SPIN=0
[ "$(stats_total wait_blocks "$tmp/q.json")" -gt 0 ] || fail "no wait slept"
[ "$(stats_total wait_missed "$tmp/q.json")" = 0 ] || fail "a sleep outlasted its wake-up"

settings=("CM_PROTOCOL=treadmarks" "CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=scan")
i=0
for v in $("$CM_INFO" --variants | awk '$2 == "available" {print $1}'); do
    for dir in cas mcs; do
        want=cas
        [ $((i % 2)) = 1 ] && want=mcs
        [ "${CMT_ONEKERNEL_MATRIX:-alternate}" = full ] || [ $dir = $want ] || continue
        settings+=("CM_PROTOCOL=cashmere CM_VARIANT=$v CM_DIRECTORY=$dir")
    done
    i=$((i + 1))
done
for setting in "${settings[@]}"; do
    note "litmus, 2 + 2, $setting"
    cluster_run 2,2 $hb $setting "$MP/mp_litmus" all --iters 20 --seed 7
    expect_out "^litmus all: OK$"
done

note "atomics as messages (UCX_ATOMIC_MODE=device): nothing can wake, sleeps look again"
cluster_run 2,2 $hb UCX_ATOMIC_MODE=device CM_LOG_LEVEL=info "$MP/mp_litmus" all --iters 10 --seed 3
expect_out "^litmus all: OK$"
expect_out "cannot wake it: sleeps on the transport look again every"

note "one stress round across the namespaces (4 ranks; no run starts after 60 s)"
seed=()
[ -z "${CMT_STRESS_SEED-}" ] || seed=(--seed "$CMT_STRESS_SEED")
CMT_STRESS_HOSTS="$CLUSTER_IPA $CLUSTER_IPB" CMT_STRESS_PREFIX="$(cluster_on a)" \
    CMT_STRESS_HOSTS_MAPPED=1 \
    "$BASH" "$top_srcdir/tests/mp/stress.sh" --transports hosts --procs 4 --rounds 1 \
    --budget 60 "${seed[@]}" || fail "the stress round across the namespaces"

# Containers with hostnames of their own that share the host's IPC and /dev/shm.
cluster_down
cluster_up shared
tmp=$cluster_dir
note "hosts of their own names sharing /dev/shm: TreadMarks and Cashmere"
queue CM_PROTOCOL=treadmarks
for setting in "CM_PROTOCOL=treadmarks" "CM_PROTOCOL=cashmere"; do
    cluster_run 2,2 $hb $setting "$MP/mp_litmus" all --iters 20 --seed 7
    expect_out "^litmus all: OK$"
done
cluster_down

# The launcher says one host, UCX finds none of its shared-memory transports.
note "one launcher host, TCP only: TreadMarks and Cashmere at 4 processes"
use_tcp lo
for setting in "CM_PROTOCOL=treadmarks" "CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=scan" \
               "CM_PROTOCOL=cashmere"; do
    expect_ok env $setting "$CMRUN" -n 4 "$top_builddir/tests/compat/tmk_queue"
    expect_out "^tmk_queue: 4 processes, 200 nodes listed: OK$"
    expect_ok env $setting "$CMRUN" -n 4 "$MP/mp_litmus" all --iters 20 --seed 7
    expect_out "^litmus all: OK$"
done
echo "PASS"
