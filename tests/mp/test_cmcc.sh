#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# cmcc builds an ordinary cm.h program with the store hooks; it runs under the
# software-doubling variants. The same source built plain is refused by them.
. "$top_srcdir/tests/lib.sh"
use_shm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CMCC="$top_builddir/src/tools/cmcc"
# Uninstalled: headers and libraries from the build tree come first.
build=(-I"$top_srcdir/include" -L"$top_builddir/.libs" -L"$top_builddir" -O2)
export LD_LIBRARY_PATH="$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

note "compile and link in one step"
expect_ok "$CMCC" "${build[@]}" "$top_srcdir/tests/cmcc/sum.c" -o "$tmp/sum"
nm "$tmp/sum" | grep -q " T __asan_report_store8_noabort$" || fail "no store hooks linked in"
nm "$tmp/sum" | grep -q " [DR] cm_hooks_inline$" || fail "the inline-check marker is not linked in"
nm "$tmp/sum" | grep -q " __asan_report_error" && fail "libasan's reporting linked in"
ldd "$tmp/sum" | grep -q libasan && fail "linked against libasan"
for variant in CHSM CHSN; do
    expect_ok env CM_VARIANT=$variant "$CMRUN" -n 3 "$tmp/sum"
    [ "$(count_out 'VERIFY OK, message .written through a libc call.$')" -eq 3 ] || fail "$variant: wrong sums"
done

note "separate compile and link"
expect_ok "$CMCC" "${build[@]}" -c "$top_srcdir/tests/cmcc/sum.c" -o "$tmp/sum.o"
expect_ok "$CMCC" "${build[@]}" "$tmp/sum.o" -o "$tmp/sum2"
expect_ok "$CMRUN" -n 2 "$tmp/sum2"
[ "$(count_out 'VERIFY OK')" -eq 2 ] || fail "wrong sums"

note "like mpicc: one step, any argument order, -l m as two words, cmcc's options anywhere"
expect_ok "$CMCC" -o "$tmp/norm" "$top_srcdir/tests/cmcc/norm.c" --showme -l m "${build[@]}"
[ "$(count_out ' -fsanitize=kernel-address ')" -eq 1 ] || fail "--showme after the files: not one command"
expect_out "-lcashmere_hooks -lcashmere"
expect_ok "$CMCC" -o "$tmp/norm" "$top_srcdir/tests/cmcc/norm.c" -l m "${build[@]}"
ldd "$tmp/norm" | grep -q libasan && fail "linked against libasan"
for variant in CHSM NHHM; do
    expect_ok env CM_VARIANT=$variant "$CMRUN" -n 2 "$tmp/norm"
    [ "$(count_out 'VERIFY OK')" -eq 2 ] || fail "$variant: wrong norm"
done
expect_ok "$CMCC" --showme:compile
expect_out "-fsanitize=kernel-address"
printf '%s\n' "$out" | grep -q -- "-lcashmere" && fail "--showme:compile lists libraries"
expect_ok "$CMCC" --showme:link
expect_out "-lcashmere_hooks -lcashmere"
expect_ok "$CMCC" --version
expect_out "^cmcc \\(Cashmere-RMA\\) [0-9]"
expect_ok "$CMCC" --help
expect_out "--showme:link"
expect_fail "$CMCC" --showme:bogus
expect_out "cmcc: error: unknown option '--showme:bogus'"
expect_fail "$CMCC"
expect_out "cmcc: error: no input files"

note "the same flags from pkg-config (cashmere-hooks), for projects with their own build"
pcflags=$(PKG_CONFIG_PATH="$top_builddir" pkg-config --cflags --libs cashmere-hooks) ||
    fail "pkg-config cashmere-hooks failed"
# shellcheck disable=SC2086 # pkg-config's output is a list of words
expect_ok cc "${build[@]}" "$top_srcdir/tests/cmcc/norm.c" -o "$tmp/normpc" $pcflags -lm
nm "$tmp/normpc" | grep -q " [DR] cm_hooks_inline$" || fail "pkg-config's flags link no inline-check marker"
expect_ok env CM_VARIANT=CHSN "$CMRUN" -n 2 "$tmp/normpc"
[ "$(count_out 'VERIFY OK')" -eq 2 ] || fail "pkg-config build: wrong norm"
pcplain=$(PKG_CONFIG_PATH="$top_builddir" pkg-config --cflags --libs cashmere)
case "$pcplain" in *rpath*|*pmix*|*ucx*) fail "cashmere.pc leaks: $pcplain" ;; esac

