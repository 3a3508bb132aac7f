#!/bin/bash
# Delay injection is real waiting: lower bounds only (they hold under any load).
. "$top_srcdir/tests/lib.sh"
use_shm
note "latency 1ms + overhead 200us + bandwidth 20MB/s"
expect_ok env CM_NET_LATENCY=1ms CM_NET_OVERHEAD=200us CM_NET_BANDWIDTH=20MB \
    "$CMRUN" -n 2 "$MP/mp_delay"
expect_out "mp_delay: OK"
expect_out "1 MiB at the cap"
note "TCP, latency only"
use_tcp lo
expect_ok env CM_NET_LATENCY=500us "$CMRUN" -n 2 "$MP/mp_delay"
expect_out "mp_delay: OK"
echo "PASS"
