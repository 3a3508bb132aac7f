#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The litmus tests over TCP only: every protocol action is a one-sided
# operation that UCX emulates in software at the target.
. "$top_srcdir/tests/lib.sh"
use_tcp lo
# Every directory form at 3 processes (rare races show at 3 or more over TCP); at 2 and 4 one
# form each, in turn over the variants, so that every form still runs at 2 and at 4.
forms=(cas mcs add)
i=0
for variant in $(available_variants); do
    i=$((i + 1))
    for np in 2 3 4; do
        dirs=("${forms[@]}")
        [ $np = 3 ] || dirs=("${forms[(i + np) % 3]}")
        for dir in "${dirs[@]}"; do
            note "TCP, $variant, $np processes, $dir directory"
            expect_ok env CM_VARIANT=$variant CM_DIRECTORY=$dir "$CMRUN" -n $np "$MP/mp_litmus" \
                all --iters 20 --seed $np
            expect_out "^litmus all: OK$"
        done
    done
done
note "TCP: software forwarding batched per home by default (CHS*), as stored, at the release"
for fwd in "" store release; do
    case $fwd in
        store)   want='as stored \(CM_FORWARD=store\)' ;;
        release) want='at the release, .*\(CM_FORWARD=release\)' ;;
        *)       want='as stored, batched per home across the network \(CM_FORWARD=batch\)' ;;
    esac
    expect_ok env ${fwd:+CM_FORWARD=$fwd} CM_VARIANT=CHSN CM_STATS=table "$CMRUN" -n 3 "$MP/mp_litmus" \
        all --iters 20 --seed 5
    expect_out "^litmus all: OK$"
    expect_out "CHSN: .*forwarded $want"
done
note "TCP: invalidated pages refetched at the acquire (used; auto while it pays, CAS form only) or left"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# FORM/REFETCH, and what the statistics must say: refetched (some used, some not: blocks read
# every round are used after their refetch, those read every other round are not) or left,
# with the description's reason (under the add form a fault joins and copies at once).
for c in "cas/paper:invalidated pages: leave" "cas/used:invalidated pages: refetched" \
         "cas/auto:invalidated pages: refetched" "add/used:invalidated pages: refetched" \
         "add/auto:the add form's fault joins and copies in one round trip"; do
    form=${c%%/*} rf=${c#*/} rf=${rf%%:*} says=${c#*:}
    expect_ok env CM_REFETCH=$rf CM_VARIANT=CHSN CM_DIRECTORY=$form CM_STATS="$tmp/rf.json" \
        "$CMRUN" -n 3 "$MP/mp_litmus" reuse --iters 20 --seed 5
    expect_out "^litmus reuse: .* OK$"
    refetched=$(stats_total pages_refetched "$tmp/rf.json") used=$(stats_total refetch_used "$tmp/rf.json")
    note "$form form, CM_REFETCH=$rf: $refetched pages refetched, $used of them used before their next invalidation"
    if [ "$says" = "invalidated pages: refetched" ]; then
        [ -n "$refetched" ] && [ -n "$used" ] && [ "$used" -gt 0 ] && [ "$refetched" -gt "$used" ] ||
            fail "$form form, CM_REFETCH=$rf: expected refetched pages, some used and some not"
    else
        [ "$refetched" = 0 ] || fail "$form form, CM_REFETCH=$rf refetched $refetched pages"
    fi
    grep -q "$says" "$tmp/rf.json" || fail "the statistics do not say '$says'"
done
note "TCP, TreadMarks: diffs of pages used since their validation fetched at the acquire, or at the access"
for rf in paper used; do
    expect_ok env CM_PROTOCOL=treadmarks CM_REFETCH=$rf CM_STATS="$tmp/tf.json" \
        "$CMRUN" -n 3 "$MP/mp_litmus" reuse --iters 20 --seed 5
    expect_out "^litmus reuse: .* OK$"
    refetched=$(stats_total pages_refetched "$tmp/tf.json") used=$(stats_total refetch_used "$tmp/tf.json")
    note "TreadMarks, CM_REFETCH=$rf: $refetched pages brought up to date at acquires, $used of them used"
    if [ "$rf" = paper ]; then
        [ "$refetched" = 0 ] || fail "TreadMarks, CM_REFETCH=paper: $refetched pages prefetched"
    else
        [ -n "$refetched" ] && [ -n "$used" ] && [ "$used" -gt 0 ] && [ "$refetched" -gt "$used" ] ||
            fail "TreadMarks, CM_REFETCH=used: expected prefetched pages, some used and some not"
        grep -q 'fetched at the acquire, in one batch' "$tmp/tf.json" || fail "the statistics do not say CM_REFETCH"
    fi
done
note "TCP: prefetch on a miss (CM_PREFETCH=8): Cashmere joins and copies a block, TreadMarks asks for its diffs"
for proto in cashmere treadmarks; do
    expect_ok env CM_PROTOCOL=$proto CM_PREFETCH=8 CM_VARIANT=CHSN CM_DIRECTORY=cas CM_STATS="$tmp/pf.json" \
        "$CMRUN" -n 3 "$MP/mp_litmus" all --iters 20 --seed 7
    expect_out "^litmus all: OK$"
    pf=$(stats_total pages_prefetched "$tmp/pf.json") used=$(stats_total prefetch_used "$tmp/pf.json")
    note "$proto, CM_PREFETCH=8: $pf pages prefetched, $used of them used before their next invalidation"
    [ -n "$pf" ] && [ "$pf" -gt 0 ] && [ -n "$used" ] && [ "$used" -le "$pf" ] ||
        fail "$proto, CM_PREFETCH=8: expected prefetched pages (got '$pf', used '$used')"
    grep -q 'a miss \(prefetches its block\|asks for the diffs of its block\) of 8 pages' "$tmp/pf.json" ||
        fail "$proto: the statistics do not say CM_PREFETCH"
done
note "TCP, the add form: a read fault's page copy goes out with its join, and holds"
expect_ok env CM_VARIANT=CHSN CM_DIRECTORY=add CM_STATS="$tmp/ec.json" \
    "$CMRUN" -n 3 "$MP/mp_litmus" reuse --iters 20 --seed 5
expect_out "^litmus reuse: .* OK$"
faults=$(stats_total read_faults "$tmp/ec.json") early=$(stats_total early_copies "$tmp/ec.json")
stale=$(stats_total early_stale "$tmp/ec.json") hj=$(stats_total home_joins "$tmp/ec.json")
note "$faults read faults, $early copies with the join, $stale of them got again, $hj joins of pages homed here not waited for"
# With fx.as_seen set before cm_dir_apply_add, which starts the effects afresh, every early copy
# was got again (stale == early), one round trip more per fault.
[ -n "$early" ] && [ "$early" -gt 0 ] && [ "$stale" -lt "$early" ] ||
    fail "the add form: expected early copies that hold (got '$early', '$stale' of them stale)"
# A page homed here faults again after a notice dropped it: its join needs no answer.
[ -n "$hj" ] && [ "$hj" -gt 0 ] || fail "the add form: expected joins of pages homed here (got '$hj')"
note "TCP, unsafe pages and the MCS directory"
expect_ok env CM_UNSAFE_THRESHOLD=0 CM_DIRECTORY=mcs "$CMRUN" -n 4 "$MP/mp_litmus" all --iters 20
expect_out "^litmus all: OK$"
echo "PASS"
