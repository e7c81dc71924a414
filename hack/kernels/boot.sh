#!/usr/bin/env bash
# Boots one kernel of the matrix under qemu (TCG: these machines' /dev/kvm runs no guest) and runs OUT/run.sh in
# it, as root, with the host's root filesystem read-only under a tmpfs overlay (hack/kernels/init), so the guest
# has this checkout, its node and the host's tools. OUT is the guest's only writable share: run.sh's output goes
# to OUT/run.log, its exit status to OUT/status, the console to OUT/console.log. Exits with run.sh's status, or
# 124 when the guest did not finish within TIMEOUT seconds, or 125 when it ended without a status.
# Usage: hack/kernels/boot.sh KERNEL_DIR OUT [TIMEOUT]   (KERNEL_DIR: kernels/<name>-<version>/ of fetch.sh)
# QEMU_SMP (2) and QEMU_MEM (2048, MiB) size the guest.
set -euo pipefail
kdir=$1 out=$2 timeout=${3:-900}
[ -f "$kdir/.complete" ] || { echo "boot: $kdir is not a fetched kernel (hack/kernels/fetch.sh)" >&2; exit 2; }
[ -f "$out/run.sh" ] || { echo "boot: $out/run.sh is missing" >&2; exit 2; }
rm -f "$out/status" "$out/run.log" "$out/console.log"
echo "$(cd "$kdir/root/lib/modules/$(cat "$kdir/release")" && pwd)" >"$out/modules-dir"
# The cached initramfs (busybox, boot modules) with this checkout's init appended, gzipped too: the kernel
# unpacks both (an uncompressed archive would have to start 4-byte aligned after the first).
initrd=$(mktemp -d)
trap 'rm -rf "$initrd"' EXIT
cp "$(dirname "$0")/init" "$initrd/init" && chmod 755 "$initrd/init"
{ cat "$kdir/initramfs.cpio.gz"; (cd "$initrd" && echo init | busybox cpio -o -H newc 2>/dev/null | gzip -1); } >"$initrd/initrd"
set +e
timeout --kill-after=10 "$timeout" qemu-system-x86_64 \
  -accel tcg,thread=multi -cpu max -smp "${QEMU_SMP:-2}" -m "${QEMU_MEM:-2048}" \
  -nographic -no-reboot -nodefaults -serial "file:$out/console.log" -monitor none \
  -kernel "$kdir/vmlinuz" -initrd "$initrd/initrd" \
  -append "console=ttyS0 panic=-1 loglevel=4 rdinit=/init net.ifnames=0 mitigations=off" \
  -fsdev local,id=host,path=/,security_model=none,readonly=on,multidevs=remap \
  -device virtio-9p-pci,fsdev=host,mount_tag=host \
  -fsdev local,id=out,path="$out",security_model=none \
  -device virtio-9p-pci,fsdev=out,mount_tag=out </dev/null
rc=$?
set -e
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
  echo "boot: $(cat "$kdir/release") did not finish in $timeout s; the console's tail:" >&2
  tail -20 "$out/console.log" >&2 || true
  exit 124
fi
[ -s "$out/status" ] || {
  echo "boot: $(cat "$kdir/release") ended without a status (qemu exited $rc); the console's tail:" >&2
  tail -30 "$out/console.log" >&2 || true
  exit 125
}
exit "$(cat "$out/status")"
