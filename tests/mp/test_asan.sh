#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The message paths under a memory-error detector: every rank loads the library built again
# with AddressSanitizer (tests/asan/libcashmere.la, make check builds it; libasan preloaded,
# since the programs themselves are not built with it), over TCP, where UCX hands messages
# to handlers at any offset and the progress thread serves peers while the application
# computes. Under TreadMarks (fault and scan write detection, 2 and 4 processes): the litmus
# suite, tmk_queue, the apps water and mp3d, and a write after the last barrier (mp_finale,
# whose diff was served from freed memory at cm_finalize: heap-use-after-free in
# tm_make_diff_in, issue 44). Under Cashmere's CHSM (writes forwarded in batches over TCP),
# CHSN and NSSN with both directory forms: the litmus suite. Any report ends its rank
# (abort_on_error), so the job fails and the report is shown; a run must also leave no report
# file behind. Skipped, saying why, where the compiler has no AddressSanitizer or the build is
# the UBSan one (distcheck-ci: two sanitizer runtimes do not load together).
. "$top_srcdir/tests/lib.sh"
asan_lib="$top_builddir/tests/asan/.libs"
runtime=$(sed -n 's/^#define CM_ASAN_RUNTIME "\(.*\)"$/\1/p' "$top_builddir/config.h")
[ -n "$runtime" ] || skip "configure found no AddressSanitizer (gcc's libasan) here, or this is the UBSan build"
[ -e "$asan_lib/libcashmere.so.0" ] || fail "make check did not build tests/asan/libcashmere.la"
export CM_APPS_DIR="$top_builddir/apps"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Each rank through this wrapper: cmrun takes a script as it is, and the wrapper runs the
# build cmrun would have picked (PROG.hooks where the variant needs store checks).
cat > "$tmp/asan" <<EOF
#!/bin/sh
# handle_segv=0 and allow_user_segv_handler: page faults are the protocol's; detect_leaks=0:
# a rank ends without freeing what it keeps to the end.
prog=\$1; shift
suffix=\$("$CM_INFO" --check -n 1 | sed -n 's/^suffix=//p')
if [ -n "\$suffix" ] && [ -x "\$prog\$suffix" ]; then prog=\$prog\$suffix; fi
# The program itself, not libtool's wrapper of an uninstalled one, which would put the plain
# library first on LD_LIBRARY_PATH.
real="\$(dirname "\$prog")/.libs/\$(basename "\$prog")"
if [ -x "\$real" ]; then prog=\$real; fi
export LD_LIBRARY_PATH="$asan_lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
if [ -n "\${ASAN_WRAPPER_SHOW:-}" ]; then
    echo "asan: \$(basename "\$prog") loads \$(ldd "\$prog" | awk '\$1 == "libcashmere.so.0" {print \$3}')"
fi
export LD_PRELOAD="$runtime"
export ASAN_OPTIONS="detect_leaks=0:handle_segv=0:allow_user_segv_handler=1:abort_on_error=1:log_path=$tmp/report"
exec "\$prog" "\$@"
EOF
chmod +x "$tmp/asan"

# asan_run NP [VAR=value...] PROG ARGS...: the job under the wrapper; a report fails the test.
asan_run() {
    local np=$1 vars=()
    shift
    while [[ "$1" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do vars+=("$1"); shift; done
    rm -f "$tmp"/report.*
    run "$JOB_TIMEOUT" env "${vars[@]}" "$CMRUN" -n "$np" "$tmp/asan" "$@"
    if compgen -G "$tmp/report.*" > /dev/null; then
        sed 's/^/  ! /' "$tmp"/report.* | head -60
        fail "AddressSanitizer reported an error: $*"
    fi
    [ "$rc" -eq 0 ] || fail "exit status $rc: $*"
}

use_tcp lo
note "the detector is live: a rank's double free is AddressSanitizer's report, not glibc's"
rm -f "$tmp"/report.*
run "$JOB_TIMEOUT" "$CMRUN" -n 3 "$tmp/asan" "$MP/mp_stuck" die double-free
[ "$rc" -ne 0 ] || fail "a double free went unnoticed"
grep -q "ERROR: AddressSanitizer: attempting double-free" "$tmp"/report.* 2>/dev/null ||
    fail "no AddressSanitizer report of the double free"
asan_run 2 ASAN_WRAPPER_SHOW=1 "$MP/mp_init" info
[ "$(count_out '^rank [01] of 2')" -eq 2 ] || fail "not one line per rank"
[ "$(count_out "^asan: mp_init.* loads $asan_lib/libcashmere.so.0$")" -eq 2 ] ||
    fail "the ranks do not load the AddressSanitizer build of the library"

for detect in fault scan; do
    for np in 2 4; do
        note "TCP, TreadMarks ($detect), $np processes"
        asan_run $np CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=$detect "$MP/mp_litmus" all \
            --iters 10 --seed $np
        expect_out "^litmus all: OK$"
        asan_run $np CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=$detect \
            "$top_builddir/tests/compat/tmk_queue"
        expect_out "^tmk_queue: $np processes, .* OK$"
        for _ in 1 2 3; do
            asan_run $np CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=$detect "$MP/mp_finale"
            expect_out "^mp_finale: $np processes"
        done
    done
    for app in water mp3d; do
        asan_run 4 CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=$detect \
            "$top_builddir/apps/$app" --size test
        expect_out "^VERIFY OK$"
    done
done
for v in CHSM CHSN NSSN; do
    for dir in cas mcs add; do
        note "TCP, Cashmere $v, $dir directory, 4 processes"
        asan_run 4 CM_PROTOCOL=cashmere CM_VARIANT=$v CM_DIRECTORY=$dir "$MP/mp_litmus" all \
            --iters 10 --seed 5
        expect_out "^litmus all: OK$"
    done
done
echo "PASS"
