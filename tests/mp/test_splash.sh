#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The patterns of real SPLASH programs that the PARMACS layer must run
# unmodified, each a program of tests/compat built from one source with
# cashmere.m4 (plain, with the store checks, with load and store checks) and
# with a pthreads macro file. Under every variant this machine runs and
# TreadMarks with both write detections, at 2 processes, at 4 under a third of those settings
# (a different third each time, printed; CMT_SPLASH_ROTATE=0..2 repeats one,
# CMT_SPLASH_MATRIX=full runs all at 4), and at 1 under CHSM, NSSN and TreadMarks, what each
# prints must equal the threaded build's
# at the same P, timing lines aside (those that say time or clock, as the
# comparison of SPLASH programs in docs/PORTING.md drops them):
#   p_input  input read before MAIN_INITENV, a shared size computed from it
#   p_ptrs   a pointer table built before CREATE (functions, globals, strings,
#            malloc and G_MALLOC memory) in a position-independent executable
#   p_libc   shared memory written by libc (strcpy, sprintf, sscanf, qsort, fgets)
#            and by the kernel (fread, pread)
#   p_tree   RADIX's prefix-sum pause flags and BARNES's tree of condition
#            variables (they hung under the NS variants), and a line printed
#            before MAIN_INITENV (once, by process 0)
#   p_reads  shared memory read by libc and the kernel (printf's %s, puts, fputs,
#            fwrite, write, strtol, strtod, atoi, strchr, strstr, sscanf, bsearch,
#            qsort) after other processes rewrote it: under software line fills
#            the old lines came out (RAYTRACE's image)
#   p_giant  OCEAN's non-contiguous layout: 24 grids at their compiled maximum
#            (12.9 GB), a corner used, with no size setting; each process's peak
#            resident memory stays a fraction of what metadata for the whole
#            region once took (CM_STATS peak_rss_bytes), also with a 1 TiB region
# Every run: no process's malloc calls before CREATE placed blocks other than process 0's
# (P_PTRS_SKEW=1 makes them, and the runtime must say so).
# also with CM_CHECK_STORES=yes (every libc and kernel write reaches the hooks: the check finds
# no store they missed); then at 3 processes over TCP; and with address-space randomization left on, the pointer
# table must fail.
. "$top_srcdir/tests/lib.sh"
use_shm
C="$top_builddir/tests/compat"
data="$top_srcdir/tests/compat/p_libc.C"   # any file >= 1 KiB, the same for both builds
input=$(mktemp)
trap 'rm -f "$input"' EXIT
echo "matrix 512 4096 0.5 2611" > "$input"   # 16 MiB of shared data

# same_as REF: $out, less the runtime's own messages and timing lines, must equal REF (less
# its timing lines).
untimed() { grep -v '^cashmere\[' | grep -viE 'time|clock'; }
# Every process's malloc calls before CREATE must place blocks as process 0's did (the runtime
# compares digests at CREATE): under NSHM the runtime's own allocations in process 0's load and
# store checks once took replica-heap blocks, now and then, and p_ptrs read zeros.
heap_alike() {
    if printf '%s\n' "$out" | grep -q 'placed blocks other than process 0'; then
        fail "a process's replica heap diverged from process 0's before CREATE"
    fi
}
same_as() {
    local got want
    heap_alike
    got=$(printf '%s\n' "$out" | untimed)
    want=$(printf '%s\n' "$1" | untimed)
    if [ "$got" != "$want" ]; then
        diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | sed 's/^/  > /'
        fail "output differs from the pthreads build's"
    fi
}

# same_sorted REF: as same_as, line order aside: what a worker on a process other than 0 prints
# arrives in a block per process, not interleaved with the others' lines (docs/PORTING.md).
same_sorted() {
    local got want
    heap_alike
    got=$(printf '%s\n' "$out" | untimed | sort)
    want=$(printf '%s\n' "$1" | untimed | sort)
    if [ "$got" != "$want" ]; then
        diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | sed 's/^/  > /'
        fail "output differs from the pthreads build's (as sorted lines)"
    fi
}

# Built as Debian's compiler builds by default: a position-independent executable (type DYN).
elf="$C/.libs/p_ptrs"; [ -f "$elf" ] || elf="$C/p_ptrs"   # libtool may wrap it in a script
LC_ALL=C readelf -h "$elf" | grep -q 'Type:.*DYN' || fail "p_ptrs is not a position-independent executable"

settings=("CM_PROTOCOL=treadmarks" "CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=scan")
for v in $(available_variants); do
    settings+=("CM_PROTOCOL=cashmere CM_VARIANT=$v")
done
settings+=("CM_PROTOCOL=cashmere CM_VARIANT=CHSM CM_CHECK_STORES=yes"
           "CM_PROTOCOL=cashmere CM_VARIANT=CHSN CM_CHECK_STORES=yes")

case "${CMT_SPLASH_MATRIX:=rotate}" in
    full) ;;
    rotate) rot=${CMT_SPLASH_ROTATE:-$((RANDOM % 3))}
            [[ "$rot" =~ ^[0-2]$ ]] || fail "CMT_SPLASH_ROTATE='$rot': 0, 1 or 2"
            echo "matrix: P = 4 under settings $rot, $((rot + 3)), ... of ${#settings[@]}" \
                 "(CMT_SPLASH_ROTATE=$rot repeats it; CMT_SPLASH_MATRIX=full runs all)" ;;
    *) fail "CMT_SPLASH_MATRIX='$CMT_SPLASH_MATRIX': rotate or full" ;;