note "inline checks by default: the hook called only when the shadow says so; CMCC_CHECKS=callback: every store"
expect_ok "$CMCC" "${build[@]}" -c "$top_srcdir/tests/cmcc/sum.c" -o "$tmp/inl.o"
nm "$tmp/inl.o" | grep -q " U __asan_report_store[0-9]*_noabort$" || fail "no inline checks compiled"
nm "$tmp/inl.o" | grep -q " U __asan_store" && fail "the inline build calls a hook per store"
expect_ok env CMCC_CHECKS=callback "$CMCC" "${build[@]}" -c "$top_srcdir/tests/cmcc/sum.c" -o "$tmp/cb.o"
nm "$tmp/cb.o" | grep -q " U __asan_store[0-9]*_noabort$" || fail "the callback build calls no hook"
expect_ok env CMCC_CHECKS=callback "$CMCC" "${build[@]}" "$top_srcdir/tests/cmcc/sum.c" -o "$tmp/suminl"
for setting in "CM_VARIANT=CHSM" "CM_VARIANT=CHSN" "CM_VARIANT=CHSM CM_CHECK_STORES=yes" \
               "CM_PROTOCOL=treadmarks"; do
    expect_ok env $setting "$CMRUN" -n 3 "$tmp/suminl"
    [ "$(count_out 'VERIFY OK, message .written through a libc call.$')" -eq 3 ] || fail "$setting: wrong sums"
done
expect_fail env CMCC_CHECKS=bogus "$CMCC" "${build[@]}" "$top_srcdir/tests/cmcc/sum.c" -o "$tmp/y"
expect_out "cmcc: error: CMCC_CHECKS='bogus': callback or inline"

note "--accesses: loads checked too, for the software line fills of the NS variants"
expect_ok "$CMCC" --accesses "${build[@]}" "$top_srcdir/tests/cmcc/sum.c" -o "$tmp/sumacc"
nm "$tmp/sumacc" | grep -q " T __asan_report_load8_noabort$" || fail "no load hooks linked in"
nm "$tmp/sumacc" | grep -q " [DR] cm_hooks_loads$" || fail "the load-check marker is not linked in"
expect_ok "$CMCC" --accesses --showme "${build[@]}" "$top_srcdir/tests/cmcc/sum.c" -o "$tmp/x"
printf '%s\n' "$out" | grep -q "asan-instrument-reads=0" && fail "--accesses left loads unchecked"
expect_out "-fno-builtin-memcmp"
for variant in NSSN NSHM; do
    expect_ok env CM_VARIANT=$variant "$CMRUN" -n 3 "$tmp/sumacc"
    [ "$(count_out 'VERIFY OK, message .written through a libc call.$')" -eq 3 ] || fail "$variant: wrong sums"
done
run "$JOB_TIMEOUT" env CM_VARIANT=NSSN "$CMRUN" -n 2 "$tmp/sum"
[ "$rc" -eq 1 ] || fail "a build without load checks ran under NSSN"
[ "$(count_out "^cmrun: error: CM_VARIANT=NSSN checks loads and stores in software, but $tmp/sum was built with store checks only \(cmcc without --accesses\): rebuild it with cmcc --accesses$")" -eq 1 ] ||
    fail "not one line from cmrun with the remedy"
[ "$(printf '%s\n' "$out" | grep -c .)" -eq 1 ] || fail "more than one line: a rank started?"
note "... and without cmrun, the process itself"
run "$JOB_TIMEOUT" env CM_VARIANT=NSSN "$tmp/sum"
[ "$rc" -ne 0 ] || fail "a build without load checks ran under NSSN"
expect_out "CM_VARIANT=NSSN checks loads in software, but this program was built without load checks: build it with cmcc --accesses$"
expect_fail env CMCC_CHECKS=callback "$CMCC" --accesses "${build[@]}" "$top_srcdir/tests/cmcc/sum.c" -o "$tmp/y"
expect_out "cmcc: error: --accesses needs CMCC_CHECKS=inline"

