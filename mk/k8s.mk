# Kubernetes test harness (issue 4): etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
# kwok built from Go modules into ~/.cache/retina-ts/k8s/bin/<versions>/ ($RETINA_TOOLS_CACHE; outside
# the clone, so a fresh clone reuses them, as Go's build cache is reused; built once).
.PHONY: k8s-bins k8s-up k8s-down k8s-status k8s-kube k8s-kwok k8s-etcd

# The three builds (hack/k8s/build.sh kube|kwok|etcd) share nothing but Go's caches, so a parallel make
# (`make test`'s set-up) runs them side by side, the longest first; the last step only stamps the directory.
K8S_PIECES := k8s-kube k8s-kwok k8s-etcd
k8s-bins: $(K8S_PIECES)
	@$(STEP) k8s-bins hack/k8s/build.sh >/dev/null
$(K8S_PIECES):
	@$(STEP) $@ hack/k8s/build.sh $(@:k8s-%=%) >/dev/null

k8s-up: k8s-bins
	hack/k8s/harness.sh up

k8s-down:
	hack/k8s/harness.sh down

k8s-status:
	hack/k8s/harness.sh status

# `make test` builds the binaries; the integration tests start and stop the harness themselves
# (test/integration/harness.ts: once per test file, always stopped).
tools: k8s-bins

# The harness scripts need curl and openssl (certificates); Go comes from /usr/local/go or PATH.
K8S_TOOLS_STAMP := $(CACHE)/k8s/tools.stamp
$(K8S_TOOLS_STAMP):
	@command -v curl >/dev/null && command -v openssl >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl openssl ca-certificates; }
	@command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || { echo "Go is needed to build the test control plane (/usr/local/go or PATH)" >&2; exit 1; }
	@mkdir -p $(dir $@) && touch $@
k8s-bins $(K8S_PIECES): $(K8S_TOOLS_STAMP)
bench: k8s-bins
