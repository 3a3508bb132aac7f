#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/pkg/test_deb.sh: the Debian packages, end to end. Builds them from this tree
# (dpkg-buildpackage -us -uc -b, in a scratch copy outside the tree), installs them with apt
# in a fresh minimal Debian 12 chroot (dependencies from the mirror) and runs them there:
# cm_info, an installed app through cmrun, and a program built with cmcc.
#
# Not part of `make check`: it needs root, debootstrap, the Debian mirror and a few minutes.
#
#   tests/pkg/test_deb.sh                         build from this tree, then test
#   tests/pkg/test_deb.sh DIR | X.deb...          test the given packages (a directory: its .debs)
#
# Environment:
#   CM_DEB_CACHE   the debootstrap tarball and apt's downloaded packages, kept between runs
#                  (default /var/cache/cashmere-test-deb); delete it for a fresh download
#   CM_DEB_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#   CM_DEB_SUITE   suite (default bookworm)
#   CM_DEB_JOBS    parallel build jobs (default 2)
#   CM_DEB_KEEP=1  keep the scratch directory (build tree, chroot) for a look afterwards
#   CM_DEB_TMPDIR  where the scratch directory goes (default /var/tmp)
# Exit status: 0 pass, 1 failure, 77 skipped (not root, no debootstrap, no dpkg-buildpackage).
#
# Everything that mounts runs in a private mount namespace (unshare): the chroot's mounts
# cannot leak into the host's /dev, and vanish with the namespace even if this script is
# killed; the EXIT trap unmounts them anyway and only then removes the chroot.

set -u
set -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top_srcdir=$(cd "$here/../.." && pwd)

cache=${CM_DEB_CACHE:-/var/cache/cashmere-test-deb}
mirror=${CM_DEB_MIRROR:-http://deb.debian.org/debian}
suite=${CM_DEB_SUITE:-bookworm}
jobs=${CM_DEB_JOBS:-2}
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)

