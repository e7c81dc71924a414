# Helm chart tooling (issue 13): helm and kubeconform built from Go modules into
# ~/.cache/retina-ts/chart/bin/<versions>/ (the tools cache outside the clone; built once, reused), plus kubeconform schemas generated
# offline from the Kubernetes swagger.json in the Go module cache and from charts/retina/crds.
.PHONY: chart-tools chart-lint chart-docs

# (the stamp of mk/k8s.mk: curl, openssl, Go present; named here, as k8s.mk is read after this file)
chart-tools: $(CACHE)/k8s/tools.stamp
	@$(STEP) chart-tools hack/chart/build.sh >/dev/null

# lint --strict every profile (the tests do this too, and much more: test/chart).
chart-lint: chart-tools
	@B=$$(hack/chart/build.sh); for p in charts/retina/profiles/*.yaml; do $$B/helm lint --strict charts/retina -f $$p || exit 1; done

# The values table of charts/retina/README.md, from values.schema.json and values.yaml (a docs test
# fails when the checked-in table is stale).
chart-docs: $(NODE_STAMP) $(NPM_STAMP)
	node hack/chart/values-table.mjs

# `make test` builds the tools first, as it does the test control plane.
tools: chart-tools

# The chart's generated files: values.schema.json's config sections from the key specs
# (src/chart/schema.ts), its Retina entries and retina-keys.yaml (src/chart/files.ts). The chart's own
# keys are declared in values.schema.json itself. test/chart/retina-compat.test.ts fails when stale.
.PHONY: chart-gen chart-gen-check
chart-gen: build
	node dist/src/cli/chart-gen-main.js charts/retina
chart-gen-check: build
	node dist/src/cli/chart-gen-main.js charts/retina --check
