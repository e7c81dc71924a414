#!/usr/bin/env bash
# Builds helm and kubeconform from Go modules (module proxy only) into .cache/chart/bin/<key>/, then
# writes kubeconform schemas generated offline from the Kubernetes swagger.json in the Go module cache
# and from our CRDs. Idempotent: a finished build is a stamp file. Prints the bin directory.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/versions.sh"
. "$ROOT/hack/k8s/versions.sh"
KEY="helm-${HELM_VERSION}_kubeconform-${KUBECONFORM_VERSION}_k8s-${K8S_VERSION}"
. "$ROOT/hack/lib/tools.sh"
tools_dirs chart "$KEY"
tools_go -mod=mod
log() { tools_log chart-build "$@"; }

# The schemas follow the CRD files and their generator: rebuilt when either changes (cheap); the
# binaries only once.
CRD_SUM=$(cat "$ROOT"/charts/retina/crds/*.yaml "$HERE/schemas.py" | sha256sum | cut -c1-16)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$CRD_SUM" ]; then echo "$BIN"; exit 0; fi
mkdir -p "$BIN"

if [ ! -x "$BIN/helm" ]; then
  log "helm $HELM_VERSION (about 5 min of CPU, once)"
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  # Without these, `helm version` prints no version and helm renders for Kubernetes v1.20.
  ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  ld="$ld -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor"
  GOBIN="$BIN" nice -n 19 go install -ldflags "$ld" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi
if [ ! -x "$BIN/kubeconform" ]; then
  log "kubeconform $KUBECONFORM_VERSION"
  GOBIN="$BIN" nice -n 19 go install -ldflags "-s -w -X main.version=$KUBECONFORM_VERSION" "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
fi

SWAGGER="$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION/api/openapi-spec/swagger.json"
if [ ! -f "$SWAGGER" ]; then
  log "fetching k8s.io/kubernetes@$K8S_VERSION for its swagger.json"
  (cd "$(mktemp -d)" && go mod download "k8s.io/kubernetes@$K8S_VERSION")
fi
rm -rf "$BIN/schemas" && mkdir -p "$BIN/schemas"
log "schemas from $SWAGGER and charts/retina/crds"
python3 "$HERE/schemas.py" "$BIN/schemas" "$SWAGGER" "$ROOT"/charts/retina/crds/*.yaml
echo "$CRD_SUM" > "$STAMP"
log "done: $BIN"
echo "$BIN"
