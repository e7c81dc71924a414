#!/usr/bin/env bash
# The Linux image of every architecture under one tag (make image, issue 41): joins the layouts hack/image/linux.sh
# built (build/image/oci-linux-<arch>, tag linux-<arch>) into one OCI layout whose tag names an image index, one
# manifest per architecture with its platform (linux/amd64, linux/arm64), offline (the blobs are copied, the index
# is written here), then skopeo copies it whole (--all) into an oci-archive:
#   build/image/oci-linux/                 OCI layout, tag <version>: the index
#   build/image/retina-ts-linux.oci.tar    the same as oci-archive (`skopeo copy --all` pushes it, docs/install.md)
# Usage: hack/image/index.sh <version> <arch>...
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$1
shift
out=build/image
layout=$out/oci-linux
rm -rf "$layout" && mkdir -p "$layout/blobs/sha256"
manifests=()
for arch in "$@"; do
  src=$out/oci-linux-$arch
  cp -n "$src"/blobs/sha256/* "$layout/blobs/sha256/"
  # The architecture's manifest descriptor (its index.json's, tag linux-<arch>) with the platform added.
  manifests+=("$(node -e '
    const [file, arch] = process.argv.slice(1);
    const idx = JSON.parse(require("fs").readFileSync(file, "utf8"));
    const m = idx.manifests.find((d) => d.annotations?.["org.opencontainers.image.ref.name"] === `linux-${arch}`);
    if (!m) throw new Error(`${file} has no manifest tagged linux-${arch}`);
    process.stdout.write(JSON.stringify({ mediaType: m.mediaType, digest: m.digest, size: m.size, platform: { architecture: arch, os: "linux" } }));
  ' "$src/index.json" "$arch")")
done
printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
index=$(printf '%s\n' "${manifests[@]}" | node -e '
  const ms = require("fs").readFileSync(0, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  process.stdout.write(JSON.stringify({ schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests: ms }));')
digest=$(printf '%s' "$index" | sha256sum | cut -d' ' -f1)
printf '%s' "$index" >"$layout/blobs/sha256/$digest"
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:%s","size":%d,"annotations":{"org.opencontainers.image.ref.name":"%s"}}]}' \
  "$digest" "${#index}" "$version" >"$layout/index.json"
rm -f "$out/retina-ts-linux.oci.tar"
skopeo copy -q --all "oci:$layout:$version" "oci-archive:$out/retina-ts-linux.oci.tar:retina-ts:$version"
ls -l "$out/retina-ts-linux.oci.tar" | awk '{printf "%s %.1f MB (", $9, $5/1e6}'
echo "$*)"
