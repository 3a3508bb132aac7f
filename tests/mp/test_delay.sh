#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Delay injection is real waiting: lower bounds only (they hold under any load). Under it
# every doubled store is charged as a put; without it, stores to mapped homes bypass RMA.
. "$top_srcdir/tests/lib.sh"
use_shm
note "latency 1ms + overhead 200us + bandwidth 20MB/s + occupancy 50us + interrupt 300us"
expect_ok env CM_NET_LATENCY=1ms CM_NET_OVERHEAD=200us CM_NET_BANDWIDTH=20MB \
    CM_NET_OCCUPANCY=50us CM_NET_INTERRUPT=300us "$CMRUN" -n 2 "$MP/mp_delay"
expect_out "mp_delay: OK"
expect_out "1 MiB at the cap"
expect_out "message round trips: .* >= 36016000 ns injected" # 20 x (2 x (200 + 50 + 0.4) + 1000 + 300) us
expect_out "mp_delay: 20 interrupts at the target"
note "no interrupt injected: none counted"
expect_ok env CM_NET_LATENCY=10us "$CMRUN" -n 2 "$MP/mp_delay"
expect_out "mp_delay: 0 interrupts at the target"

# cm_bench shows each setting take effect: its 'injected:' rows beside the model's figure, here
# only their presence and the model's arithmetic (no timing is asserted).
note "cm_bench --link: the injected rows and the model's figures"
expect_ok env CM_NET_OVERHEAD=2us CM_NET_OCCUPANCY=3us CM_NET_LATENCY=10us CM_NET_INTERRUPT=7us \
    CM_NET_BANDWIDTH=100MB "$CMRUN" -n 2 "$top_builddir/src/tools/cm_bench" --link --batches 3
# get 8 B: 2 + 3 + 0.08 + 10 (+ 0: mapped, nothing at the target runs) = 15.08 us
expect_out "^injected: get  *8 B .* 15\.080 us .* model"
# get 64 KiB: 2 + 16 x 3 + 655.36 + 10 = 715.36 us
expect_out "^injected: get  *64 KiB .* 715\.360 us .* model"
# round trip: 2 x (2 + 3 + 0.08) + 10 + 7 = 27.16 us
expect_out "^injected: message round trip  *8 B .* 27\.160 us .* model"
expect_out "interrupt 7000 ns"
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
