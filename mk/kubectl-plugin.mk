# The kubectl plugin people install (issue 26): `make kubectl-plugin` builds kubectl-retina as single
# executables (Node's single executable applications) for linux-amd64, linux-arm64 and windows-amd64
# from the pinned Node builds on the npm registry, their krew archives and krew manifest, into
# build/kubectl-plugin/ (hack/kubectl-plugin.mjs). KUBECTL_PLUGIN_URL is where the archives will be
# published (the manifest's URIs).
POSTJECT_VERSION := 1.0.0-alpha.6
POSTJECT_CLI := $(CACHE)/postject/node_modules/postject/dist/cli.js
KUBECTL_PLUGIN_STAMP := build/kubectl-plugin/.stamp
KUBECTL_PLUGIN_URL ?=

.PHONY: kubectl-plugin
kubectl-plugin: $(KUBECTL_PLUGIN_STAMP)

$(POSTJECT_CLI): mk/kubectl-plugin.mk
	rm -rf $(CACHE)/postject && mkdir -p $(CACHE)/postject
	npm install --prefix $(CACHE)/postject --no-save --no-package-lock --no-audit --no-fund postject@$(POSTJECT_VERSION)
	touch $@

# Node for linux-arm64 ($(NODE_ARM64_BIN)) is mk/image.mk's: the arm64 image ships it too.

$(KUBECTL_PLUGIN_STAMP): $(BUNDLE_INPUTS) hack/kubectl-plugin.mjs $(NPM_STAMP) $(CACHE)/node/.stamp-$(NODE_VERSION) $(NODE_ARM64_BIN) $(NODE_WIN_EXE) $(POSTJECT_CLI)
	@$(STEP) kubectl-plugin $(CACHE)/node/bin/node hack/kubectl-plugin.mjs --node $(CACHE)/node/bin/node --postject $(POSTJECT_CLI) \
	  --target linux-amd64=$(CACHE)/node/bin/node --target linux-arm64=$(NODE_ARM64_BIN) --target windows-amd64=$(NODE_WIN_EXE) \
	  $(if $(KUBECTL_PLUGIN_URL),--url-base $(KUBECTL_PLUGIN_URL))
	touch $@

# test/integration/kubectl-plugin.test.ts runs the linux-amd64 executable.
tools: kubectl-plugin
