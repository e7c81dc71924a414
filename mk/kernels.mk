# The kernel matrix (issue 36): Debian's 5.10, 6.1 and 6.12 kernels (hack/kernels/versions: package, version,
# sha256) fetched once into the tools cache outside the clone through an apt configuration of their own
# (hack/kernels/fetch.sh; never the machine's sources), each booted under qemu (TCG) with this checkout to run
# test/kernels/suite.ts (hack/kernels/boot.sh, hack/kernels/init); and Debian's arm64 kernel (hack/kernels/versions-arm64)
# under qemu-system-aarch64 with the arm64 image's root (test/kernels/arm64.test.ts, issue 41). `make test` runs the matrix as two of its
# test files (test/kernels/host.test.ts in the local lane, matrix.test.ts's guests in a lane of their own);
# `make kernels` runs only them; `RETINA_KERNEL_MATRIX_UPDATE=1 make kernels` writes what they saw into
# bench/kernels/matrix.json and docs/kernels.md's table.
.PHONY: kernels kernels-fetch
kernels-fetch: $(APT_STAMP)
	@$(STEP) kernels-fetch hack/kernels/fetch.sh >/dev/null
	@$(STEP) kernels-fetch-arm64 hack/kernels/fetch.sh arm64 >/dev/null
tools: kernels-fetch

kernels: build kernels-fetch image kubectl-plugin
	node --test --test-concurrency=1 --test-reporter=spec --test-timeout=3600000 dist/test/kernels/host.test.js dist/test/kernels/matrix.test.js dist/test/kernels/docs.test.js dist/test/kernels/arm64.test.js