note "the same source built plain is refused by cmrun, once, with the one remedy for the variant"
expect_ok cc "${build[@]}" "$top_srcdir/tests/cmcc/sum.c" -o "$tmp/plain" -lcashmere
"$CM_INFO" --build "$tmp/plain" | grep -qx plain || fail "cm_info --build: a cc binary is not plain"
for v in "CHSM:forwards writes in software:cmcc" "NSSN:checks loads and stores in software:cmcc --accesses"; do
    run "$JOB_TIMEOUT" env CM_VARIANT="${v%%:*}" "$CMRUN" -n 4 "$tmp/plain"
    [ "$rc" -eq 1 ] || fail "plain binary ran under ${v%%:*}"
    want="^cmrun: error: CM_VARIANT=${v%%:*} $(echo "$v" | cut -d: -f2), but $tmp/plain was built without cmcc \(no checks\): rebuild it with $(echo "$v" | cut -d: -f3)$"
    [ "$(count_out "$want")" -eq 1 ] || fail "${v%%:*}: not the one line"
    [ "$(printf '%s\n' "$out" | grep -c .)" -eq 1 ] || fail "${v%%:*}: more than one line: a rank started?"
done

note "shared heap exhausted: the message says where the region went and a size that fits"
cat > "$tmp/big.c" <<'EOF2'
#include <cm.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    size_t n = (size_t)strtoull(argv[1], NULL, 0);
    char *p = cm_malloc(n);
    if (cm_rank() == 0)
        p[n - 1] = 1;
    cm_barrier();
    printf("rank %d: allocated %zu bytes\n", cm_rank(), n);
    cm_finalize();
    return 0;
}
EOF2
expect_ok "$CMCC" "${build[@]}" "$tmp/big.c" -o "$tmp/big"
for local in "" 1m; do
    run "$JOB_TIMEOUT" env CM_SHARED_SIZE=64m ${local:+CM_LOCAL_HEAP=$local} "$CMRUN" -n 2 "$tmp/big" 67108864
    [ "$rc" -ne 0 ] || fail "64 MiB fit in a 64 MiB region with its local part"
    expect_out "cm_malloc\(67108864\): the shared heap is exhausted: 0 of its [0-9]+ bytes in use \(CM_SHARED_SIZE=64m less [0-9]+ bytes for cm_malloc_local, "
    fit=$(printf '%s\n' "$out" | sed -n 's/.*CM_SHARED_SIZE=\([0-9]*[mg]\) would fit this request$/\1/p' | head -1)
    [ -n "$fit" ] || fail "no size that fits suggested"
    note "... CM_SHARED_SIZE=$fit${local:+ with CM_LOCAL_HEAP=$local}, as suggested, fits"
    expect_ok env CM_SHARED_SIZE="$fit" ${local:+CM_LOCAL_HEAP=$local} "$CMRUN" -n 2 "$tmp/big" 67108864
    [ "$(count_out '^rank [01]: allocated 67108864 bytes$')" -eq 2 ] || fail "the suggested size did not fit"
done

note "the build is read from the binary: a cmcc program with no instrumented store runs under CHSM"
# All its shared writes go through memcpy (interposed by the hooks): the compiler emits no
# checked store at all, yet the binary records its build and gets the hooks.
cat > "$tmp/nostore.c" <<'EOF2'
#include <cm.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    char *s = cm_malloc(64);
    if (cm_rank() == 0)
        memcpy(s, "via memcpy", 11);
    cm_barrier();
    printf("rank %d reads '%s'\n", cm_rank(), s);
    cm_finalize();
    return 0;
}
EOF2
expect_ok "$CMCC" "${build[@]}" "$tmp/nostore.c" -o "$tmp/nostore"
"$CM_INFO" --build "$tmp/nostore" | grep -qx stores || fail "cm_info --build: not stores"
"$CM_INFO" --build "$tmp/sumacc" | grep -qx accesses || fail "cm_info --build: not accesses"
for variant in CHSM CHSN; do
    expect_ok env CM_VARIANT=$variant "$CMRUN" -n 2 "$tmp/nostore"
    [ "$(count_out "^rank [01] reads 'via memcpy'$")" -eq 2 ] || fail "$variant: the memcpy'd write was not seen"
done
echo "PASS"
