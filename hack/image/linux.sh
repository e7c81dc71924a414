#!/usr/bin/env bash
# The Linux image, built offline with no daemon and no base image (make image):
#   rootfs = Debian 12 .debs of <arch> (apt-get download with an apt configuration of its own + dpkg-deb -x: glibc, libstdc++,
#            libbpf and its libraries, ca-certificates, tcpdump and libpcap for captures; no shell, no compiler)
#          + the pinned Node 22 binary of <arch> (.cache/node for this machine's, .cache/node-linux-<arch> for another, npm's
#            node-linux-<arch>) + the Linux bundle (build/bundle/linux-<node arch>)
#   umoci  -> OCI layout build/image/oci-linux-<arch> (tag linux-<arch>), entrypoint = bin/retina-agent's node flags
#            and the agent's start-up snapshot (/app/retina-agent.blob, made by the image's node)
#   skopeo -> build/image/retina-ts-linux-<arch>.oci.tar (oci-archive) and .docker.tar (docker-archive)
# hack/image/index.sh then joins the architectures' layouts into one OCI image index (make image).
# The start-up snapshot is made only for this machine's architecture: a blob is made by the node that loads it, and
# another architecture's node does not run here. That image's entrypoint runs /app/retina-agent.mjs instead.
# Usage: hack/image/linux.sh <version> <source-url> <revision> [<arch>: amd64 | arm64, default this machine's]
set -euo pipefail
shopt -s extglob
cd "$(dirname "$0")/../.."
. hack/image/common.sh
version=$1 source=$2 revision=$3
host=$(dpkg --print-architecture)
arch=${4:-$host}                         # amd64, arm64 (OCI names)
case $arch in amd64) narch=x64 ;; arm64) narch=arm64 ;; *) echo "image: no Linux image for $arch" >&2; exit 2 ;; esac
node_bin=.cache/node/bin/node
[ "$arch" = "$host" ] || node_bin=.cache/node-linux-$narch/package/bin/node
[ -x "$node_bin" ] || { echo "image: the $arch node is missing at $node_bin (make image fetches it)" >&2; exit 1; }
out=build/image
tag=linux-$arch
layout=$out/oci-$tag
rootfs=$out/linux-rootfs-$arch
debs=.cache/image/debs-$arch

# What the agent links (libbpf over koffi; node itself), tcpdump for captures, and their dependencies
# (libpcap -> libdbus -> libsystemd -> ...). adduser (tcpdump's postinst) is left out: no scripts run.
# The capture workload's metadata (retina-capture, src/capture/linux/metadata.ts) runs ip and ss
# (iproute2), iptables-save/iptables (iptables, nft and legacy) and nft (nftables): those and the
# libraries they link (ldd of each binary).
PACKAGES=(libc6 libstdc++6 libgcc-s1 libbpf1 libelf1 zlib1g libzstd1 ca-certificates
  tcpdump libpcap0.8 libssl3 libdbus-1-3 libsystemd0 libcap2 libgcrypt20 libgpg-error0 liblz4-1 liblzma5
  iproute2 iptables nftables libbsd0 libmd0 libmnl0 libselinux1 libpcre2-8-0 libtirpc3 libgssapi-krb5-2 libkrb5-3 libk5crypto3
  libkrb5support0 libkeyutils1 libcom-err2 libxtables12 libip4tc2 libip6tc2 libnftnl11 libnftables1 libedit2 libjansson4 libgmp10 libtinfo6)

mkdir -p "$debs"
# The packages come from Debian 12 (bookworm and its security suite) through an apt configuration of the image's
# own (hack/lib/apt.sh: its own sources, lists and an empty status file, in the tools cache outside the clone),
# whatever the build machine's sources say. apt-get download fetches the candidate versions; a .deb already in
# the cache is reused. When a download fails (lists older than the archive), the lists are fetched again once.
missing=()
for p in "${PACKAGES[@]}"; do
  compgen -G "$debs/${p}_*_@(${arch}|all).deb" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  . hack/lib/apt.sh
  debian_uris
  apt_own "${RETINA_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retina-ts}/apt/image-bookworm-$arch" "$arch" \
    "deb $DEBIAN_ARCHIVE bookworm main" "deb $DEBIAN_SECURITY bookworm-security main"
  download() { (cd "$debs" && apt-get download -qq "${missing[@]}"); }
  download || { apt_update && download; }
