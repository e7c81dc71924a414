# The OTLP flow-log tests (test/export/otlp-collector.test.ts) run a real OpenTelemetry Collector
# (core otlp receiver, contrib file exporter as the oracle); hack/otelcol/build.sh builds it from
# the Go module proxy (pinned in hack/otelcol/go.mod, go.sum) into the tools cache outside the clone, once.
.PHONY: otelcol-tools
otelcol-tools:
	@$(STEP) otelcol-tools hack/otelcol/build.sh >/dev/null

tools: otelcol-tools
