#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Hosts and the memory their processes share (rma/cm_rma_node.c, issue 46): the hosts every
# rank computes match the process manager's, a node segment is one memory inside a host and
# separate between hosts, a host's ranks see its leader's copy of the shared region; over
# shared memory and over TCP (UCX then maps nothing: the node segment does not need it); a
# rank the launcher puts beside another but that runs in another PID namespace is refused in
# one line (in another mount namespace only, it shares memory all the same); and across the
# two-host fixture, two hosts of two.
. "$top_srcdir/tests/lib.sh"
for t in shm tcp; do
    if [ $t = shm ]; then use_shm; else use_tcp; fi
    for np in 2 4; do
        note "mp_node, $np ranks on one host, $t"
        expect_ok "$CMRUN" -n $np "$MP/mp_node" --expect-hosts 1
        expect_out "mp_node: $np ranks on 1 hosts OK"
    done
done
use_shm

if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 && unshare -p -f --mount-proc true 2>/dev/null; then
    note "rank 1 in a PID namespace of its own (TCP: UCX's shared memory needs one too): refused in"
    note "one line, once, non-zero, in seconds"
    start=$(date +%s)
    # (TreadMarks: a plain build, so that cmrun takes the shell wrapper as the program.)
    ( use_tcp
      expect_fail env CM_PROTOCOL=treadmarks "$CMRUN" -n 2 sh -c \
          'if [ "$PMIX_RANK" = 1 ]; then exec unshare -p -f --mount-proc "$0"; else exec "$0"; fi' \
          "$MP/mp_node"
      expect_out "ranks 0 and 1 are on one host by the process manager's word, but not by their own"
      [ "$(count_out "by the process manager's word")" = 1 ] || fail "the refusal was said more than once"
    ) || exit 1
    [ $(( $(date +%s) - start )) -le 30 ] || fail "the refusal took more than 30 s"
    note "rank 1 in a mount namespace of its own only: the same host (its files open through /proc)"
    expect_ok env CM_PROTOCOL=treadmarks "$CMRUN" -n 2 sh -c \
        'if [ "$PMIX_RANK" = 1 ]; then exec unshare -m "$0" --expect-hosts 1; else exec "$0" --expect-hosts 1; fi' \
        "$MP/mp_node"
    expect_out "mp_node: 2 ranks on 1 hosts OK"
else
    echo "SKIP (part): a rank in another PID or mount namespace needs root and unshare"
fi

. "$top_srcdir/tests/cluster.sh"
why=$(netns_probe) || { echo "SKIP (part): the two-host fixture: $why"; echo PASS; exit 0; }
cluster_up
note "two hosts of two ranks each"
cluster_run 2,2 "$MP/mp_node" --expect-hosts 2
expect_out "mp_node: 4 ranks on 2 hosts OK"
echo "PASS"
