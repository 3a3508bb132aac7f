#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The two-level protocol (CM_PROTOCOL=twolevel, issue 46): the processes of a host share one
# copy of each page; the protocol runs between hosts.
#   - one host: every litmus case at 2 and 4 processes over shared memory and at 4 over TCP
#     (the host's copy needs no transport), the nine apps at 4, the TreadMarks-style and
#     PARMACS-style programs at 4; nothing crosses a host, so no page is got or diffed;
#   - a rank that dies (killed, or killed holding a lock): the job ends within seconds, the
#     launcher's line names it once, and nothing is left in /dev/shm (the host's memory is in
#     memory files with no name: a later job can neither find nor reuse it);
#   - two hosts (tests/cluster.sh): every litmus case at 1+1, 2+2 and 3+1 (and 2+2 without a
#     progress thread: waits on the host's memory then progress the worker), with pages got from
#     homes, outgoing and incoming diffs and homes claimed on first touch counted, and, where a
#     host runs several processes, faults that map what another process of the host brought in
#     (no get); at 2+2 with homes left round robin (CM_FIRST_TOUCH=no: none moves); the apps
#     at 2+2.
. "$top_srcdir/tests/lib.sh"
C="$top_builddir/tests/compat"
stats=$(mktemp)
input=$(mktemp)
trap 'rm -f "$stats" "$input"' EXIT
export CM_PROTOCOL=twolevel

use_shm
for np in 2 4; do
    note "one host, $np processes: every litmus case"
    expect_ok env CM_STATS="$stats" "$CMRUN" -n $np "$MP/mp_litmus" all --iters 20
    expect_out "^litmus all: OK$"
    [ "$(stats_total pages_fetched "$stats")" = 0 ] || fail "a page was got on a host alone"
    [ "$(stats_total read_faults "$stats")" = 0 ] || fail "a fault on a host alone"
done
note "one host, 4 processes over TCP (the host's copy is shared all the same)"
( use_tcp; expect_ok "$CMRUN" -n 4 "$MP/mp_litmus" all --iters 20; expect_out "^litmus all: OK$" ) ||
    exit 1
note "one host, 4 processes: the apps at test size"
for app in sor gauss fft water mgrid em3d mp3d appbt sor_l; do
    expect_ok env CM_APPS_DIR="$top_builddir/apps" "$CMRUN" -n 4 "$app" --size test
    expect_out "VERIFY OK"
done
note "one host, 4 processes: TreadMarks-style and PARMACS-style programs"
expect_ok "$CMRUN" -n 4 "$C/tmk_jacobi" 12
expect_out "^tmk_jacobi: 4 processes, 12 iterations: OK$"
echo "100000 4" > "$input"
expect_ok "$CMRUN" -n 4 --stdin "$input" "$C/p_sum"
expect_out "^p_sum: sum 49950000 \(expected 49950000\)"
expect_ok "$CMRUN" -n 4 "$C/p_locks" 4
expect_out "^p_locks: 16384 increments under 65536 locks \(expected 16384\): OK$"
expect_ok "$CMRUN" -n 4 "$C/p_sync" 4
expect_out "^p_sync: relay 6 \(expected 6\), 0 bad tasks/queue: OK$"

note "cm_info --memory: what a host holds, whatever its number of processes"
expect_ok env CM_PROTOCOL=twolevel CM_SHARED_SIZE=1g "$top_builddir/src/tools/cm_info" --memory -n 4
expect_out "^memory per host if every page is touched: 2.0 GiB at most \(the copy: 1.0 GiB\)$"

note "a rank of the host killed (kill -9), mid-run and holding a lock: the job ends within seconds"
note "and leaves no shared segment behind (the host's memory is in files with no name)"
shm_before=$(ls -A /dev/shm 2>/dev/null | sort)
for mode in die-kill die-kill-lock; do
    start=$SECONDS
    run 60 "$CMRUN" -n 3 "$MP/mp_init" $mode
    [ "$rc" -ne 0 ] || fail "$mode: job exited 0"
    [ $((SECONDS - start)) -le 15 ] || fail "$mode: took $((SECONDS - start)) s"
    [ "$(count_out "^cmrun: error: rank 1 \\(pid [0-9]+\\) (died without a word of its own|was killed by signal 9)")" -eq 1 ] ||
        fail "$mode: not one line naming rank 1"
done
left=$(comm -13 <(echo "$shm_before") <(ls -A /dev/shm 2>/dev/null | sort))
[ -z "$left" ] || fail "killed jobs left in /dev/shm: $(echo $left)"

. "$top_srcdir/tests/cluster.sh"
why=$(netns_probe) || { echo "SKIP (part): the two-host fixture: $why"; echo PASS; exit 0; }
cluster_up
unset UCX_TLS UCX_NET_DEVICES
for spec in 1,1 2,2 3,1; do
    note "two hosts, $spec processes: every litmus case"
    cluster_run $spec CM_PROTOCOL=twolevel CM_STATS="$cluster_dir/s.json" "$MP/mp_litmus" all --iters 20
    expect_out "^litmus all: OK$"
    for c in pages_fetched diffs_out diffs_in home_migrations; do
        v=$(stats_total $c "$cluster_dir/s.json")
        echo "  $c $v"
        [ "${v:-0}" -gt 0 ] || fail "no $c across two hosts"
    done
    if [ $spec != 1,1 ]; then
        v=$(stats_total local_maps "$cluster_dir/s.json")
        echo "  local_maps $v"
        [ "${v:-0}" -gt 0 ] || fail "no fault mapped the host's copy as it was"
    fi
done
note "two hosts, 1+1: a lock stays at the host that took it until the other host asks"
cluster_run 1,1 CM_PROTOCOL=twolevel CM_STATS="$cluster_dir/s.json" "$MP/mp_litmus" keep --iters 20
expect_out "^litmus keep: OK$"
l=$(stats_total lock_acquires_local "$cluster_dir/s.json")
r=$(stats_total lock_acquires_remote "$cluster_dir/s.json")
g=$(stats_total lock_grants "$cluster_dir/s.json")
echo "  acquires inside the host $l, between hosts $r, grants $g"
# Rank 0: its first acquire between hosts, 19 inside (nobody asked); rank 1: one between hosts,
# granted by rank 0's host.
[ "$l" = 19 ] && [ "$r" = 2 ] && [ "$g" = 1 ] ||
    fail "expected 19 acquires inside the host, 2 between hosts and 1 grant"
note "two hosts, 2+2, homes round robin (CM_FIRST_TOUCH=no): no home moves"
cluster_run 2,2 CM_PROTOCOL=twolevel CM_FIRST_TOUCH=no CM_STATS="$cluster_dir/s.json" "$MP/mp_litmus" all --iters 20
expect_out "^litmus all: OK$"
v=$(stats_total home_migrations "$cluster_dir/s.json")
[ "${v:-0}" -eq 0 ] || fail "$v homes moved with CM_FIRST_TOUCH=no"
note "two hosts, 2+2, no progress thread: the host's waits keep the worker going themselves"
cluster_run 2,2 CM_PROTOCOL=twolevel CM_PROGRESS_THREAD=off "$MP/mp_litmus" all --iters 20
expect_out "^litmus all: OK$"
note "two hosts, 2+2: the apps at test size"
for app in sor gauss fft water mgrid em3d mp3d appbt sor_l; do
    cluster_run 2,2 CM_PROTOCOL=twolevel CM_APPS_DIR="$top_builddir/apps" "$app" --size test
    expect_out "VERIFY OK"
done
echo "PASS"
