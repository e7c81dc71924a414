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
BUNDLE_INPUTS := $(shell find src -name '*.ts' ! -name '*.test.ts' 2>/dev/null) $(wildcard charts/retina/crds/*) \
	hack/bundle.mjs package.json package-lock.json

.PHONY: bundle
bundle: $(BUNDLE_STAMP)

$(BUNDLE_STAMP): $(BUNDLE_INPUTS) $(BPF_OBJECTS) $(NPM_STAMP)
	node hack/bundle.mjs --os linux --arch $(NODE_ARCH) $(if $(BUNDLE_SOURCEMAP),--sourcemap)
	node hack/bundle.mjs --os win32 --arch x64 $(if $(BUNDLE_SOURCEMAP),--sourcemap)
	touch $@

# The bundle and image tests (test/bundle) run what these build.
test: bundle

.PHONY: image-clean
image-clean:
	rm -rf build
clean: image-clean
