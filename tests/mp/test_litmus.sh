#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Release-consistency litmus tests of the Cashmere protocol over shared memory:
# every variant this machine runs (the table), the three directory forms, 2, 3 and 4 processes,
# with injected network latency, and with the unsafe-page and ring-overflow
# paths forced (and shown to be taken).
. "$top_srcdir/tests/lib.sh"
use_shm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every directory form at 3 processes; at 2 and 4 one form each, in turn over the variants, so
# that every form still runs at 2 and at 4 (CI's time is bounded; test_litmus_tcp does the same).
forms=(cas mcs add)
i=0
for variant in $(available_variants); do
    i=$((i + 1))
    for np in 2 3 4; do
        dirs=("${forms[@]}")
        [ $np = 3 ] || dirs=("${forms[(i + np) % 3]}")
        for dir in "${dirs[@]}"; do
            note "$variant, $np processes, $dir directory"
            expect_ok env CM_VARIANT=$variant CM_DIRECTORY=$dir CM_STATS="$tmp/s.json" \
                "$CMRUN" -n $np "$MP/mp_litmus" all --iters 30 --seed $np
            expect_out "^litmus all: OK$"
            [ "$(stats_total notices_posted "$tmp/s.json")" -gt 0 ] || fail "no write notice was ever posted"
            [ "$(stats_total home_migrations "$tmp/s.json")" -gt 0 ] || fail "no page moved home"
            # Each mechanism did its work: pages copied, mapped, stores forwarded.
            row=$("$CM_INFO" --variants | awk -v v=$variant '$1 == v')
            case "$row" in *fill=page*) [ "$(stats_total pages_fetched "$tmp/s.json")" -gt 0 ] || fail "no page copied" ;; esac
            case "$row" in *fill=map*) [ "$(stats_total pages_mapped "$tmp/s.json")" -gt 0 ] || fail "no page mapped" ;; esac
            case "$row" in *write=hooks*|*write=offload*)
                [ "$(stats_total forwarded_puts "$tmp/s.json")" -gt 0 ] || fail "no store forwarded" ;; esac
            case "$row" in *write=offload*)
                [ "$(stats_total offload_passes "$tmp/s.json")" -gt 0 ] || fail "the offload thread never ran"
                [ "$(stats_total offload_cpu_ns "$tmp/s.json")" -gt 0 ] || fail "no offload CPU time" ;; esac
            case "$row" in *merge=buffer*)
                [ "$(stats_total merge_flushes "$tmp/s.json")" -gt 0 ] || fail "no merge-buffer line written" ;; esac
        done
    done
done

note "injected latency (5 us per remote operation) widens every race window"
for dir in cas mcs add; do
    expect_ok env CM_NET_LATENCY=5us CM_DIRECTORY=$dir "$CMRUN" -n 4 "$MP/mp_litmus" all \
        --iters 20 --seed 5
    expect_out "^litmus all: OK$"
done

note "every weak page unsafe (CM_UNSAFE_THRESHOLD=0): directory checks instead of notices"
for dir in auto add; do
    for seed in 1 2 3; do
        expect_ok env CM_DIRECTORY=$dir CM_UNSAFE_THRESHOLD=0 CM_STATS="$tmp/u.json" "$CMRUN" -n 4 \
            "$MP/mp_litmus" all --iters 30 --seed $seed
        expect_out "^litmus all: OK$"
    done
    [ "$(stats_total unsafe_pages "$tmp/u.json")" -gt 0 ] || fail "$dir: no page became unsafe"
    [ "$(stats_total unsafe_checks "$tmp/u.json")" -gt 0 ] || fail "$dir: no unsafe page was checked"
done

note "a two-slot write-notice ring (add: two-slot bins) overflows without losing a notice"
for dir in auto add; do
    expect_ok env CM_DIRECTORY=$dir CM_WN_RING=2 CM_STATS="$tmp/o.json" "$CMRUN" -n 4 \
        "$MP/mp_litmus" all --iters 30
    expect_out "^litmus all: OK$"
    [ "$(stats_total ring_overflows "$tmp/o.json")" -gt 0 ] || fail "$dir: the ring never overflowed"
done

note "fixed round-robin homes (CM_FIRST_TOUCH=no), a one-line merge buffer"
for dir in auto add; do
    expect_ok env CM_DIRECTORY=$dir CM_FIRST_TOUCH=no CM_MERGE_LINES=1 "$CMRUN" -n 4 \
        "$MP/mp_litmus" all --iters 30
    expect_out "^litmus all: OK$"
done
echo "PASS"
