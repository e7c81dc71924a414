# Sourced by hack/k8s/build.sh and hack/node/build.sh: the throw-away main module that builds
# Kubernetes commands from k8s.io/kubernetes $K8S_VERSION (module proxy only), and the version ldflags.
#   k8s_module DIR PKG...   writes DIR/go.mod (k8s.io/kubernetes, every staging module it requires at
#                           v0.0.0 replaced by its published v0.<minor>.<patch>) and DIR/tools.go
#                           importing PKG..., then tidies and downloads.
#   k8s_ldflags             the -ldflags of a release build (version stamped, no VCS, stripped).
# Expects $K8S_VERSION and GOPROXY.
k8s_module() {
  local d=$1; shift
  local staging="v0.${K8S_VERSION#v1.}" p mods
  mkdir -p "$d"
  (
    cd "$d"
    printf 'module retina-ts/k8s-harness\n\ngo 1.25.0\n\nrequire k8s.io/kubernetes %s\n' "$K8S_VERSION" > go.mod
    { printf '//go:build tools\n\npackage tools\n\nimport (\n'; for p in "$@"; do printf '\t_ "%s"\n' "$p"; done; printf ')\n'; } > tools.go
    mods=$(curl -fsS "${GOPROXY%%,*}/k8s.io/kubernetes/@v/$K8S_VERSION.mod" | awk '/^\t?k8s.io\/[^ ]+ => \.\/staging/ {print $1}')
    [ -n "$mods" ] || { echo "could not read staging modules" >&2; exit 1; }
    for m in $mods; do go mod edit -replace "$m=$m@$staging"; done
    go mod tidy -e >/dev/null 2>&1 || true
    go mod download
  )
}

k8s_ldflags() {
  local pkg=k8s.io/component-base/version
  echo "-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
}