esac

for np in 1 2 4; do
    note "pthreads references, P = $np"
    expect_ok bash -c '"$0" "$1" < "$2"' "$C/p_input.pthreads" $np "$input"
    ref_input=$out
    expect_ok "$C/p_ptrs.pthreads" $np
    ref_ptrs=$out
    expect_ok "$C/p_libc.pthreads" $np "$data"
    ref_libc=$out
    expect_ok "$C/p_tree.pthreads" $np 4
    ref_tree=$out
    expect_ok "$C/p_reads.pthreads" $np
    ref_reads=$out
    for si in "${!settings[@]}"; do
        setting=${settings[$si]}
        if [ $np = 4 ] && [ "$CMT_SPLASH_MATRIX" = rotate ] && [ $((si % 3)) != "$rot" ]; then
            continue
        fi
        if [ $np = 1 ]; then
            case "$setting" in
                *=treadmarks|*=CHSM|*=NSSN) ;;
                *) continue ;;
            esac
        fi
        note "$np processes, $setting"
        expect_ok env $setting "$CMRUN" -n $np --stdin "$input" "$C/p_input" $np
        same_as "$ref_input"
        expect_ok env $setting "$CMRUN" -n $np "$C/p_ptrs" $np
        same_as "$ref_ptrs"
        expect_ok env $setting "$CMRUN" -n $np "$C/p_libc" $np "$data"
        same_as "$ref_libc"
        expect_ok env $setting "$CMRUN" -n $np "$C/p_tree" $np 4
        same_sorted "$ref_tree"
        [ "$(count_out '^p_tree: P = ')" = 1 ] || fail "a line printed before MAIN_INITENV came out $(count_out '^p_tree: P = ') times"
        expect_ok env $setting "$CMRUN" -n $np "$C/p_reads" $np
        same_as "$ref_reads"
    done
done

# A rank-dependent allocation before CREATE is said, by every process it shifted.
note "p_ptrs with P_PTRS_SKEW=1 (processes other than 0 malloc one block more)"
expect_ok env P_PTRS_SKEW=1 CM_PROTOCOL=cashmere CM_VARIANT=CHSM "$CMRUN" -n 3 "$C/p_ptrs" 3
[ "$(count_out 'placed blocks other than process 0')" = 2 ] ||
    fail "expected the replica heap warning from processes 1 and 2, got $(count_out 'placed blocks other than process 0')"

# Over TCP (RMA emulated in the target), 3 processes: the same outputs.
use_tcp
for setting in "CM_PROTOCOL=cashmere CM_VARIANT=CHSM" "CM_PROTOCOL=treadmarks" \
               "CM_PROTOCOL=cashmere CM_VARIANT=CHSN CM_CHECK_STORES=yes"; do
    note "3 processes over TCP, $setting"
    expect_ok bash -c '"$0" "$1" < "$2"' "$C/p_input.pthreads" 3 "$input"
    ref_input=$out
    expect_ok "$C/p_ptrs.pthreads" 3
    ref_ptrs=$out
    expect_ok "$C/p_libc.pthreads" 3 "$data"
    ref_libc=$out
    expect_ok env $setting "$CMRUN" -n 3 --stdin "$input" "$C/p_input" 3
    same_as "$ref_input"
    expect_ok env $setting "$CMRUN" -n 3 "$C/p_ptrs" 3
    same_as "$ref_ptrs"
    expect_ok env $setting "$CMRUN" -n 3 "$C/p_libc" 3 "$data"
    same_as "$ref_libc"
done
use_shm

# A region is address space: 12.9 GB allocated, 12 MB touched, under every protocol; then a 1 TiB
# region. Each process's peak resident memory must stay below 256 MiB: metadata for every page
# of the 64 GiB default region (96 bytes each, cleared whether used or not) took 800 MiB.
stats=$(mktemp)
trap 'rm -f "$input" "$stats"' EXIT
for np in 2 4; do
    expect_ok "$C/p_giant.pthreads" $np
    ref_giant=$out
    for setting in "${settings[@]}" "CM_PROTOCOL=cashmere CM_VARIANT=CHSM CM_SHARED_SIZE=1t"; do
        case "$setting" in *CHECK_STORES*) continue ;; esac
        note "giant allocation, $np processes, $setting"
        # stdout alone: the statistics table on stderr may cut into a line of it (mpirun merges
        # the two streams in chunks).
        expect_ok bash -c '"$@" 2> /dev/null' stdout-only env $setting CM_STATS="$stats" "$CMRUN" \
            -n $np "$C/p_giant" $np
        same_sorted "$ref_giant"
        peak=$("$STATS_TOOL" --per-process --columns peak_rss_bytes "$stats" | sed 1d | sort -n | tail -1)
        [ -n "$peak" ] || fail "no peak_rss_bytes in the statistics"
        echo "  peak resident memory of a process: $((peak >> 20)) MiB"
        [ "$peak" -lt $((256 << 20)) ] || fail "a process peaked at $((peak >> 20)) MiB"
    done
done

note "the pointer table with address-space randomization left on (CM_ASLR=yes) must fail"
expect_fail env CM_ASLR=yes "$CMRUN" -n 2 "$C/p_ptrs" 2
echo "PASS"
