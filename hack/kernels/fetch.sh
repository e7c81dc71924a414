#!/usr/bin/env bash
# The kernels of the matrix (issue 36), fetched once into the tools cache outside the clone
# ($RETINA_TOOLS_CACHE, default ~/.cache/retina-ts), at kernels/<name>-<version>/:
#   vmlinuz                   the kernel
#   root/lib/modules/<release>  its modules (depmod run here), bind-mounted at /lib/modules/<release> in the guest
#   initramfs.cpio.gz         busybox and the modules that init needs before it mounts the host's root (virtio
#                             PCI, 9p, overlay); hack/kernels/boot.sh appends hack/kernels/init at each boot
#   release                   the kernel's release string (uname -r)
#   .complete                 written last
# The packages come from Debian's repositories through an apt configuration of the matrix's own (its own
# sources, lists and an empty status file: APT_CONFIG), never the machine's sources, so nothing is installed
# and the machine's packages are never upgraded. Each .deb is checked against hack/kernels/versions' sha256.
# With `arm64` first (hack/kernels/fetch.sh arm64 [NAME...]), the kernels of hack/kernels/versions-arm64 (issue 41),
# the same way, through an arm64 apt configuration of their own, with two differences: the initramfs's busybox is
# the arm64 busybox-static, and beside the kernel sits
#   extras/                   what the arm64 guest's root needs beyond the arm64 image's root (test/kernels/arm64.test.ts
#                             lays it over the image's): busybox (the shell, cat, sysctl), iproute2 (ip, tc), nftables,
#                             ethtool, kmod (the kernel's module loads), curl, bpftool (the suite's leftovers check), each with its libraries (apt's own
#                             resolution of their dependencies), unpacked with dpkg-deb -x
# Usage: hack/kernels/fetch.sh [arm64] [NAME...]   (default: every kernel of hack/kernels/versions[-arm64])
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tools.sh"
tools_dirs kernels any
KTOOLS="$TOOLS/kernels"
mkdir -p "$KTOOLS"
ARCH=amd64 VERSIONS="$HERE/versions"
if [ "${1:-}" = arm64 ]; then
  ARCH=arm64 VERSIONS="$HERE/versions-arm64"
  shift
fi
# The arm64 guest's extras (above); the initramfs's busybox comes from its busybox-static.
EXTRAS="busybox-static iproute2 nftables ethtool kmod curl bpftool"

BUSYBOX=/bin/busybox # Debian's busybox-static: the guest's init runs it before any library is there
GUEST_BUSYBOX=$BUSYBOX # the initramfs's (the arm64 one for an arm64 kernel)
for t in depmod modprobe dpkg-deb apt-get sha256sum xz; do
  command -v "$t" >/dev/null || { echo "kernels: $t is missing (Debian: kmod, dpkg, apt, xz-utils)" >&2; exit 1; }
done
[ -x "$BUSYBOX" ] || { echo "kernels: a static busybox is needed (Debian: busybox-static)" >&2; exit 1; }

# The apt configuration of our own (hack/lib/apt.sh): the suites the pins name, fetched once a fetch needs them.
. "$HERE/../lib/apt.sh"
APT_READY=
apt_setup() {
  [ -n "$APT_READY" ] && return 0
  debian_uris
  if [ "$ARCH" = arm64 ]; then
    apt_own "$KTOOLS/apt-arm64" arm64 "deb $DEBIAN_ARCHIVE bookworm main" "deb $DEBIAN_SECURITY bookworm-security main"
  else
    apt_own "$KTOOLS/apt" amd64 \
      "deb $DEBIAN_ARCHIVE bullseye main" "deb $DEBIAN_SECURITY bullseye-security main" \
      "deb $DEBIAN_ARCHIVE bookworm main" "deb $DEBIAN_SECURITY bookworm-security main" "deb $DEBIAN_ARCHIVE bookworm-backports main"
  fi
  APT_READY=1
}

