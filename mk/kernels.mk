# The kernel matrix (issue 36): Debian's 5.10, 6.1 and 6.12 kernels (hack/kernels/versions: package, version,
# sha256) fetched once into the tools cache outside the clone through an apt configuration of their own
# (hack/kernels/fetch.sh; never the machine's sources), each booted under qemu (TCG) with this checkout to run
# test/kernels/suite.ts (hack/kernels/boot.sh, hack/kernels/init). `make test` runs the matrix as one of its test
# files (test/kernels/matrix.test.ts); `make kernels` runs only it; `RETINA_KERNEL_MATRIX_UPDATE=1 make kernels`
# writes what it saw into bench/kernels/matrix.json and docs/kernels.md's table.
.PHONY: kernels kernels-fetch
kernels-fetch: $(APT_STAMP)
	@$(STEP) kernels-fetch hack/kernels/fetch.sh >/dev/null
tools: kernels-fetch

kernels: build kernels-fetch
	node --test --test-concurrency=1 --test-reporter=spec --test-timeout=3600000 dist/test/kernels/matrix.test.js dist/test/kernels/docs.test.js
