#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok from Go modules
# (module proxy only) into the tools cache outside the clone ($RETINA_TOOLS_CACHE, default
# ~/.cache/retina-ts; like Go's own caches, a fresh clone reuses it), k8s/bin/<key>/. Idempotent: a
# finished build is a stamp file. The real node's kubelet and kube-proxy (hack/node/build.sh takes them
# from here) come from the same k8s.io/kubernetes, so they are built in the control plane's one `go build`:
# one throw-away module and tidy, and the links of the five commands overlap with compiling.
# Usage: build.sh [etcd|kwok|kube]...: with no argument builds all three and stamps the directory; with
# arguments builds only those (no stamp), so that `make test` (mk/k8s.mk) runs the three builds side by side:
# they share nothing but Go's build and module caches, which are safe for concurrent use (each has its own work
# directory and its own binaries in the directory).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/versions.sh"
. "$HERE/module.sh"
KEY="k8s-${K8S_VERSION}_kwok-${KWOK_VERSION}_etcd-${ETCD_VERSION}"
. "$ROOT/hack/lib/tools.sh"
tools_dirs k8s "$KEY"
if [ -f "$STAMP" ]; then echo "$BIN"; exit 0; fi
tools_go
mkdir -p "$BIN" "$WORK"
log() { tools_log k8s-build "$@"; }
timed() { tools_timed k8s-build "$@"; }

build_etcd() {
  [ -x "$BIN/etcd" ] && return 0
  local d="$WORK/etcd-$ETCD_VERSION"; mkdir -p "$d"
  # etcd's server module has replace directives, so it is built from a throw-away main module.
  (
    cd "$d"
    printf 'module retina-ts/etcd-harness\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > go.mod
    printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
    go mod tidy -e >/dev/null 2>&1 || true
    go build -tags tools -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
  )
}

build_k8s() {
  local c cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy) missing=no
  for c in "${cmds[@]}"; do [ -x "$BIN/$c" ] || missing=yes; done
  [ $missing = no ] && return 0
  local d="$WORK/kubernetes-$K8S_VERSION"
  k8s_module "$d" "${cmds[@]/#/k8s.io/kubernetes/cmd/}"
  (cd "$d" && go build -tags tools -ldflags "$(k8s_ldflags)" -o "$BIN/" "${cmds[@]/#/k8s.io/kubernetes/cmd/}")
}

build_kwok() {
  [ -x "$BIN/kwok" ] && return 0
  local d="$WORK/kwok-$KWOK_VERSION"; mkdir -p "$d"
  GOBIN="$d" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  mv "$d/kwok" "$BIN/kwok"
}

pieces=("$@")
[ $# -gt 0 ] || pieces=(etcd kwok kube)
for piece in "${pieces[@]}"; do
  case $piece in
    etcd) timed "etcd $ETCD_VERSION" build_etcd ;;
    kwok) timed "kwok $KWOK_VERSION" build_kwok ;;
    kube) timed "kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy $K8S_VERSION" build_k8s ;;
    *) echo "build.sh: no piece '$piece' (etcd, kwok, kube)" >&2; exit 2 ;;
  esac
done
if [ $# -eq 0 ]; then
  touch "$STAMP"
  log "done: $BIN"
fi
echo "$BIN"
