#!/usr/bin/env bash
# Builds the real node's parts from Go modules (module proxy only) into the tools cache outside the
# clone ($RETINA_TOOLS_CACHE, default ~/.cache/retina-ts), node/bin/<key>/:
#   kubelet, kube-proxy       k8s.io/kubernetes $K8S_VERSION: the same throw-away main module, staging
#                             replaces and ldflags as the control plane (hack/k8s/module.sh), so the Go
#                             build cache of its packages is shared
#   containerd, containerd-shim-runc-v2, ctr   github.com/containerd/containerd/v2 $CONTAINERD_VERSION
#   cni/{bridge,host-local,loopback,portmap}   github.com/containernetworking/plugins $CNI_PLUGINS_VERSION
#   pause.oci.tar             the sandbox image (hack/node/pause/pause.go, static), an OCI archive
# runc is Debian's (the Makefile's APT_PACKAGES). Each piece is skipped when built; the whole build is a
# stamp file. Prints the directory. Logs each piece's build time on stderr.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../k8s/versions.sh"
. "$HERE/../k8s/module.sh"
. "$HERE/versions.sh"
KEY="k8s-${K8S_VERSION}_containerd-${CONTAINERD_VERSION}_cni-${CNI_PLUGINS_VERSION}_pause-$(sha256sum "$HERE/pause/pause.go" | cut -c1-8)"
TOOLS="${RETINA_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retina-ts}"
BIN="$TOOLS/node/bin/$KEY"
WORK="$TOOLS/node/build"
STAMP="$BIN/.complete"
if [ -f "$STAMP" ]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || export PATH=/usr/local/go/bin:$PATH
export GOFLAGS=-buildvcs=false GOPROXY=${GOPROXY:-https://proxy.golang.org,direct} CGO_ENABLED=0
mkdir -p "$BIN/cni" "$WORK"
log() { echo "[node-build $(date -u +%H:%M:%S)] $*" >&2; }
timed() { # what, command...
  local what=$1 t0; shift; t0=$(date +%s)
  log "$what"
  "$@"
  log "$what: built in $(( $(date +%s) - t0 )) s"
}

build_kube() {
  [ -x "$BIN/kubelet" ] && [ -x "$BIN/kube-proxy" ] && return 0
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
  local d="$WORK/pause" layout
  rm -rf "$d" && mkdir -p "$d/rootfs"
  (cd "$HERE/pause" && go build -trimpath -ldflags "-s -w" -o "$d/rootfs/pause" pause.go)
  layout="$d/layout"
  tar --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$d/rootfs" -cf "$d/layer.tar" pause
  umoci init --layout "$layout"
  umoci new --image "$layout:1"
  umoci raw add-layer --image "$layout:1" "$d/layer.tar"
  umoci config --image "$layout:1" --os linux --architecture "$(dpkg --print-architecture)" --config.entrypoint /pause
  skopeo copy -q "oci:$layout:1" "oci-archive:$BIN/pause.oci.tar.tmp:retina-ts-node/pause:1"
  mv "$BIN/pause.oci.tar.tmp" "$BIN/pause.oci.tar"
}

timed "CNI plugins $CNI_PLUGINS_VERSION" build_cni
timed "pause image" build_pause
timed "containerd $CONTAINERD_VERSION" build_containerd
timed "kubelet, kube-proxy $K8S_VERSION" build_kube
touch "$STAMP"
log "done: $BIN"
echo "$BIN"
