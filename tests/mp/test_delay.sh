#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Delay injection is real waiting: lower bounds only (they hold under any load). Under it
# every doubled store is charged as a put; without it, stores to mapped homes bypass RMA.
. "$top_srcdir/tests/lib.sh"
use_shm
note "latency 1ms + overhead 200us + bandwidth 20MB/s"
expect_ok env CM_NET_LATENCY=1ms CM_NET_OVERHEAD=200us CM_NET_BANDWIDTH=20MB \
    "$CMRUN" -n 2 "$MP/mp_delay"
expect_out "mp_delay: OK"
expect_out "1 MiB at the cap"
# Doubled stores to a home whose memory is mapped here are plain stores (no RMA put), except
# under delay injection, which must charge every one of them as a put.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
note "CHSN over shared memory: doubled stores bypass RMA without delays, go through it with them"
expect_ok env CM_VARIANT=CHSN CM_STATS="$tmp/direct.json" "$CMRUN" -n 2 "$top_builddir/apps/sor" \
    --size test
expect_ok env CM_VARIANT=CHSN CM_NET_LATENCY=1us CM_STATS="$tmp/delay.json" "$CMRUN" -n 2 \
    "$top_builddir/apps/sor" --size test
fd=$(stats_total forwarded_puts "$tmp/direct.json"); pd=$(stats_total puts "$tmp/direct.json")
fl=$(stats_total forwarded_puts "$tmp/delay.json"); pl=$(stats_total puts "$tmp/delay.json")
[ "${fd:-0}" -gt 0 ] && [ "${fl:-0}" -gt 0 ] || fail "no doubled stores forwarded ($fd, $fl)"
[ "$pd" -lt "$fd" ] || fail "without delays $pd puts for $fd doubled stores: not stored directly"
[ "$pl" -ge "$fl" ] || fail "with 1us latency only $pl puts for $fl doubled stores: some bypassed the delay"

note "TCP, latency only"
use_tcp lo
expect_ok env CM_NET_LATENCY=500us "$CMRUN" -n 2 "$MP/mp_delay"
expect_out "mp_delay: OK"
echo "PASS"