t_start=$(date +%s)
say()  { printf '[test_deb %4ds] %s\n' "$(( $(date +%s) - t_start ))" "$*"; }
fail() { say "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot, mounts)"
command -v debootstrap >/dev/null 2>&1 || skip "debootstrap not installed (apt-get install debootstrap)"
command -v unshare >/dev/null 2>&1 || skip "unshare (util-linux) not found"
if [ $# -eq 0 ]; then
    command -v dpkg-buildpackage >/dev/null 2>&1 ||
        skip "dpkg-buildpackage not installed (apt-get install dpkg-dev debhelper)"
fi

# The rest in a mount namespace of its own, mounts private to it.
if [ -z "${CM_DEB_UNSHARED:-}" ]; then
    unshare --mount --propagation private true 2>/dev/null ||
        skip "cannot create a mount namespace here (a container without CAP_SYS_ADMIN?)"
    CM_DEB_UNSHARED=1 exec unshare --mount --propagation private -- "$BASH" "${BASH_SOURCE[0]}" "$@"
fi

work=$(mktemp -d "${CM_DEB_TMPDIR:-/var/tmp}/cm-test-deb.XXXXXX") || fail "cannot create a scratch directory"
root="$work/chroot"
steps=()

# Every mount under the chroot, deepest first.
chroot_mounts() {
    awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}
cleanup() {
    local rc=$? m left
    for m in $(chroot_mounts); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || say "warning: cannot unmount $m"
    done
    left=$(chroot_mounts)
    if [ -n "$left" ]; then
        say "mounts left under $root, not removing $work: $left"
    elif [ "${CM_DEB_KEEP:-0}" = 1 ]; then
        say "kept $work"
    else
        rm -rf --one-file-system "$work"
    fi
    if [ ${#steps[@]} -gt 0 ]; then
        say "timings:"
        printf '    %s\n' "${steps[@]}"
    fi
    if [ "$rc" = 0 ]; then say "PASS"; else say "FAILED (exit $rc)"; fi
    exit "$rc"
}
# The step running now: timeout runs it in a process group of its own, which a Ctrl-C or a
# TERM to this script does not reach, so the signal is passed on (timeout ends the group).
cur=""
on_signal() {
    say "interrupted"
    if [ -n "$cur" ]; then
        kill -TERM "$cur" 2>/dev/null
        wait "$cur"
    fi
    exit 130
}
trap cleanup EXIT
trap on_signal INT TERM

# timed LIMIT COMMAND...: COMMAND under timeout, waited for so that signals are handled now.
timed() {
    local limit=$1 rc
    shift
    timeout --kill-after=10 "$limit" "$@" &
    cur=$!
    wait "$cur"
    rc=$?
    cur=""
    return "$rc"
}

# step NAME TIMEOUT_S COMMAND...: runs it under a timeout, records how long it took.
step() {
    local name=$1 limit=$2 t0 rc
    shift 2
    say "== $name (limit ${limit}s): $*"
    t0=$(date +%s)
    timed "$limit" "$@"
    rc=$?
    steps+=("$(printf '%-34s %4ds' "$name" $(( $(date +%s) - t0 )))")
    [ "$rc" = 124 ] && fail "$name: timed out after ${limit}s"
    [ "$rc" = 0 ] || fail "$name: exit $rc"
}

# quiet_step NAME TIMEOUT_S LOG COMMAND...: step, its output into LOG (the tail shown if it fails).
quiet_step() {
    local name=$1 limit=$2 log=$3
    shift 3
    step "$name" "$limit" bash -c '"${@:2}" > "$1" 2>&1 || { rc=$?; tail -30 "$1"; exit $rc; }' \
        _ "$log" "$@"
}

# ---- the packages ------------------------------------------------------------------------
debs=()
if [ $# -eq 0 ]; then
    version=$(dpkg-parsechangelog -l "$top_srcdir/debian/changelog" -S Version) ||
        fail "cannot read debian/changelog"
    src="$work/build/cashmere-rma-$version"
    mkdir -p "$src"
    say "copying the tree (tracked and untracked files, not ignored ones) to $src"
    if git -C "$top_srcdir" rev-parse --git-dir >/dev/null 2>&1; then
        (cd "$top_srcdir" && git ls-files -co --exclude-standard -z |
            xargs -0 cp --parents -t "$src") || fail "copying the tree"
        # The copy has no .git: record the commit, as a release tarball does, for the stats.
        git -C "$top_srcdir" describe --always --dirty > "$src/.commit" 2>/dev/null || true
    else
        cp -a "$top_srcdir/." "$src/" || fail "copying the tree"
    fi
    # --no-sign; DEB_BUILD_OPTIONS from the caller (e.g. nocheck) still applies.
    quiet_step "dpkg-buildpackage -b" 3600 "$work/build/build.log" \
        bash -c 'cd "$1" && exec dpkg-buildpackage -us -uc -b -j"$2"' _ "$src" "$jobs"
    say "build log: $work/build/build.log (tail)"
    tail -5 "$work/build/build.log"
    if command -v lintian >/dev/null 2>&1; then
        quiet_step "lintian --fail-on error" 600 "$work/build/lintian.log" \
            lintian --fail-on error "$work"/build/*.changes
        say "lintian: $(grep -c '^[EW]:' "$work/build/lintian.log") errors and warnings"
        cat "$work/build/lintian.log"
    else
        say "lintian not installed: the packages are not linted (apt-get install lintian)"
    fi
    for f in "$work"/build/*.deb; do
        case "$f" in *-dbgsym_*) ;; *) debs+=("$f") ;; esac
    done
else
    for a in "$@"; do
        if [ -d "$a" ]; then
            for f in "$a"/*.deb; do
                case "$f" in *-dbgsym_*) ;; *) [ -f "$f" ] && debs+=("$(realpath "$f")") ;; esac
            done
        else
            [ -f "$a" ] || fail "no such package: $a"
            debs+=("$(realpath "$a")")
        fi
    done
fi
[ ${#debs[@]} -ge 3 ] || fail "expected libcashmere0, libcashmere-dev and cashmere-rma, got: ${debs[*]:-none}"
say "packages:"
printf '    %s\n' "${debs[@]}"

# ---- a fresh Debian chroot ---------------------------------------------------------------
tarball="$cache/$suite-$arch-minbase.tgz"
mkdir -p "$cache/archives/partial" || fail "cannot create $cache"
if [ ! -s "$tarball" ]; then
    say "no cached base system: downloading one ($tarball)"
    quiet_step "debootstrap --make-tarball" 1800 "$work/debootstrap-download.log" \
        debootstrap --variant=minbase --arch="$arch" --make-tarball="$tarball.tmp" \
        "$suite" "$work/tarball-scratch" "$mirror"
    mv "$tarball.tmp" "$tarball"
    rm -rf --one-file-system "$work/tarball-scratch"
fi
quiet_step "debootstrap --unpack-tarball" 1200 "$work/debootstrap.log" \
    debootstrap --variant=minbase --arch="$arch" --unpack-tarball="$tarball" \
    "$suite" "$root" "$mirror"

# /proc and /sys of their own, the host's /dev (this namespace's copy of the mount), a
# private /dev/shm (UCX's and Open MPI's shared memory) and /dev/pts; apt's package cache
# from CM_DEB_CACHE so that reruns download nothing.
mount -t proc proc "$root/proc" || fail "mount /proc"
mount -t sysfs sysfs "$root/sys" || fail "mount /sys"
mount --bind /dev "$root/dev" || fail "bind /dev"
mount -t tmpfs -o mode=1777,size=2g tmpfs "$root/dev/shm" || fail "mount /dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" || fail "mount /dev/pts"
mount --bind "$cache/archives" "$root/var/cache/apt/archives" || fail "bind the apt cache"
say "mounted: $(chroot_mounts | tr '\n' ' ')"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
grep -q localhost "$root/etc/hosts" 2>/dev/null || echo "127.0.0.1 localhost" >> "$root/etc/hosts"

# A command in the chroot, with a clean environment (an array: timeout runs it, not a function).
in_chroot=(chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
           LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)

mkdir -p "$root/tmp/debs"
cp "${debs[@]}" "$root/tmp/debs/" || fail "copying the packages into the chroot"
step "apt-get update" 600 "${in_chroot[@]}" apt-get update -q
# The packages' own dependencies from the mirror; pkg-config only for the check of the .pc file.
step "apt-get install ./*.deb" 1200 "${in_chroot[@]}" bash -c \
    'apt-get install -y -q --no-install-recommends /tmp/debs/*.deb pkg-config'
say "installed:"
"${in_chroot[@]}" dpkg-query -W -f '    ${Package} ${Version} ${Status}\n' libcashmere0 libcashmere-dev cashmere-rma
"${in_chroot[@]}" dpkg -L cashmere-rma | grep -c '/apps/' | sed 's/^/    files under apps\/: /'

# ---- run them -------------------------------------------------------------------------
# UCX in a chroot: shared memory between the ranks (a fresh /dev/shm above).
out="$work/out.txt"
# run_out NAME TIMEOUT_S COMMAND...: in the chroot, under a timeout; the output is shown and
# kept in $out (outside the chroot) for the checks that follow.
run_out() {
    local name=$1 limit=$2
    shift 2
    say "== $name (limit ${limit}s): $*"
    local t0 rc
    t0=$(date +%s)
    timed "$limit" "${in_chroot[@]}" UCX_TLS=posix,sysv,self "$@" > "$out" 2>&1
    rc=$?
    sed 's/^/    | /' "$out"
    steps+=("$(printf '%-34s %4ds' "$name" $(( $(date +%s) - t0 )))")
    [ "$rc" = 124 ] && fail "$name: timed out after ${limit}s"
    [ "$rc" = 0 ] || fail "$name: exit $rc"
}
expect() { grep -q -- "$1" "$out" || fail "expected '$1' in the output"; }
count()  { grep -c -- "$1" "$out"; }

if "${in_chroot[@]}" cm_info --help 2>&1 | grep -q -- --version; then
    run_out "cm_info --version" 60 cm_info --version
    expect "0\."
fi
run_out "cm_info" 60 cm_info
run_out "cm_info --variants" 60 cm_info --variants
run_out "cmrun -n 2 sor" 600 cmrun -n 2 sor
expect "VERIFY OK"

run_out "cmcc --version" 60 cmcc --version
cp "$top_srcdir/tests/cmcc/sum.c" "$root/tmp/sum.c" || fail "copying tests/cmcc/sum.c"
run_out "cmcc sum.c -o sum -lm" 300 bash -c 'cd /tmp && cmcc sum.c -o sum -lm && ls -l sum'
run_out "cmrun -n 2 ./sum" 300 bash -c 'cd /tmp && cmrun -n 2 ./sum'
[ "$(count 'VERIFY OK')" -eq 2 ] || fail "sum: expected VERIFY OK from both ranks"
# CHSN doubles stores in software: only a program with the store hooks (cmcc's) runs under it.
run_out "CM_VARIANT=CHSN cmrun -n 2 ./sum" 300 bash -c 'cd /tmp && CM_VARIANT=CHSN cmrun -n 2 ./sum'
[ "$(count 'VERIFY OK, message .written through a libc call.$')" -eq 2 ] ||
    fail "sum under CHSN: expected VERIFY OK and the message from both ranks"
run_out "pkg-config cashmere*" 60 bash -c 'for m in cashmere cashmere-hooks cashmere-access; do
    printf "%s: " $m; pkg-config --cflags --libs $m || exit 1; done'
expect "^cashmere-hooks: .*-lcashmere_hooks"

exit 0
