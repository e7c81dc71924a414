# The Hubble end-to-end test (test/integration/hubble-cli.test.ts) runs the real `hubble` CLI and
# `hubble-relay` of Cilium against our agents; hack/hubble/build.sh builds them from the Go module
# proxy into the tools cache outside the clone, once.
.PHONY: hubble-tools
hubble-tools:
	@$(STEP) hubble-tools hack/hubble/build.sh >/dev/null

tools: hubble-tools
