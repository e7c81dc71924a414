#!/usr/bin/env bash
# Builds a small real OpenTelemetry Collector (main.go: the core otlp receiver, gRPC and HTTP; the
# contrib file exporter; the core debug exporter; the contrib bearer-token auth extension), pinned in
# go.mod/go.sum at one collector release (core v0.161.0 with its v1.67.0 modules, contrib v0.161.0),
# from the Go module proxy into the tools cache outside the clone ($RETINA_TOOLS_CACHE, default
# ~/.cache/retina-ts): otelcol/bin/<key>/otelcol. The OTLP flow-log tests (test/export/otlp*.test.ts)
# run it with the file exporter as the oracle. Idempotent: a finished build is a stamp file;
# OTELCOL_BUILD_IF_MISSING=no only prints the directory or fails. About 5.5 min on 2 shared cores with
# the module cache filled (26 MB binary).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
KEY="v0.161.0_$(cat "$HERE/go.mod" "$HERE/go.sum" "$HERE/main.go" | sha256sum | cut -c1-12)"
TOOLS="${RETINA_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retina-ts}"
BIN="$TOOLS/otelcol/bin/$KEY"
if [ -f "$BIN/.complete" ]; then echo "$BIN"; exit 0; fi
if [ "${OTELCOL_BUILD_IF_MISSING:-yes}" = no ]; then echo "otelcol is not built in $BIN (run hack/otelcol/build.sh)" >&2; exit 1; fi
command -v go >/dev/null || export PATH=/usr/local/go/bin:$PATH
export GOFLAGS=-buildvcs=false GOPROXY=${GOPROXY:-https://proxy.golang.org,direct} CGO_ENABLED=0
mkdir -p "$BIN"
start=$(date +%s)
(cd "$HERE" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$BIN/otelcol" .)
echo "[otelcol-build] built in $(( $(date +%s) - start )) s" >&2
touch "$BIN/.complete"
echo "$BIN"
