# A real Kubernetes node (issue 23): kubelet, kube-proxy, containerd (+ shim, ctr), the CNI plugins and
# a pause stand-in, CoreDNS (cluster DNS, an image run as a Deployment) and a Hubble Relay image, built from Go modules into
# ~/.cache/retina-ts/node/ (hack/node/build.sh; the tools cache outside the clone, built once), with
# Debian's runc. `make node-up` starts a control plane and one node on its own bridge
# (hack/node/node.sh; KUBECONFIG=.cache/node/kubeconfig) and `make node-down` stops it and restores
# the machine. One real node per machine (a lock under /run).
.PHONY: node-bins node-up node-down node-status node-runtime node-coredns node-busybox

# What needs neither the control plane's build nor the hubble tools is built beside them under a parallel
# make (`make test`'s set-up): CNI, pause and containerd (`build.sh runtime`), CoreDNS and its image, the
# busybox image. The last step links kubelet and kube-proxy from the control plane's build, stamps, and
# makes the relay image from the hubble tools' hubble-relay.
node-bins: $(CACHE)/k8s/tools.stamp $(APT_STAMP) k8s-bins hubble-tools node-runtime node-coredns node-busybox
	@$(STEP) node-bins hack/node/build.sh >/dev/null
	@$(STEP) node-relay-image hack/node/build.sh relay-image >/dev/null
node-runtime: $(CACHE)/k8s/tools.stamp $(APT_STAMP)
	@$(STEP) $@ hack/node/build.sh runtime >/dev/null
node-coredns: $(CACHE)/k8s/tools.stamp $(APT_STAMP)
	@$(STEP) $@ hack/node/build.sh coredns-image >/dev/null
node-busybox: $(APT_STAMP)
	@$(STEP) $@ hack/node/build.sh busybox-image >/dev/null

node-up: node-bins
	hack/node/node.sh up

node-down:
	hack/node/node.sh down

node-status:
	hack/node/node.sh status

# `make test` builds them; the real-node suite (test/node) starts and stops the node itself.
tools: node-bins
