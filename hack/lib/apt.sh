# Sourced by the scripts that fetch Debian packages without installing them (hack/image/linux.sh: the image's
# root; hack/kernels/fetch.sh: the kernel matrix's kernels): an apt configuration of their own, so what they
# fetch comes from the suites they name, whatever the machine's own sources say (a build machine with a newer
# suite configured once made an image of trixie's libc and merged-/usr layout whose node could not start), and
# the machine's packages are never touched.
#   apt_own DIR ARCH SOURCE_LINE...   writes DIR/apt.conf (its own sources, lists, cache and an empty status
#                                     file) for ARCH and exports APT_CONFIG; the lists are fetched when DIR has
#                                     none or its sources changed (apt_update fetches them again)
#   apt_update                        apt-get update with that configuration
#   debian_uris                       sets DEBIAN_ARCHIVE and DEBIAN_SECURITY, the URIs of the Debian archive and its
#                                     security archive that the machine's own sources name (its mirror, whatever it
#                                     is), for the sources of the configuration
debian_uris() {
  local targets
  targets=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null | sort -u)
  DEBIAN_ARCHIVE=$(awk '$2 !~ /-(security|updates|backports)$/ && $1 !~ /security/ {print $1; exit}' <<<"$targets")
  DEBIAN_SECURITY=$(awk '$2 ~ /-security$/ {print $1; exit}' <<<"$targets")
  [ -n "$DEBIAN_ARCHIVE" ] || { echo "the machine's apt sources name no Debian archive (apt-get indextargets)" >&2; return 1; }
  [ -n "$DEBIAN_SECURITY" ] || DEBIAN_SECURITY=${DEBIAN_ARCHIVE%/}-security/
}
apt_own() {
  local dir=$1 arch=$2
  shift 2
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/etc/preferences.d"
  [ -f "$dir/status" ] || : >"$dir/status"
  local sources
  sources=$(printf '%s\n' "$@")
  cat >"$dir/apt.conf.tmp" <<EOT
Dir::Etc::sourcelist "$dir/etc/sources.list";
Dir::Etc::sourceparts "/nonexistent";
Dir::Etc::preferencesparts "$dir/etc/preferences.d";
Dir::State::lists "$dir/lists";
Dir::State::status "$dir/status";
Dir::Cache "$dir/cache";
APT::Architecture "$arch";
APT::Architectures { "$arch"; };
APT::Sandbox::User "root";
Acquire::Languages "none";
EOT
  mv "$dir/apt.conf.tmp" "$dir/apt.conf"
  export APT_CONFIG="$dir/apt.conf"
  if [ "$(cat "$dir/etc/sources.list" 2>/dev/null)" != "$sources" ] || ! compgen -G "$dir/lists/*Packages*" >/dev/null; then
    echo "$sources" >"$dir/etc/sources.list"
    apt_update
  fi
}
apt_update() {
  echo "apt-get update with $APT_CONFIG's own sources ($(dirname "$APT_CONFIG")/etc/sources.list)" >&2
  apt-get update -qq
}
