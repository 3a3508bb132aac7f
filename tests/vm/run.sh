#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/run.sh: a two-VM cluster over soft-RoCE, and the protocols run on it.
#
# Two QEMU guests (TCG: this machine kind has no usable KVM) boot Debian's kernel with the root
# of tests/vm/mkimage.sh; each puts rdma_rxe (soft-RoCE) on its virtio NIC, and the NICs are
# joined by a stream socket between the two QEMUs (not the host's network). Both mount this
# build tree over 9p at the same path, so the binaries of this build run there unchanged.
# Guest vm1 runs tests/vm/guest.sh, which starts ranks on both guests with mpirun over ssh and
# UCX_TLS=rc_verbs,ud_verbs,self; its log streams here.
#
#   tests/vm/run.sh [--short|--long] [--keep DIR]
#     --short   one boot, a bounded litmus set and two apps (what .ci/run runs; ~10 minutes)
#     --long    every litmus case under CHSM CHSN CHHM NSSN NSHM and TreadMarks (fault, scan),
#               the nine apps at test size, cm_bench next to ucx_perftest (about an hour)
#     --bench   cm_bench next to ucx_perftest and the scoreboard across the guests at paper size
#               (the apps' Table 2 over verbs; CM_VM_APPS, CM_VM_REPS, CM_VM_SETTINGS; an hour or more)
#     --board   the scoreboard alone (cm_bench --link measures the link for its limits)
#     --keep DIR   keep the consoles, the log and the benchmark tables in DIR
#   CM_VM_CACHE, CM_VM_MIRROR: see mkimage.sh. CM_VM_SMP (2), CM_VM_MEM (3072 MiB) per guest.
#   CM_VM_CMD: a shell command vm1 runs instead of guest.sh (in the build tree; vm2 serves ssh)
# Exit status: 0 pass, 1 failure, 77 cannot run here (said why).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
mode=short keep=""
while [ $# -gt 0 ]; do
    case "$1" in
        --short) mode=short ;;
        --long)  mode=long ;;
        --bench) mode=bench ;;
        --board) mode=board ;;
        --keep)  keep=$2; shift ;;
        *) echo "run.sh: unknown argument '$1' (--short, --long, --bench, --board, --keep DIR)" >&2; exit 2 ;;
    esac
    shift
done

skip() { echo "vm: SKIP: $*"; exit 77; }
command -v qemu-system-x86_64 >/dev/null 2>&1 ||
    skip "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
[ -x "$top_builddir/src/tools/cmrun" ] || { echo "vm: error: $top_builddir is not built" >&2; exit 1; }

image=$("$here/mkimage.sh")
rc=$?
[ "$rc" -eq 77 ] && skip "no guest image: see the line above"
[ "$rc" -eq 0 ] || { echo "vm: error: the guest image could not be built" >&2; exit 1; }
read -r kernel root <<< "$image"

dir=$(mktemp -d /tmp/cmvm.XXXXXX)
pids=()
cleanup() {
    local p
    for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    if [ -n "$keep" ]; then mkdir -p "$keep" && cp -r "$dir"/. "$keep"/; fi
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$dir/out" "$dir/init"
# The guest's /init, from this tree, as a second archive after the cached root.
install -m 755 "$here/init" "$dir/init/init"
initrd="$dir/initrd.gz"
{ cat "$root"; (cd "$dir/init" && echo init | cpio -o -H newc --quiet | gzip -1); } > "$initrd" ||
    { echo "vm: error: cannot write the initramfs" >&2; exit 1; }
if [ -n "${CM_VM_CMD:-}" ]; then
    printf '%s\n' "$CM_VM_CMD" > "$dir/out/cmd" # a command of one's own, run in vm1's tree
else
    # CMT_*: tests/lib.sh clears CM_* settings in the guest.
    printf 'top_srcdir=%q top_builddir=%q CMT_VM_APPS=%q CMT_VM_REPS=%q CMT_VM_SETTINGS=%q %q --%s\n' \
        "$top_srcdir" "$top_builddir" "${CM_VM_APPS:-sor gauss water fft}" "${CM_VM_REPS:-1}" \
        "${CM_VM_SETTINGS:-treadmarks treadmarks-scan CHSM/cas CHSM/add CHSN/add}" \
        "$top_srcdir/tests/vm/guest.sh" "$mode" > "$dir/out/cmd"
fi

# boot NAME ADDR on|off [run]: one guest; its NIC is one end of a stream socket (server=on
# listens). A stream, not datagrams: RoCE expects a lossless fabric (PFC), and a stream socket
# between the QEMUs never drops a frame.
boot() {
    local name=$1 ip=$2 server=$3 run=${4:-} shares=()
    shares=(-virtfs "local,path=$top_builddir,mount_tag=tree,security_model=none")
    [ -n "$run" ] && shares+=(-virtfs "local,path=$dir/out,mount_tag=out,security_model=none")
    qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "${CM_VM_SMP:-2}" \
        -m "${CM_VM_MEM:-3072}" -display none -monitor none -no-reboot \
        -serial "file:$dir/$name.console" \
        -kernel "$kernel" -initrd "$initrd" \
        -append "console=ttyS0 panic=1 quiet cm.name=$name cm.ip=$ip cm.tree=$top_builddir${run:+ cm.run=1}" \
        -netdev "stream,id=link,server=$server,addr.type=unix,addr.path=$dir/link.sock" \
        -device virtio-net-pci,netdev=link,mac=52:54:00:cd:80:0${ip##*.} \
        "${shares[@]}" &
    pids+=($!)
}
[ "$top_srcdir" = "$top_builddir" ] || skip "a build outside the source tree: run.sh shares one tree with the guests"
start=$(date +%s)
boot vm2 10.213.80.2 on
for _ in $(seq 100); do [ -S "$dir/link.sock" ] && break; sleep 0.1; done
[ -S "$dir/link.sock" ] || { echo "vm: error: the first guest's QEMU did not start; see above" >&2; exit 1; }
boot vm1 10.213.80.1 off run
vm1=${pids[1]}
echo "vm: two guests booting (TCG, ${CM_VM_SMP:-2} vCPUs and ${CM_VM_MEM:-3072} MiB each), --$mode"
touch "$dir/out/log"
tail -n +1 -f --pid="$vm1" "$dir/out/log" &
wait "$vm1"
sleep 1
if [ ! -s "$dir/out/rc" ]; then
    echo "vm: FAIL: guest vm1 ended without a result; its console:"
    tail -30 "$dir/vm1.console"
    exit 1
fi
rc=$(cat "$dir/out/rc")
echo "vm: guest.sh --$mode ended with status $rc after $(($(date +%s) - start)) s"
exit "$rc"
