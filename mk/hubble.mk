# The Hubble end-to-end tests (test/integration/hubble-cli*.test.ts, hubble-history.test.ts, hubble-relay-tls.test.ts,
# hubble-relay-peers.test.ts) run the
# real `hubble` CLI (both pins: Cilium v1.18 and v1.19) and `hubble-relay` (v1.18) of Cilium against
# our agents; hack/hubble/build.sh builds them from the Go module proxy into the tools cache outside
# the clone, once each.
.PHONY: hubble-tools
hubble-tools:
	@$(STEP) hubble-tools hack/hubble/build.sh >/dev/null
	@$(STEP) hubble-tools-v1.19 hack/hubble/build.sh v1.19 >/dev/null

tools: hubble-tools
