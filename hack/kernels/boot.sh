#!/usr/bin/env bash
# Boots one kernel of the matrix under qemu (TCG: these machines' /dev/kvm runs no guest) and runs OUT/run.sh in
# it, as root, with the host's root filesystem read-only under a tmpfs overlay (hack/kernels/init), so the guest
# has this checkout, its node and the host's tools. OUT is the guest's only writable share: run.sh's output goes
# to OUT/run.log, its exit status to OUT/status, the console to OUT/console.log. Exits with run.sh's status, or
# 124 when the guest did not finish within TIMEOUT seconds, or 125 when it ended without a status.
# Usage: hack/kernels/boot.sh KERNEL_DIR OUT [TIMEOUT]   (KERNEL_DIR: kernels/<name>-<version>/ of fetch.sh)
# QEMU_SMP (2) and QEMU_MEM (2048, MiB) size the guest. BOOT_WAIT: seconds for run.sh to start before a reboot. GUEST_PRELOAD (amd64): files read into the guest's memory
# at boot instead of page by page over 9p (hack/kernels/init).
# An arm64 kernel (KERNEL_DIR/arch, hack/kernels/fetch.sh arm64; issue 41) boots under qemu-system-aarch64 (TCG,
# -M virt -cpu max) with another root, since the host's root is amd64: GUEST_ROOT (the arm64 image's unpacked root)
# under KERNEL_DIR/extras (busybox, iproute2, nftables, ...), both read-only under the tmpfs overlay, and each
# folder of GUEST_SHARES (space-separated: this checkout, its node_modules) read-only at its own path.
set -euo pipefail
kdir=$1 out=$2 timeout=${3:-900}
[ -f "$kdir/.complete" ] || { echo "boot: $kdir is not a fetched kernel (hack/kernels/fetch.sh)" >&2; exit 2; }
[ -f "$out/run.sh" ] || { echo "boot: $out/run.sh is missing" >&2; exit 2; }
rm -f "$out/status" "$out/run.log" "$out/console.log" "$out/shares" "$out/preload"
# GUEST_PRELOAD: host files (absolute, space-separated) the amd64 guest copies into its tmpfs layer at boot.
for f in ${GUEST_PRELOAD:-}; do echo "$f" >>"$out/preload"; done
echo "$(cd "$kdir/root/lib/modules/$(cat "$kdir/release")" && pwd)" >"$out/modules-dir"
arch=$(cat "$kdir/arch" 2>/dev/null || echo amd64)
ro=security_model=none,readonly=on,multidevs=remap
if [ "$arch" = arm64 ]; then
  [ -d "${GUEST_ROOT:-}/usr" ] || { echo "boot: an arm64 kernel needs GUEST_ROOT, an arm64 root filesystem" >&2; exit 2; }
  # The modules seen from the guest's root: bind-mounted from the extras' side of this share.
  echo /lib/modules-cache >"$out/modules-dir"
  qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -accel tcg,thread=multi)
  console=ttyAMA0
  shares=(-fsdev "local,id=host,path=$GUEST_ROOT,$ro" -device virtio-9p-pci,fsdev=host,mount_tag=host
    -fsdev "local,id=extras,path=$kdir/extras,$ro" -device virtio-9p-pci,fsdev=extras,mount_tag=extras
    -fsdev "local,id=modules,path=$kdir/root/lib/modules/$(cat "$kdir/release"),$ro" -device virtio-9p-pci,fsdev=modules,mount_tag=modules)
  i=0
  : >"$out/shares"
  for p in ${GUEST_SHARES:-}; do
    shares+=(-fsdev "local,id=share$i,path=$p,$ro" -device "virtio-9p-pci,fsdev=share$i,mount_tag=share$i")
    echo "share$i $p" >>"$out/shares"
    i=$((i + 1))
  done
