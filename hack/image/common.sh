# Shared by hack/image/linux.sh and windows.sh (sourced): the agent's node flags, a layer from a
# folder, and the OCI labels. Expects $version, $source, $revision.

# The agent's node flags have one source, bin/retina-agent's exec line; prints them one a line.
agent_node_flags() {
  local line
  line=$(sed -n 's|^exec "\$n" \(.*\) "\$d/dist/.*|\1|p' bin/retina-agent)
  [ -n "$line" ] || { echo 'bin/retina-agent has no `exec "$n" <flags> "$d/dist/...` line' >&2; return 1; }
  tr ' ' '\n' <<<"$line"
}

# new_image LAYOUT TAG DIR MEMBER...: a fresh layout LAYOUT with one image TAG with one layer, DIR's MEMBERs as a
# reproducible tar (sorted, root-owned, mtime of the commit). GNU tar, not `umoci insert`, whose
# layers (Debian's 0.4.7) end without the tar trailer, which strict readers refuse.
new_image() {
  local layout=$1 tag=$2 dir=$3; shift 3
  local layer; layer=$(mktemp --suffix=.tar)
  tar --sort=name --owner=0 --group=0 --numeric-owner --format=pax \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$(git log -1 --format=%ct 2>/dev/null || echo 0)" -C "$dir" -cf "$layer" "$@"
  rm -rf "$layout"
  umoci init --layout "$layout"
  umoci new --image "$layout:$tag"
  umoci raw add-layer --image "$layout:$tag" --history.comment "retina-ts $version" "$layer"
  rm -f "$layer"
}

# The OCI labels (config) and annotations (manifest): title, version, source, revision.
oci_labels() {
  local kv
  for kv in "org.opencontainers.image.title=retina-ts" "org.opencontainers.image.version=$version" \
    "org.opencontainers.image.source=$source" "org.opencontainers.image.revision=$revision"; do
    printf '%s\n' --config.label "$kv" --manifest.annotation "$kv"
  done
}
