#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# CM_PAGE_SIZE, the coherence unit (issue 48's page-size panel): every protocol gives right
# answers at 8 and 64 KiB, its statistics say the unit they ran with, the region is divided
# into pages of it, and a unit that is not a power of two from the system's page to 64 KiB is refused once, before any rank runs.
. "$top_srcdir/tests/lib.sh"
use_shm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in cashmere treadmarks twolevel; do
    for ps in 8k 64k; do
        note "$p at CM_PAGE_SIZE=$ps"
        expect_ok env CM_PROTOCOL=$p CM_PAGE_SIZE=$ps CM_STATS="$tmp/$p-$ps.json" \
            "$CMRUN" -n 3 "$top_builddir/apps/water" --size test
        expect_out "^VERIFY OK$"
        want=$(( ${ps%k} * 1024 ))
        grep -q "\"page_size\": $want" "$tmp/$p-$ps.json" || fail "$p: the statistics do not say page_size $want"
    done
done
note "the region is divided into pages of the unit (cm_info --memory)"
expect_ok env CM_PAGE_SIZE=64k CM_SHARED_SIZE=1g "$CM_INFO" --memory
expect_out "16384 pages of 65536 bytes"
note "bad units refused"
for bad in 3000 2k 128k; do
    expect_fail env CM_PAGE_SIZE=$bad "$CMRUN" -n 2 "$top_builddir/apps/sor" --size test
    expect_out "CM_PAGE_SIZE=.*power of two"
    [ "$(printf '%s\n' "$out" | grep -c 'CM_PAGE_SIZE=')" = 1 ] || fail "CM_PAGE_SIZE=$bad: said more than once"
done
echo "PASS"