else
  qemu=(qemu-system-x86_64 -accel tcg,thread=multi -cpu max)
  console=ttyS0
  shares=(-fsdev "local,id=host,path=/,$ro" -device virtio-9p-pci,fsdev=host,mount_tag=host)
  # The host's root once more, for the preload's uncached reads (one 9p device is mounted once).
  [ -s "$out/preload" ] && shares+=(-fsdev "local,id=hostdirect,path=/,$ro" -device virtio-9p-pci,fsdev=hostdirect,mount_tag=hostdirect)
fi
# The cached initramfs (busybox, boot modules) with this checkout's init appended, gzipped too: the kernel
# unpacks both (an uncompressed archive would have to start 4-byte aligned after the first).
initrd=$(mktemp -d)
trap 'rm -rf "$initrd"' EXIT
cp "$(dirname "$0")/init" "$initrd/init" && chmod 755 "$initrd/init"
{ cat "$kdir/initramfs.cpio.gz"; (cd "$initrd" && echo init | busybox cpio -o -H newc 2>/dev/null | gzip -1); } >"$initrd/initrd"
# A kernel that oopses before the init ran is booted again (up to 3 boots): under qemu's multi-threaded TCG an
# amd64 6.12 guest once died 1.7 s in with "Oops: int3" in sched_clock_cpu (the kernel patching its own text at
# boot), before run.sh could start; a fault after run.sh started is the suite's and is never retried.
# A guest that has not started run.sh within BOOT_WAIT seconds (300; 900 for arm64) is stopped and booted again
# too (up to 3 boots): an amd64 6.12 guest once hung at boot with RCU stalls ("timer wakeup didn't happen" on its
# CPU 1) and sat there until the timeout, 28 minutes.
boot_wait=${BOOT_WAIT:-$([ "$arch" = arm64 ] && echo 900 || echo 300)}
boot=1
while :; do
rm -f "$out/status" "$out/run.log" "$out/console.log"
set +e
timeout --kill-after=10 "$timeout" "${qemu[@]}" \
  -smp "${QEMU_SMP:-2}" -m "${QEMU_MEM:-2048}" \
  -nographic -no-reboot -nodefaults -serial "file:$out/console.log" -monitor none \
  -kernel "$kdir/vmlinuz" -initrd "$initrd/initrd" \
  -append "console=$console panic=-1 loglevel=4 rdinit=/init net.ifnames=0 mitigations=off" \
  "${shares[@]}" \
  -fsdev local,id=out,path="$out",security_model=none \
  -device virtio-9p-pci,fsdev=out,mount_tag=out </dev/null &
qpid=$!
stalled=0 waited=0
while kill -0 "$qpid" 2>/dev/null; do
  if [ ! -e "$out/run.log" ] && [ "$waited" -ge "$boot_wait" ]; then
    stalled=1
    kill "$qpid" 2>/dev/null # timeout passes it on to qemu
    break
  fi
  sleep 1
  waited=$((waited + 1))
done
wait "$qpid"
rc=$?
set -e
if [ $boot -lt 3 ] && [ $stalled -eq 1 ]; then
  echo "boot: $(cat "$kdir/release") had not started its init's run.sh after ${boot_wait} s (boot $boot); booting it again. The console's tail:" >&2
  tail -5 "$out/console.log" >&2 || true
  cp "$out/console.log" "$out/console-boot$boot.log" 2>/dev/null || true
  boot=$((boot + 1))
  continue
fi
if [ $boot -lt 3 ] && [ ! -s "$out/status" ] && [ ! -e "$out/run.log" ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] &&
  grep -qE 'Oops:|Kernel panic' "$out/console.log" 2>/dev/null; then
  echo "boot: $(cat "$kdir/release") oopsed before its init ran (boot $boot); booting it again. The oops:" >&2
  grep -m1 -A2 -E 'Oops:|Kernel panic' "$out/console.log" >&2 || true
  cp "$out/console.log" "$out/console-boot$boot.log" 2>/dev/null || true
  boot=$((boot + 1))
  continue
fi
break
done
if [ $stalled -eq 1 ]; then
  echo "boot: $(cat "$kdir/release") had not started its init's run.sh after ${boot_wait} s, $boot boots; the console's tail:" >&2
  tail -20 "$out/console.log" >&2 || true
  exit 124
fi
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
