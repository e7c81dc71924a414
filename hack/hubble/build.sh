#!/usr/bin/env bash
# Builds the real `hubble` CLI (and, for the default pin, `hubble-relay`) of Cilium from the Go module
# proxy into the tools cache outside the clone ($RETINA_TOOLS_CACHE, default ~/.cache/retina-ts):
# hubble/bin/<key>/{hubble,hubble-relay}. Two pins, each a go.mod.in with its go.sum.in:
#   hack/hubble/build.sh         Cilium v1.18 (hack/hubble/go.mod.in): hubble and hubble-relay
#   hack/hubble/build.sh v1.19   Cilium v1.19 (hack/hubble/v1.19/go.mod.in): the hubble CLI only (the
#                                Hubble tests run both CLIs against one relay, the 1.18 one), so the
#                                build skips relay's packages
# The Hubble end-to-end tests run them against our agents. Cilium 1.18's go.mod replaces
# k8s.io/apimachinery with its fork github.com/cilium/apimachinery v0.33.3-1, which the proxy does not
# serve (403): the CLI and relay build with upstream apimachinery, so that replace line is left out; the
# other two are kept (1.19 has no such fork).
# Idempotent: a finished build is a stamp file; HUBBLE_BUILD_IF_MISSING=no only prints the directory
# or fails. v1.18: about 8.5 min on 2 cores with the module cache warm, more from nothing. v1.19 (CLI
# only): see hack/hubble/v1.19/README.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PIN="$HERE${1:+/$1}"
if [ ! -f "$PIN/go.mod.in" ]; then echo "no pin $PIN/go.mod.in" >&2; exit 2; fi
CILIUM=$(grep -o 'github.com/cilium/cilium v[0-9.]*' "$PIN/go.mod.in" | cut -d' ' -f2)
KEY="cilium-${CILIUM}_$(cat "$PIN/go.mod.in" "$PIN/go.sum.in" | sha256sum | cut -c1-12)"
TARGETS="github.com/cilium/cilium/hubble github.com/cilium/cilium/hubble-relay"
[ -n "${1:-}" ] && TARGETS="github.com/cilium/cilium/hubble"
. "$HERE/../lib/tools.sh"
tools_dirs hubble "$KEY"
if [ -f "$STAMP" ]; then echo "$BIN"; exit 0; fi
if [ "${HUBBLE_BUILD_IF_MISSING:-yes}" = no ]; then echo "hubble is not built in $BIN (run hack/hubble/build.sh $*)" >&2; exit 1; fi
tools_go
WORK="$WORK${1:+-$1}"
mkdir -p "$BIN" "$WORK"
start=$(date +%s)
(
  cd "$WORK"
  cp "$PIN/go.mod.in" go.mod
  cp "$PIN/go.sum.in" go.sum
  printf '//go:build tools\n\npackage tools\n' > tools.go
  # shellcheck disable=SC2086
  go build -mod=mod -trimpath -ldflags "-s -w" -o "$BIN/" $TARGETS
)
echo "[hubble-build] $CILIUM built in $(( $(date +%s) - start )) s" >&2
touch "$STAMP"
echo "$BIN"