fi

rm -rf "$rootfs" && mkdir -p "$rootfs"
for d in "$debs"/*_@(${arch}|all).deb; do dpkg-deb -x "$d" "$rootfs"; done
# Documentation, manuals and locales are not needed at run time.
rm -rf "$rootfs"/usr/share/{doc,man,info,locale,lintian,bug,gcc,gdb} "$rootfs"/usr/lib/*/gconv "$rootfs"/etc/{init.d,cron.daily,logrotate.d,apparmor.d}
# update-ca-certificates' job (a postinst that does not run here): the bundle file TLS clients read.
mkdir -p "$rootfs/etc/ssl/certs"
cat "$rootfs"/usr/share/ca-certificates/mozilla/*.crt > "$rootfs/etc/ssl/certs/ca-certificates.crt"
ldconfig -r "$rootfs"
# update-alternatives' job for iptables (a postinst that does not run here): the nft variant, Debian 12's default.
for t in iptables ip6tables iptables-save ip6tables-save; do ln -sfn xtables-nft-multi "$rootfs/usr/sbin/$t"; done
mkdir -p "$rootfs/tmp" "$rootfs/usr/local/bin" "$rootfs/app"
chmod 1777 "$rootfs/tmp"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$rootfs/etc/group"
install -m 0755 "$node_bin" "$rootfs/usr/local/bin/node"
cp -a "build/bundle/linux-$narch/." "$rootfs/app/"
# The agent's start-up snapshot, made again by the image's own node (a blob loads only in the Node build
# that made it) and checked (src/cli/agent-snapshot.ts; hack/snapshot.mjs); only this machine's node runs here.
if [ "$arch" = "$host" ]; then node hack/snapshot.mjs make "$rootfs/usr/local/bin/node" "$rootfs/app"; fi
# A compiler in the image would be a build leftover: refuse it.
if compgen -G "$rootfs/usr/bin/*cc*" >/dev/null || compgen -G "$rootfs/usr/bin/clang*" >/dev/null; then echo "a compiler ended up in the image" >&2; exit 1; fi

entry=(--config.entrypoint /usr/local/bin/node)
flags=$(agent_node_flags)
for f in $flags; do entry+=(--config.entrypoint "$f"); done
# The agent from its start-up snapshot: the args (the chart's --config ...) follow `--`. Without it (another
# architecture's image): node <flags> /app/retina-agent.mjs (docs/install.md).
if [ -f "$rootfs/app/retina-agent.blob" ]; then
  entry+=(--config.entrypoint --snapshot-blob --config.entrypoint /app/retina-agent.blob --config.entrypoint --)
else
  entry+=(--config.entrypoint /app/retina-agent.mjs)
fi
mapfile -t labels < <(oci_labels)

new_image "$layout" "$tag" "$rootfs" .
umoci config --image "$layout:$tag" --os linux --architecture "$arch" "${entry[@]}" \
  --config.workingdir /app --config.env PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin:/sbin \
  --config.env NODE_ENV=production "${labels[@]}"
umoci gc --layout "$layout"

rm -f "$out/retina-ts-$tag.oci.tar" "$out/retina-ts-$tag.docker.tar"
skopeo copy -q "oci:$layout:$tag" "oci-archive:$out/retina-ts-$tag.oci.tar:retina-ts:$version"
skopeo copy -q "oci:$layout:$tag" "docker-archive:$out/retina-ts-$tag.docker.tar:retina-ts:$version"
ls -l "$out/retina-ts-$tag".*.tar | awk '{printf "%s %.1f MB\n", $9, $5/1e6}'
