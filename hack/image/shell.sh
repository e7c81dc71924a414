#!/usr/bin/env bash
# The shell image of `kubectl retina shell` and `kubectl retina bpftrace` (issue 39), built offline like the agent's
# (hack/image/linux.sh): no daemon, no base image, Debian 12 packages fetched through an apt configuration of the
# image's own (hack/lib/apt.sh), never the machine's sources.
#   rootfs = the .debs of TOOLS below and every package they depend on (apt resolves the closure against an empty
#            status file: `apt-get -s install --no-install-recommends`), minus what only maintainer scripts need
#            (perl, debconf, dpkg, adduser: no scripts run here), unpacked with dpkg-deb -x
#   umoci  -> OCI layout build/image/oci-shell-<arch> (tag shell-<arch>), CMD /bin/bash
#   skopeo -> build/image/retina-ts-shell-<arch>.oci.tar (oci-archive) and .docker.tar, ref retina-ts-shell:<version>
# pwru is not in the image: the Go module proxy refuses github.com/cilium/pwru (403 for every version, checked
# 2026-11-29), and pwru attaches kprobes, which the kernels this project tests on lack (docs/kubectl-plugin.md).
# Usage: hack/image/shell.sh <version> <source-url> <revision> [<arch>: amd64 | arm64, default this machine's]
set -euo pipefail
shopt -s extglob
cd "$(dirname "$0")/../.."
. hack/image/common.sh
version=$1 source=$2 revision=$3
arch=${4:-$(dpkg --print-architecture)}
case $arch in amd64 | arm64) ;; *) echo "shell image: no image for $arch" >&2; exit 2 ;; esac
out=build/image
tag=shell-$arch
layout=$out/oci-$tag
rootfs=$out/shell-rootfs-$arch
debs=.cache/image/shell-debs-$arch

# What an on-call engineer reaches for (Retina's shell/Dockerfile, from Debian 12): tracing (bpftrace 0.17, bpftool),
# packets (tcpdump), the network stack (iproute2, nftables, iptables, conntrack, ethtool), DNS (dig, nslookup, host),
# HTTP (curl), ping, tracepath, traceroute, nc, socat, jq, procps (ps, top, sysctl), util-linux (mount, nsenter, lsns),
# hostname, and a shell.
TOOLS=(bash dash coreutils util-linux mount procps hostname grep sed gawk findutils less ncurses-base file
  bpftrace bpftool tcpdump iproute2 nftables iptables conntrack ethtool bind9-dnsutils curl ca-certificates
  iputils-ping iputils-tracepath traceroute netcat-openbsd socat jq)
# Needed only by maintainer scripts (which never run here) or by dpkg itself: left out.
SKIP='^(perl|perl-base|perl-modules-.*|libperl.*|lib.*-perl|debconf|dpkg|adduser|passwd|usrmerge|init-system-helpers|libpam-modules.*|libsemanage.*|libsepol2|libdb5.3|libgdbm.*|debianutils|base-files|sensible-utils)$'

. hack/lib/apt.sh
debian_uris
apt_own "${RETINA_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retina-ts}/apt/image-bookworm-$arch" "$arch" \
  "deb $DEBIAN_ARCHIVE bookworm main" "deb $DEBIAN_SECURITY bookworm-security main"
resolve() { apt-get -s -qq install --no-install-recommends "${TOOLS[@]}" 2>/dev/null | awk '/^Inst /{print $2}' | grep -Ev "$SKIP"; }
mapfile -t PACKAGES < <(resolve || true)
[ ${#PACKAGES[@]} -gt 20 ] || { apt_update; mapfile -t PACKAGES < <(resolve); }
mkdir -p "$debs"
missing=()
for p in "${PACKAGES[@]}"; do
  compgen -G "$debs/${p}_*_@(${arch}|all).deb" >/dev/null || missing+=("$p")
done
download() { (cd "$debs" && apt-get download -qq "${missing[@]}"); }
if [ ${#missing[@]} -gt 0 ]; then download || { apt_update && download; }; fi

rm -rf "$rootfs" && mkdir -p "$rootfs"
for p in "${PACKAGES[@]}"; do
  # the newest .deb of the package in the cache (an older one stays after a security update)
  d=$(ls -1 "$debs/${p}"_*_@(${arch}|all).deb | sort -V | tail -1)
  dpkg-deb -x "$d" "$rootfs"
done
rm -rf "$rootfs"/usr/share/{doc,man,info,locale,lintian,bug,gcc,gdb} "$rootfs"/etc/{init.d,cron.daily,logrotate.d,apparmor.d}
mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/tmp" "$rootfs/root" "$rootfs/host" "$rootfs/var/run"
cat "$rootfs"/usr/share/ca-certificates/mozilla/*.crt > "$rootfs/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$rootfs/tmp"
ldconfig -r "$rootfs"
# update-alternatives' jobs (postinsts that do not run here): iptables-nft (Debian 12's default), nc, traceroute, awk.
for t in iptables ip6tables iptables-save ip6tables-save iptables-restore ip6tables-restore; do ln -sfn xtables-nft-multi "$rootfs/usr/sbin/$t"; done
ln -sfn nc.openbsd "$rootfs/bin/nc"
ln -sfn traceroute.db "$rootfs/usr/bin/traceroute"
ln -sfn traceroute6.db "$rootfs/usr/bin/traceroute6"
ln -sfn gawk "$rootfs/usr/bin/awk"
printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$rootfs/etc/group"
printf 'hosts: files dns\n' > "$rootfs/etc/nsswitch.conf"
printf "PS1='retina-shell \\\\w# '\n" > "$rootfs/root/.bashrc"
# Every tool must start in the image's own root (a missing library shows here, not on a node).
for t in bash hostname bpftrace bpftool tcpdump ip nft iptables conntrack ethtool dig curl ping tracepath traceroute nc socat jq ps; do
  chroot "$rootfs" /usr/bin/env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin sh -c "command -v $t" >/dev/null \
    || { echo "shell image: $t is missing from the image" >&2; exit 1; }
done
[ "$arch" != "$(dpkg --print-architecture)" ] || chroot "$rootfs" /usr/bin/bpftrace --version >/dev/null

mapfile -t labels < <(oci_labels | sed 's/org.opencontainers.image.title=retina-ts$/org.opencontainers.image.title=retina-ts-shell/')
new_image "$layout" "$tag" "$rootfs" .
umoci config --image "$layout:$tag" --os linux --architecture "$arch" --config.cmd /bin/bash \
  --config.workingdir /root --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.env HOME=/root --config.env TERM=xterm "${labels[@]}"
umoci gc --layout "$layout"
rm -f "$out/retina-ts-$tag.oci.tar" "$out/retina-ts-$tag.docker.tar"
skopeo copy -q "oci:$layout:$tag" "oci-archive:$out/retina-ts-$tag.oci.tar:retina-ts-shell:$version"
skopeo copy -q "oci:$layout:$tag" "docker-archive:$out/retina-ts-$tag.docker.tar:retina-ts-shell:$version"
ls -l "$out/retina-ts-$tag".*.tar | awk '{printf "%s %.1f MB\n", $9, $5/1e6}'
du -sm "$rootfs" | awk '{printf "unpacked %d MB\n", $1}'
