#!/usr/bin/env bash
# Builds hack/s3/s3server.go (rclone's gofakes3 with Signature V4 auth: the S3 server of the capture
# output test) from the Go module proxy into the tools cache outside the clone ($RETINA_TOOLS_CACHE,
# default ~/.cache/retina-ts), s3server/bin/<key>/s3server. MinIO was tried first and dropped: its
# build had not finished after 25 min on this 2-core machine (see the capture commit). Idempotent:
# a finished build is a stamp file; S3SERVER_BUILD_IF_MISSING=no only prints the path or fails.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
GOFAKES3_VERSION=v0.0.12
KEY="gofakes3-${GOFAKES3_VERSION}_$(sha256sum "$HERE/s3server.go" | cut -c1-12)"
. "$HERE/../lib/tools.sh"
tools_dirs s3server "$KEY"
if [ -f "$STAMP" ]; then echo "$BIN/s3server"; exit 0; fi
if [ "${S3SERVER_BUILD_IF_MISSING:-yes}" = no ]; then echo "the S3 test server is not built in $BIN (run hack/s3/build.sh)" >&2; exit 1; fi
tools_go
mkdir -p "$BIN" "$WORK"
start=$(date +%s)
(
  cd "$WORK"
  cp "$HERE/s3server.go" main.go
  printf 'module retina-ts/s3server\n\ngo 1.24.0\n\nrequire github.com/rclone/gofakes3 %s\n' "$GOFAKES3_VERSION" > go.mod
  # quiet unless it fails (a module it cannot fetch): then its output is the reason
  go mod tidy >tidy.log 2>&1 || { cat tidy.log >&2; exit 1; }
  go build -trimpath -ldflags "-s -w" -o "$BIN/s3server" .
)
echo "[s3server-build] built in $(( $(date +%s) - start )) s" >&2
touch "$STAMP"
echo "$BIN/s3server"