# extras DIR: the arm64 guest's extras (EXTRAS and their dependencies, apt's resolution with the empty status of the
# configuration), downloaded into the configuration's own cache and unpacked into DIR.
extras() {
  local dir=$1 archives="$KTOOLS/apt-arm64/extras" d
  apt_setup
  mkdir -p "$archives/partial"
  get() { apt-get install -d -y -qq --no-install-recommends -o Dir::Cache::archives="$archives" $EXTRAS >/dev/null; }
  get || { apt_update && get; }
  mkdir -p "$dir"
  for d in "$archives"/*.deb; do dpkg-deb -x "$d" "$dir"; done
  GUEST_BUSYBOX="$dir/bin/busybox"
}

# Boot modules for init, in load order (modprobe --show-depends resolves each one's dependencies).
BOOT_MODULES="virtio_pci 9pnet_virtio 9p overlay"

fetch_one() {
  local name=$1 suite=$2 pkg=$3 version=$4 sha=$5
  local dir="$KTOOLS/$name-$version"
  [ -f "$dir/.complete" ] && return 0
  local debs="$KTOOLS/debs" deb
  mkdir -p "$debs"
  deb="$debs/${pkg}_${version//:/%3a}_$ARCH.deb"
  if ! [ -f "$deb" ] || ! echo "$sha  $deb" | sha256sum -c --quiet - 2>/dev/null; then
    apt_setup
    tools_log kernels "downloading $pkg=$version ($suite)"
    download() { (cd "$debs" && apt-get download -qq "$pkg=$version"); }
    download || { apt_update && download; } || {
      echo "kernels: $pkg=$version is not served by $suite any more: update its line in hack/kernels/versions" \
        "(APT_CONFIG=$APT_CONFIG apt-cache policy '$pkg' shows what is; the sha256 is apt-cache show's)" >&2
      exit 1
    }
  fi
  echo "$sha  $deb" | sha256sum -c --quiet - || { echo "kernels: $deb does not match the sha256 of hack/kernels/versions" >&2; exit 1; }
  rm -rf "$dir" "$dir.tmp" && mkdir -p "$dir.tmp/root"
  dpkg-deb -x "$deb" "$dir.tmp/root"
  [ "$ARCH" = amd64 ] || { extras "$dir.tmp/extras" && echo "$ARCH" >"$dir.tmp/arch"; }
  local release
  release=$(ls "$dir.tmp/root/lib/modules")
  mv "$dir.tmp/root/boot/vmlinuz-$release" "$dir.tmp/vmlinuz"
  rm -rf "$dir.tmp/root/boot" "$dir.tmp/root/usr"
  depmod -b "$dir.tmp/root" "$release"
  echo "$release" >"$dir.tmp/release"
  # The initramfs: busybox, init, the boot modules (uncompressed: busybox's insmod reads plain .ko files).
  local ird="$dir.tmp/initramfs" m path n=0
  mkdir -p "$ird/bin" "$ird/modules"
  cp "$GUEST_BUSYBOX" "$ird/bin/busybox"
  : >"$ird/modules.list"
  for m in $BOOT_MODULES; do
    modprobe -d "$dir.tmp/root" -S "$release" --show-depends "$m" | while read -r kind path _; do
      [ "$kind" = insmod ] || continue
      local base
      base=$(basename "$path")
      base=${base%.xz}
      base=${base%.zst}
      grep -qx "$base" "$ird/modules.list" && continue
      case $path in
        *.xz) xz -dc "$path" >"$ird/modules/$base" ;;
        *.zst) zstd -qdc "$path" >"$ird/modules/$base" ;;
        *) cp "$path" "$ird/modules/$base" ;;
      esac
      echo "$base" >>"$ird/modules.list"
    done
  done
  n=$(wc -l <"$ird/modules.list")
  (cd "$ird" && find . | "$BUSYBOX" cpio -o -H newc 2>/dev/null | gzip -1 >"$dir.tmp/initramfs.cpio.gz")
  rm -rf "$ird"
  touch "$dir.tmp/.complete"
  mv "$dir.tmp" "$dir"
  tools_log kernels "$name: $release ready in $dir ($n boot modules)"
}

want=" $* "
while read -r name suite pkg version sha; do
  case $name in '' | '#'*) continue ;; esac
  [ $# -eq 0 ] || [[ $want == *" $name "* ]] || continue
  fetch_one "$name" "$suite" "$pkg" "$version" "$sha"
done <"$VERSIONS"
