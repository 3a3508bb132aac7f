#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/bench.sh: cm_bench between vm1 and vm2 next to ucx_perftest's floors measured between
# the same guests over the same transport (run by guest.sh --long; the environment's UCX_*
# settings apply to both). Under TCG absolute times mean little: read the ratios.
# Writes the table to stdout and to /out/bench.txt when /out is there.
set -uo pipefail
: "${CMRUN:?run from guest.sh}" "${CM_BENCH:?run from guest.sh}"
bench=$CM_BENCH
unset CM_BENCH # cmrun passes CM_* to the ranks, which would warn of an unknown setting
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=13421

# perftest TEST SIZE: ucx_perftest's median in microseconds, server on vm2, client here.
perftest() {
    local t=$1 s=$2 v
    port=$((port + 1))
    ssh vm2 "$(printf 'UCX_TLS=%q UCX_NET_DEVICES=%q UCX_IB_GID_INDEX=%q timeout 120 ucx_perftest -p %d' \
        "${UCX_TLS:-}" "${UCX_NET_DEVICES:-}" "${UCX_IB_GID_INDEX:-}" $port)" >/dev/null 2>&1 &
    sleep 2
    v=$(timeout 120 ucx_perftest vm2 -p $port -t "$t" -s "$s" -n 2000 -w 200 2>"$tmp/err" |
        awk '$1 == "Final:" {print $3}')
    wait
    [ -n "$v" ] || { echo "  ! ucx_perftest -t $t: $(tail -1 "$tmp/err")" >&2; v=nan; }
    echo "$v"
}

echo "== cm_bench, rank 0 on vm1 -> rank 1 on vm2 (CHSM, CAS directory)"
CM_PROTOCOL=cashmere CM_VARIANT=CHSM CM_DIRECTORY=cas timeout 2400 "$CMRUN" -n 2 \
    --hosts vm1:1,vm2:1 "$bench" --batches 5 >"$tmp/cm" 2>&1 || { cat "$tmp/cm"; exit 1; }
sed 's/^/  /' "$tmp/cm"
echo "== ucx_perftest floors, the same guests"
put=$(perftest ucp_put_lat 8)
get8=$(perftest ucp_get 8)
get4k=$(perftest ucp_get 4096)
cswap=$(perftest ucp_cswap 8)
fadd=$(perftest ucp_fadd 8)
am=$(perftest ucp_am_lat 8)
echo "  ucp_put_lat 8 B $put us (half a round trip), ucp_get 8 B $get8 us, 4 KiB $get4k us," \
     "ucp_cswap $cswap us, ucp_fadd $fadd us, ucp_am_lat 8 B $am us (half a round trip)"

# row LABEL SIZE FLOOR_US FLOOR_TEXT: the cm_bench line "LABEL ... SIZE measured us ..." next to
# the floor. Latency tests report half a round trip: the floors here are whole ones.
row() {
    awk -v label="$1" -v size="$2" -v floor="$3" -v what="$4" '
        index($0, label) == 1 {
            rest = substr($0, length(label) + 1)
            n = split(rest, f, " +")
            s = (f[2] == "-") ? "-" : f[2] " " f[3]
            if (s != size) next
            m = (f[2] == "-") ? f[3] : f[4]
            r = (floor + 0 > 0) ? sprintf("%.2f", m / floor) : "-"
            printf "%-42s %-6s %11.2f %11.2f %7s  %s\n", label, size, m, floor, r, what
            found = 1; exit
        }
        END { if (!found) printf "%-42s %-6s %11s %11.2f %7s  %s\n", label, size, "(none)", floor, "-", what }
    ' "$tmp/cm"
}
{
    echo "# cm_bench (rank 0 on vm1, rank 1 on vm2) against ucx_perftest between the same guests;"
    echo "# UCX_TLS=${UCX_TLS:-} UCX_NET_DEVICES=${UCX_NET_DEVICES:-}; medians in microseconds"
    printf "%-42s %-6s %11s %11s %7s  %s\n" operation size cm_bench floor ratio "floor is (ucx_perftest)"
    row "put + flush (remote completion)" "8 B" "$(echo "$put" | awk '{print 2 * $1}')" "2 x ucp_put_lat"
    row "get" "8 B" "$get8" "ucp_get 8 B"
    row "get" "4 KiB" "$get4k" "ucp_get 4 KiB"
    row "atomic compare-and-swap" "8 B" "$cswap" "ucp_cswap"
    row "atomic fetch-and-add" "8 B" "$fadd" "ucp_fadd"
    row "message round trip (null)" "8 B" "$(echo "$am" | awk '{print 2 * $1}')" "2 x ucp_am_lat"
    # The goals' floors: a fault is SIGSEGV + mprotect (cm_bench's own figure, this guest)
    # + one get; a barrier of 2 is log2(2) = 1 one-way message.
    sig=$(awk '/^fault: SIGSEGV \+ mprotect/ {for (i = 1; i <= NF; i++) if ($i == "us") {print $(i-1); exit}}' "$tmp/cm")
    row "page fault, remote home, read" "4 KiB" "$(awk -v a="${sig:-0}" -v b="$get4k" 'BEGIN {print a + b}')" "SIGSEGV + mprotect + ucp_get 4 KiB"
    row "page fault, remote home, read, frame cold" "4 KiB" "$(awk -v a="${sig:-0}" -v b="$get4k" 'BEGIN {print a + b}')" "SIGSEGV + mprotect + ucp_get 4 KiB"
    row "directory update, CAS word" "-" "$cswap" "ucp_cswap"
    row "directory update, MCS lock" "-" "$cswap" "ucp_cswap"
    row "lock acquire+release, remote, free" "-" "$(echo "$cswap" | awk '{print 2 * $1}')" "2 x ucp_cswap"
    row "barrier, 2 processes" "-" "$put" "ucp_put_lat (1 one-way message)"
    row "message round trip, target computing" "8 B" "$(echo "$am" | awk '{print 2 * $1}')" "2 x ucp_am_lat"
} > "$tmp/table"
cat "$tmp/table"
[ -d /out ] && cp "$tmp/table" /out/bench.txt
exit 0
