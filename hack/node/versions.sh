# Pinned versions of the real-node harness (sourced by hack/node/build.sh). kubelet and kube-proxy
# come from k8s.io/kubernetes at hack/k8s/versions.sh's K8S_VERSION (the control plane's).
CONTAINERD_VERSION=v2.4.2
CNI_PLUGINS_VERSION=v1.10.0
