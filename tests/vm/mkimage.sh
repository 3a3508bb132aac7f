#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/mkimage.sh: the guest of the two-VM cluster (tests/vm/run.sh), built once and cached.
#
# A Debian 12 root (debootstrap minbase + the runtime's libraries, Open MPI, rdma-core's
# user-space verbs with the soft-RoCE provider, ssh) and Debian's own kernel, whose rdma_rxe
# module gives soft-RoCE on a virtio NIC. The whole root is the guest's initramfs, so no disk
# image, loop device or guest partitioning is needed; the project itself is not in it: the guests
# mount this build tree over 9p at the same path (run.sh), so the image outlives rebuilds, and
# run.sh appends the guest's /init (tests/vm/init) as a second archive at every boot (the kernel
# unpacks concatenated initramfs archives in order).
#
#   tests/vm/mkimage.sh            prints the kernel and initramfs paths (builds them if needed)
#   CM_VM_CACHE=DIR                where they are kept (default /var/cache/cashmere-vm)
#   CM_VM_MIRROR=URL               the Debian mirror (default: this machine's, else deb.debian.org)
#
# Needs root (debootstrap), the mirror, and about 5 minutes the first time.
# Exit status: 0 built or cached, 1 failure, 77 cannot build here (said why).
set -euo pipefail

skip() { echo "mkimage: SKIP: $*" >&2; exit 77; }
die()  { echo "mkimage: error: $*" >&2; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)
cache=${CM_VM_CACHE:-/var/cache/cashmere-vm}
# gdb: the watchdog of tests/lib.sh prints a hung job's stacks with it.
# The runtime's shared libraries come from the same packages as on the build machine (same
# release), so binaries built here run in the guest unchanged.
pkgs=(libucx0 ucx-utils libpmix2 openmpi-bin ibverbs-providers ibverbs-utils rdma-core iproute2
      openssh-server openssh-client kmod procps libnuma1 libhwloc15 libmunge2 libevent-core-2.1-7
      libevent-pthreads-2.1-7 libudev1 gawk gdb-minimal)
mods=(virtio_pci virtio_net 9pnet_virtio 9p rdma_rxe ib_uverbs crc32_generic crc32-pclmul)

key=$(sha256sum < "$0" | cut -c1-12)
kernel="$cache/vmlinuz-$key"
initrd="$cache/initrd-$key.gz"
if [ -s "$kernel" ] && [ -s "$initrd" ]; then
    echo "$kernel $initrd"
    exit 0
fi

[ "$(id -u)" = 0 ] || skip "building the guest image needs root (debootstrap)"
for c in debootstrap apt-get dpkg-deb depmod modprobe cpio ssh-keygen; do
    command -v $c >/dev/null 2>&1 || skip "$c is not installed (debootstrap, apt, dpkg, kmod, cpio, openssh-client)"
done
[ "$(dpkg --print-architecture)" = amd64 ] || skip "the guest image is built for amd64 only"
mirror=${CM_VM_MIRROR:-$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)}
mirror=${mirror:-http://deb.debian.org/debian}

mkdir -p "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/root"

# Debian's kernel: its version is whatever linux-image-amd64 depends on in this release.
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -1)
[ -n "$kpkg" ] || die "cannot find Debian's kernel package (apt-get update first?)"
kver=${kpkg#linux-image-}
echo "mkimage: kernel $kver, root from $mirror (a few minutes the first time)" >&2
(cd "$work" && apt-get download "$kpkg" >"$work/download.log" 2>&1) || { cat "$work/download.log" >&2; die "apt-get download $kpkg failed"; }
dpkg-deb -x "$work"/linux-image-*.deb "$work/k"
depmod -b "$work/k" "$kver"

debootstrap --variant=minbase --include="$(IFS=,; echo "${pkgs[*]}")" bookworm "$root" "$mirror" \
    >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }

# Only the modules the guest loads, with what they depend on.
for m in "${mods[@]}"; do
    modprobe -d "$work/k" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | sort -u | while read -r f; do
    rel=${f#"$work/k"}
    mkdir -p "$root$(dirname "$rel")"
    cp "$f" "$root$rel"
done
cp "$work/k/lib/modules/$kver/modules.order" "$work/k/lib/modules/$kver/modules.builtin"* \
    "$root/lib/modules/$kver/"
depmod -b "$root" "$kver"

# Root logs in to the other guest without a password (mpirun's ssh agent), and any host key
# is accepted: the guests are made fresh for every run.
rm -f "$root"/etc/ssh/ssh_host_*
ssh-keygen -q -t ed25519 -N '' -f "$root/etc/ssh/ssh_host_ed25519_key"
mkdir -p "$root/root/.ssh"
ssh-keygen -q -t ed25519 -N '' -f "$root/root/.ssh/id_ed25519"
cp "$root/root/.ssh/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
cat > "$root/root/.ssh/config" <<'CFG'
Host *
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
CFG
chmod 700 "$root/root/.ssh"
cat >> "$root/etc/ssh/sshd_config" <<'CFG'
PermitRootLogin prohibit-password
UseDNS no
PermitUserEnvironment no
CFG
printf '127.0.0.1 localhost\n10.213.80.1 vm1\n10.213.80.2 vm2\n' > "$root/etc/hosts"
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/* \
    "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

cp "$work/k/boot/vmlinuz-$kver" "$kernel.tmp"
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) > "$initrd.tmp"
mv "$kernel.tmp" "$kernel"
mv "$initrd.tmp" "$initrd"
echo "mkimage: $(du -h "$initrd" | cut -f1) initramfs in $cache" >&2
echo "$kernel $initrd"
