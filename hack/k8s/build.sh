#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok from Go modules
# (module proxy only) into the tools cache outside the clone ($RETINA_TOOLS_CACHE, default
# ~/.cache/retina-ts; like Go's own caches, a fresh clone reuses it), k8s/bin/<key>/. Idempotent: a
# finished build is a stamp file.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/versions.sh"
KEY="k8s-${K8S_VERSION}_kwok-${KWOK_VERSION}_etcd-${ETCD_VERSION}"
TOOLS="${RETINA_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retina-ts}"
BIN="$TOOLS/k8s/bin/$KEY"
WORK="$TOOLS/k8s/build"
STAMP="$BIN/.complete"
if [ -f "$STAMP" ]; then echo "$BIN"; exit 0; fi
command -v go >/dev/null || export PATH=/usr/local/go/bin:$PATH
export GOFLAGS=-buildvcs=false GOPROXY=${GOPROXY:-https://proxy.golang.org,direct} CGO_ENABLED=0
mkdir -p "$BIN" "$WORK"
log() { echo "[k8s-build $(date -u +%H:%M:%S)] $*" >&2; }

build_etcd() {
  [ -x "$BIN/etcd" ] && return 0
  log "etcd $ETCD_VERSION"
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
  [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-controller-manager" ] && [ -x "$BIN/kube-scheduler" ] && return 0
  log "kubernetes $K8S_VERSION"
  local d="$WORK/kubernetes-$K8S_VERSION"; mkdir -p "$d"
  local staging="v0.${K8S_VERSION#v1.}"
  (
    cd "$d"
    cat > go.mod <<MOD
module retina-ts/k8s-harness

go 1.25.0

require k8s.io/kubernetes $K8S_VERSION
MOD
    cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
    # every k8s.io/* staging module that k8s.io/kubernetes requires at v0.0.0 -> its published v0.x
    local mods
    mods=$(curl -fsS "${GOPROXY%%,*}/k8s.io/kubernetes/@v/$K8S_VERSION.mod" | awk '/^\t?k8s.io\/[^ ]+ => \.\/staging/ {print $1}')
    [ -n "$mods" ] || { echo "could not read staging modules" >&2; exit 1; }
    for m in $mods; do go mod edit -replace "$m=$m@$staging"; done
    go mod tidy -e >/dev/null 2>&1 || true
    go mod download
    local pkg=k8s.io/component-base/version
    local ld="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
    ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
    go build -tags tools -ldflags "$ld" -o "$BIN/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
  )
}

build_kwok() {
  [ -x "$BIN/kwok" ] && return 0
  log "kwok $KWOK_VERSION"
  local d="$WORK/kwok-$KWOK_VERSION"; mkdir -p "$d"
  GOBIN="$d" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  mv "$d/kwok" "$BIN/kwok"
}

build_etcd
build_kwok
build_k8s
touch "$STAMP"
log "done: $BIN"
echo "$BIN"
