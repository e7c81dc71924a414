#!/usr/bin/env bash
# Builds the real `hubble` CLI and `hubble-relay` of Cilium (pinned in go.mod.in, with go.sum.in) from
# the Go module proxy into the tools cache outside the clone ($RETINA_TOOLS_CACHE, default
# ~/.cache/retina-ts): hubble/bin/<key>/{hubble,hubble-relay}. The Hubble end-to-end test runs them
# against our agents. Cilium's go.mod replaces k8s.io/apimachinery with its fork
# github.com/cilium/apimachinery v0.33.3-1, which the proxy does not serve (403): the CLI and relay
# build with upstream apimachinery, so that replace line is left out; the other two are kept.
# Idempotent: a finished build is a stamp file; HUBBLE_BUILD_IF_MISSING=no only prints the directory
# or fails. About 8.5 min on 2 cores with the module cache warm, more from nothing.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
KEY="cilium-$(grep -o 'github.com/cilium/cilium v[0-9.]*' "$HERE/go.mod.in" | cut -d' ' -f2)_$(cat "$HERE/go.mod.in" "$HERE/go.sum.in" | sha256sum | cut -c1-12)"
. "$HERE/../lib/tools.sh"
tools_dirs hubble "$KEY"
if [ -f "$STAMP" ]; then echo "$BIN"; exit 0; fi
if [ "${HUBBLE_BUILD_IF_MISSING:-yes}" = no ]; then echo "hubble and hubble-relay are not built in $BIN (run hack/hubble/build.sh)" >&2; exit 1; fi
tools_go
mkdir -p "$BIN" "$WORK"
start=$(date +%s)
(
  cd "$WORK"
  cp "$HERE/go.mod.in" go.mod
  cp "$HERE/go.sum.in" go.sum
  printf '//go:build tools\n\npackage tools\n' > tools.go
  go build -mod=mod -trimpath -ldflags "-s -w" -o "$BIN/" github.com/cilium/cilium/hubble github.com/cilium/cilium/hubble-relay
)
echo "[hubble-build] built in $(( $(date +%s) - start )) s" >&2
touch "$STAMP"
echo "$BIN"
