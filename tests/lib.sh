# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the multi-process test scripts (bash). Every launch goes through
# cmrun, under `timeout`, so that no test can hang the suite.
set -u

: "${top_builddir:?run through make check}" "${top_srcdir:?run through make check}"
CMRUN="$top_builddir/src/tools/cmrun"
CM_INFO="$top_builddir/src/tools/cm_info"
CM_BENCH="$top_builddir/src/tools/cm_bench"
STATS_TOOL="$top_builddir/src/tools/cm_stats"
MP="$top_builddir/tests/mp"
JOB_TIMEOUT=${CMT_JOB_TIMEOUT:-120}
# Tests make ranks abort and crash on purpose: no core files in the build tree (distcleancheck
# found one).
ulimit -c 0
# The version configure gave this build: what the tools' --version must print.
PACKAGE_VERSION=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top_builddir/config.h")

# Tests must not inherit the developer's settings.
for v in $(compgen -e | grep -E '^(CM|UCX)_'); do unset "$v"; done

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
note() { echo "== $*"; }

# stacks SID: every thread's stack of every process of session SID. All are
# attached at once: attaching to one interrupts its waits (epoll_wait fails
# with EINTR), which can move the others on. Bounded: 30 s in all, 12 frames
# per thread, 200 lines per process.
stacks() {
    local sid=$1 d p n gdbs=()
    command -v gdb >/dev/null 2>&1 || { echo "  ! (no stacks: gdb is not installed)"; return 0; }
    d=$(mktemp -d)
    for p in $(ps -s "$sid" -o pid= 2>/dev/null); do
        timeout -k 5 30 gdb -nx -q -batch -p "$p" -ex 'set pagination off' \
            -ex 'thread apply all bt 12' </dev/null >"$d/$p" 2>/dev/null &
        gdbs+=($!)
    done
    [ ${#gdbs[@]} -gt 0 ] && wait "${gdbs[@]}"
    for p in $(ls "$d"); do
        echo "  ! stacks of $p:"
        grep -E '^(Thread |#|\(More stack)' "$d/$p" | cut -c1-200 | head -200 | sed 's/^/  !   /'
        n=$(grep -cE '^(Thread |#)' "$d/$p")
        [ "$n" -le 200 ] || echo "  !   ... $((n - 200)) more lines"
    done
    rm -rf "$d"
}

# run TIMEOUT cmd...: runs cmd in its own session under a watchdog; sets $out
# (stdout+stderr) and $rc. On timeout it shows what every process of the
# session was doing (every thread's stack), kills the whole session (no orphan
# survives) and fails.
run() {
    local t=$1 f pid start now
    shift
    echo "\$ $*"
    f=$(mktemp)
    setsid "$@" >"$f" 2>&1 </dev/null &
    pid=$!
    start=$(date +%s)
    while kill -0 "$pid" 2>/dev/null; do
        now=$(date +%s)
        if [ $((now - start)) -ge "$t" ]; then
            sed 's/^/  | /' "$f"
            echo "  ! still running after ${t}s; processes of the job:"
            ps -s "$pid" -o pid,ppid,stat,wchan:24,args 2>/dev/null | sed 's/^/  ! /'
            stacks "$pid"
            pkill -TERM -s "$pid" 2>/dev/null
            sleep 2
            pkill -KILL -s "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            rm -f "$f"
            fail "timed out after ${t}s: $*"
        fi
        sleep 0.1
    done
    wait "$pid"
    rc=$?
    out=$(cat "$f")
    rm -f "$f"
    printf '%s\n' "$out" | sed 's/^/  | /'
    # Zombies (Z) are dead already; only live processes count.
    if ps -s "$pid" -o stat= 2>/dev/null | grep -qv '^Z'; then
        ps -s "$pid" -o pid,ppid,stat,args | sed 's/^/  ! /'
        pkill -KILL -s "$pid" 2>/dev/null
        fail "processes of the job outlived it: $*"
    fi
}

# expect_ok cmd...: must exit 0 within the job timeout.
expect_ok() {
    run "$JOB_TIMEOUT" "$@"
    [ "$rc" -eq 0 ] || fail "exit status $rc: $*"
}

# expect_fail cmd...: must exit non-zero (not by timeout) within the job timeout.
expect_fail() {
    run "$JOB_TIMEOUT" "$@"
    [ "$rc" -ne 0 ] || fail "expected a non-zero exit: $*"
}

# stats_total NAME FILE: the job's total of a timer or counter in a statistics file
# (CM_STATS=FILE), read by cm_stats; empty, with a line on stderr, where there is none.
stats_total() {
    local v
    v=$("$STATS_TOOL" --columns "$1" "$2" | sed -n 2p)
    [ -n "$v" ] || echo "  ! no $1 in $2" >&2
    echo "$v"
}

# expect_slept FILE BOUND: a job's statistics (CM_STATS=FILE) show at most BOUND lock acquires
# and at least one sleep: its waits slept until woken instead of polling under their lock.
expect_slept() {
    local acquires sleeps
    acquires=$(( $(stats_total lock_acquires_local "$1") + $(stats_total lock_acquires_remote "$1") ))
    sleeps=$(stats_total sleeps "$1")
    echo "  lock acquires $acquires, sleeps $sleeps"
    [ "$acquires" -le "$2" ] || fail "$acquires lock acquires, more than $2, in waits that should sleep"
    [ "$sleeps" -ge 1 ] || fail "no waiter slept"
}

# expect_out PATTERN: $out must contain a line matching the extended regex.
expect_out() {
    printf '%s\n' "$out" | grep -Eq -- "$1" || fail "output lacks /$1/"
}

# expect_version CMD NAME: CMD --version prints exactly "NAME (Cashmere-RMA) VERSION".
expect_version() {
    [ -n "$PACKAGE_VERSION" ] || fail "no PACKAGE_VERSION in config.h"
    expect_ok "$1" --version
    [ "$out" = "$2 (Cashmere-RMA) $PACKAGE_VERSION" ] || fail "$2 --version printed '$out'"
}

# expect_usage_error SECONDS PATTERN CMD [ARGS...]: a bad option is one line matching the
# extended regex PATTERN, and exit status 2, within SECONDS.
expect_usage_error() {
    local limit=$1 pattern=$2
    shift 2
    run "$limit" "$@"
    [ "$rc" -eq 2 ] || fail "$*: exit $rc, not 2"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "$*: not one line"
    expect_out "$pattern"
}

# count_out PATTERN: number of output lines matching.
count_out() {
    printf '%s\n' "$out" | grep -Ec -- "$1"
}

# leave_slurm: forget the Slurm allocation the test may run in (make check inside salloc or
# sbatch). Tests that pass their own host list to mpirun need this: Open MPI's mpirun sees
# SLURM_JOB_ID and the like, takes the allocation's nodes instead and starts its daemons
# with srun, and cmrun would pick srun. Unsets every SLURM_* variable.
leave_slurm() {
    local v
    for v in $(compgen -e | grep '^SLURM_'); do unset "$v"; done
}

# Transports: shared memory only, or TCP only (over loopback unless a device is given).
use_shm() { export UCX_TLS=posix,sysv,self; unset UCX_NET_DEVICES; }
# netns_probe: whether two namespace hosts (experiments/lib/netns.sh) can be made here; made
# and removed at once. Status 0: yes; 1: this machine cannot (no root, no namespaces, a chroot),
# why on stdout; 2: it broke on the way, why on stdout.
netns_probe() {
    bash -c '. "$1/experiments/lib/netns.sh"; netns_up; rc=$?; netns_down
             [ "$rc" = 0 ] || echo "$netns_why"; exit "$rc"' _ "$top_srcdir"
}

use_tcp() { export UCX_TLS=tcp; export UCX_NET_DEVICES=${1:-lo}; }

# The variants of the table this machine can run (cm_info --variants), under the transports
# now chosen; the test matrix comes from it. Fails the test if there are none.
available_variants() {
    local v
    v=$("$CM_INFO" --variants | awk '$2 == "available" {print $1}')
    [ -n "$v" ] || fail "cm_info --variants lists no available variant"
    echo $v
}
