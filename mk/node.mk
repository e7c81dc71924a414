# A real Kubernetes node (issue 23): kubelet, kube-proxy, containerd (+ shim, ctr), the CNI plugins and
# a pause stand-in, CoreDNS (cluster DNS, an image run as a Deployment) and a Hubble Relay image, built from Go modules into
# ~/.cache/retina-ts/node/ (hack/node/build.sh; the tools cache outside the clone, built once), with
# Debian's runc. `make node-up` starts a control plane and one node on its own bridge
# (hack/node/node.sh; KUBECONFIG=.cache/node/kubeconfig) and `make node-down` stops it and restores
# the machine. One real node per machine (a lock under /run).
.PHONY: node-bins node-up node-down node-status

node-bins: $(CACHE)/k8s/tools.stamp $(APT_STAMP) k8s-bins hubble-tools
	hack/node/build.sh >/dev/null
	hack/node/build.sh coredns-image >/dev/null
	hack/node/build.sh relay-image >/dev/null
	hack/node/build.sh busybox-image >/dev/null

node-up: node-bins
	hack/node/node.sh up

node-down:
	hack/node/node.sh down

node-status:
	hack/node/node.sh status

# `make test` builds them; the real-node suite (test/node) starts and stops the node itself.
test: node-bins
