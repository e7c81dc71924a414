#!/usr/bin/env bash
# Builds the real node's parts from Go modules (module proxy only) into the tools cache outside the
# clone ($RETINA_TOOLS_CACHE, default ~/.cache/retina-ts), node/bin/<key>/:
#   kubelet, kube-proxy       k8s.io/kubernetes $K8S_VERSION: built by hack/k8s/build.sh in the control
#                             plane's one `go build` and linked from there; when that cache was made before it
#                             built them, here, from the same throw-away main module, staging replaces and
#                             ldflags (hack/k8s/module.sh), so the Go build cache of its packages is shared
#   containerd, containerd-shim-runc-v2, ctr   github.com/containerd/containerd/v2 $CONTAINERD_VERSION
#   cni/{bridge,host-local,loopback,portmap}   github.com/containernetworking/plugins $CNI_PLUGINS_VERSION
#   pause.oci.tar             the sandbox image (hack/node/pause/pause.go, static), an OCI archive
# and, in a directory of its own keyed by its module files (node/coredns/<key>/coredns; `build.sh
# coredns` prints its path): CoreDNS for the cluster DNS, from hack/node/coredns (its go.mod and go.sum
# pin github.com/coredns/coredns and every dependency; main.go compiles in only the plugins the node uses),
# and beside it coredns.oci.tar (`build.sh coredns-image` prints its path): that static binary alone in an
# image, docker.io/retina-ts-node/coredns:<version>, which node.sh runs as the cluster DNS Deployment.
# `build.sh relay-image` prints the path of hubble-relay.oci.tar: the hubble-relay binary of the hubble
# tools (hack/hubble/build.sh) alone in an image, docker.io/retina-ts-node/hubble-relay:<cilium version>,
# beside that binary, for the chart's Hubble Relay Deployment on the real node. `build.sh busybox-image`
# prints the path of an image of Debian's static busybox (busybox-static, in the Makefile's apt list),
# docker.io/retina-ts-node/busybox:<version>: `kubectl retina capture download`'s helper pod needs a
# shell, sleep, ls, wc and cat (Retina's default is mcr.microsoft.com/azurelinux/busybox; no registry here).
# Where and how (tools cache, Go environment, log lines): hack/lib/tools.sh, as every hack/*/build.sh.
# runc is Debian's (the Makefile's APT_PACKAGES). Each piece is skipped when built; the whole build is a
# stamp file. Prints the directory. Logs each piece's build time on stderr. `build.sh runtime` builds all
# but kubelet and kube-proxy (CNI, pause, containerd) and does not stamp.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../k8s/versions.sh"
. "$HERE/../k8s/module.sh"
. "$HERE/versions.sh"
. "$HERE/../lib/tools.sh"
KEY="k8s-${K8S_VERSION}_containerd-${CONTAINERD_VERSION}_cni-${CNI_PLUGINS_VERSION}_pause-$(sha256sum "$HERE/pause/pause.go" | cut -c1-8)"
tools_dirs node "$KEY"
COREDNS_DIR="$TOOLS/node/coredns/$(cat "$HERE/coredns/go.mod" "$HERE/coredns/go.sum" "$HERE/coredns/main.go" | sha256sum | cut -c1-12)"
COREDNS_VERSION=$(awk '$1 == "require" && $2 == "github.com/coredns/coredns" {print $3}' "$HERE/coredns/go.mod")
log() { tools_log node-build "$@"; }
timed() { tools_timed node-build "$@"; }
build_coredns() {
  [ -x "$COREDNS_DIR/coredns" ] && return 0
  tools_go
  mkdir -p "$COREDNS_DIR"
  (cd "$HERE/coredns" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$COREDNS_DIR/coredns.tmp" .)
  mv "$COREDNS_DIR/coredns.tmp" "$COREDNS_DIR/coredns"
}
# one static binary as an OCI archive: image_of <rootfs dir> <ref> <out archive> [umoci config args...]
image_of() {
  local rootfs=$1 ref=$2 out=$3 d
  shift 3
  d=$(mktemp -d)
  tar --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$rootfs" -cf "$d/layer.tar" .
  umoci init --layout "$d/layout"
  umoci new --image "$d/layout:1"
  umoci raw add-layer --image "$d/layout:1" "$d/layer.tar"
  umoci config --image "$d/layout:1" --os linux --architecture "$(dpkg --print-architecture)" "$@"
  skopeo copy -q "oci:$d/layout:1" "oci-archive:$out.tmp:$ref"
  mv "$out.tmp" "$out"
  rm -rf "$d"
}
if [ "${1:-}" = relay-image ]; then
  H=$(HUBBLE_BUILD_IF_MISSING=${HUBBLE_BUILD_IF_MISSING:-yes} "$HERE/../hubble/build.sh")
  V=$(basename "$H" | sed -E 's/^cilium-(v[0-9.]+)_.*/\1/')
  if [ ! -f "$H/hubble-relay.oci.tar" ]; then
    R=$(mktemp -d)
    install -D -m 0755 "$H/hubble-relay" "$R/usr/bin/hubble-relay"
    image_of "$R" "retina-ts-node/hubble-relay:$V" "$H/hubble-relay.oci.tar" --config.env PATH=/usr/bin:/bin --config.user 65532:65532
    rm -rf "$R"
  fi
  echo "$H/hubble-relay.oci.tar"
  exit 0
fi
if [ "${1:-}" = busybox-image ]; then
  V=$(busybox 2>&1 | sed -nE '1s/^BusyBox v([0-9.]+).*/\1/p')
  O="$TOOLS/node/images/busybox-$V.oci.tar"
  if [ ! -f "$O" ]; then
    mkdir -p "$(dirname "$O")"
    R=$(mktemp -d)
    install -D -m 0755 "$(command -v busybox)" "$R/bin/busybox"
    for a in $(busybox --list); do [ "$a" = busybox ] || ln -s busybox "$R/bin/$a"; done
    image_of "$R" "retina-ts-node/busybox:$V" "$O" --config.env PATH=/bin --config.cmd sh
    rm -rf "$R"
  fi
  echo "$O"
  exit 0
fi
if [ "${1:-}" = coredns ] || [ "${1:-}" = coredns-image ]; then
  [ -x "$COREDNS_DIR/coredns" ] || timed "CoreDNS $COREDNS_VERSION" build_coredns
  if [ "$1" = coredns ]; then echo "$COREDNS_DIR/coredns"; exit 0; fi
  if [ ! -f "$COREDNS_DIR/coredns.oci.tar" ]; then
    R=$(mktemp -d)
    install -D -m 0755 "$COREDNS_DIR/coredns" "$R/coredns"
    image_of "$R" "retina-ts-node/coredns:$COREDNS_VERSION" "$COREDNS_DIR/coredns.oci.tar" --config.entrypoint /coredns
    rm -rf "$R"
  fi
  echo "$COREDNS_DIR/coredns.oci.tar"
  exit 0
fi

if [ -f "$STAMP" ]; then echo "$BIN"; exit 0; fi
tools_go
mkdir -p "$BIN/cni" "$WORK"

build_kube() {
  [ -x "$BIN/kubelet" ] && [ -x "$BIN/kube-proxy" ] && return 0
  local k c
  k=$("$HERE/../k8s/build.sh")
  if [ -x "$k/kubelet" ] && [ -x "$k/kube-proxy" ]; then
    for c in kubelet kube-proxy; do ln -f "$k/$c" "$BIN/$c" 2>/dev/null || cp "$k/$c" "$BIN/$c"; done
    return 0
  fi
  local d="$WORK/kubernetes-$K8S_VERSION" cmds=(k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
  k8s_module "$d" "${cmds[@]}"
  (cd "$d" && go build -tags tools -ldflags "$(k8s_ldflags)" -o "$BIN/" "${cmds[@]}")
}

build_containerd() {
  [ -x "$BIN/containerd" ] && [ -x "$BIN/containerd-shim-runc-v2" ] && [ -x "$BIN/ctr" ] && return 0
  local c
  for c in containerd containerd-shim-runc-v2 ctr; do
    GOBIN="$BIN" go install -tags "no_btrfs no_devmapper no_zfs" -ldflags "-s -w" "github.com/containerd/containerd/v2/cmd/$c@$CONTAINERD_VERSION"
  done
}

build_cni() {
  local p
  for p in main/bridge ipam/host-local main/loopback meta/portmap; do
    [ -x "$BIN/cni/${p#*/}" ] || GOBIN="$BIN/cni" go install -ldflags "-s -w" "github.com/containernetworking/plugins/plugins/$p@$CNI_PLUGINS_VERSION"
  done
}

build_pause() {
  [ -f "$BIN/pause.oci.tar" ] && return 0
  local d="$WORK/pause"
  rm -rf "$d" && mkdir -p "$d/rootfs"
  (cd "$HERE/pause" && go build -trimpath -ldflags "-s -w" -o "$d/rootfs/pause" pause.go)
  image_of "$d/rootfs" retina-ts-node/pause:1 "$BIN/pause.oci.tar" --config.entrypoint /pause
}

timed "CNI plugins $CNI_PLUGINS_VERSION" build_cni
timed "pause image" build_pause
timed "containerd $CONTAINERD_VERSION" build_containerd
# `build.sh runtime` stops here (no stamp): what does not need the control plane's build, which `make test` runs
# beside it (mk/node.mk); kubelet and kube-proxy come from that build.
if [ "${1:-}" = runtime ]; then echo "$BIN"; exit 0; fi
timed "kubelet, kube-proxy $K8S_VERSION" build_kube
touch "$STAMP"
log "done: $BIN"
echo "$BIN"
