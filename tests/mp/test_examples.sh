#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# examples/: each example copied out of the tree and built by its own Makefile, as a user
# would after `make install` (cmcc; jacobi with cc and pkg-config; parmacs through m4), then
# run at 2 processes under CHSM, NSSN (which runs PROG.access: a build without load checks is
# refused there) and TreadMarks. Each checks its own result and prints one line on process 0.
# Built with -Wall -Wextra -Werror: what researchers copy compiles without warnings.
. "$top_srcdir/tests/lib.sh"
use_shm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LD_LIBRARY_PATH="$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Uninstalled: the build tree's cmcc, headers, libraries, .pc files and macro file come first.
mk=(CMCC="$top_builddir/src/tools/cmcc" CPPFLAGS="-I$top_srcdir/include"
    LDFLAGS="-L$top_builddir/.libs -L$top_builddir" PKG_CONFIG_PATH="$top_builddir"
    MACROS="$top_srcdir/compat/cashmere.m4" CFLAGS="-O2 -Wall -Wextra -Werror")
# make as the user runs it: nothing from the make check around it (MAKEFLAGS carries its
# command line's variables, CC=... say, which would override the examples' own).
user_env=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL)

# example directory, program and arguments, the line it prints (extended regex)
examples=(
    "hello|hello|^hello: 2 processes \\(@\\), slots: 10 20$"
    "locks|locks|^locks: OK \\(2 processes, 2000 updates under one lock, total 2500\\)$"
    "jacobi|jacobi|^jacobi: OK \\(256 x 256, 100 iterations, max diff 0\\) in [0-9.]+ s on 2 processes$"
    "parmacs|matmul -p2|^matmul: OK \\(128 x 128, sum 2863136768, 2 workers\\)$"
    "tmk|primes|^primes: OK \\(17984 primes below 200000, expected 17984; chunks per process: [0-9]+ [0-9]+\\)$"
)
settings=("CM_VARIANT=CHSM" "CM_VARIANT=NSSN" "CM_PROTOCOL=treadmarks")

for entry in "${examples[@]}"; do
    IFS='|' read -r dir cmd pattern <<< "$entry"
    read -r -a prog <<< "$cmd"
    note "examples/$dir: make"
    # A copy as the user makes one; writable although make distcheck's source tree is not.
    cp -R "$top_srcdir/examples/$dir" "$tmp/$dir"
    chmod -R u+w "$tmp/$dir"
    expect_ok "${user_env[@]}" make -C "$tmp/$dir" "${mk[@]}"
    for built in "${prog[0]}" "${prog[0]}.access"; do
        [ -x "$tmp/$dir/$built" ] || fail "examples/$dir: make built no $built"
    done
    for setting in "${settings[@]}"; do
        note "examples/$dir: $setting cmrun -n 2 ./$cmd"
        expect_ok env "$setting" "$CMRUN" -n 2 "$tmp/$dir/${prog[0]}" "${prog[@]:1}"
        case "$setting" in
            CM_VARIANT=*) label="cashmere ${setting#CM_VARIANT=}" ;;
            *)            label=treadmarks ;;
        esac
        [ "$(count_out "${pattern//@/$label}")" -eq 1 ] ||
            fail "examples/$dir under $setting: not one line matching /${pattern//@/$label}/"
    done
    note "examples/$dir: make clean leaves the sources only"
    expect_ok "${user_env[@]}" make -C "$tmp/$dir" clean
    diff <(ls "$top_srcdir/examples/$dir") <(ls "$tmp/$dir") || fail "examples/$dir: make clean left files"
done

note "the parmacs Makefile finds the macro file through pkg-config (cashmere.pc's parmacs)"
macros=$(PKG_CONFIG_PATH="$top_builddir" pkg-config --variable=parmacs cashmere)
case "$macros" in /*/cashmere/cashmere.m4) ;; *) fail "pkg-config --variable=parmacs: '$macros'" ;; esac
cp -R "$top_srcdir/examples/parmacs" "$tmp/pm" && chmod -R u+w "$tmp/pm"
expect_ok "${user_env[@]}" PKG_CONFIG_PATH="$top_builddir" make -n -C "$tmp/pm" matmul.c
expect_out "m4 -s -Ulen -Uindex $macros matmul.C"
echo "PASS"
