# Pinned versions of the integration-test control plane (sourced by build.sh / up.sh).
# Kubernetes is pinned to one minor; staging modules use the matching v0.<minor>.<patch>.
K8S_VERSION=v1.35.4
KWOK_VERSION=v0.7.0
ETCD_VERSION=v3.6.16
