#!/usr/bin/env bash
# Builds MinIO (a real S3-compatible server, for the capture workload's S3 output tests) from the Go
# module proxy into the tools cache outside the clone ($RETINA_TOOLS_CACHE, default
# ~/.cache/retina-ts), minio/bin/<version>/minio, with its own GOCACHE (minio/gocache) so its build
# time can be measured from nothing. Idempotent: a finished build is a stamp file.
set -euo pipefail
MINIO_VERSION=${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}
TOOLS="${RETINA_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/retina-ts}"
BIN="$TOOLS/minio/bin/$MINIO_VERSION"
STAMP="$BIN/.complete"
if [ -f "$STAMP" ]; then echo "$BIN/minio"; exit 0; fi
if [ "${MINIO_BUILD_IF_MISSING:-yes}" = no ]; then echo "MinIO $MINIO_VERSION is not built in $BIN (run hack/minio/build.sh)" >&2; exit 1; fi
command -v go >/dev/null || export PATH=/usr/local/go/bin:$PATH
export GOFLAGS=-buildvcs=false GOPROXY=${GOPROXY:-https://proxy.golang.org,direct} CGO_ENABLED=0
export GOCACHE="$TOOLS/minio/gocache" GOBIN="$BIN"
mkdir -p "$BIN" "$GOCACHE"
start=$(date +%s)
echo "[minio-build $(date -u +%H:%M:%S)] github.com/minio/minio@$MINIO_VERSION" >&2
go install -trimpath -ldflags "-s -w" "github.com/minio/minio@$MINIO_VERSION"
echo "[minio-build] built in $(( $(date +%s) - start )) s" >&2
touch "$STAMP"
echo "$BIN/minio"
