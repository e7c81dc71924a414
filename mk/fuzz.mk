# `make fuzz`: the property-based fuzz targets of test/fuzz (fast-check) for longer than `make test`'s
# bounded run: FUZZ_RUNS inputs per property from a random seed (printed; FUZZ_SEED=<n> reruns one),
# and every shrunk counterexample is kept under test/fuzz/corpus/<target>/, which `make test` replays.
FUZZ_LONG_RUNS ?= 20000
.PHONY: fuzz
fuzz: setup dist/.stamp
	@seed=$${FUZZ_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; echo "fuzz: FUZZ_RUNS=$(FUZZ_LONG_RUNS) FUZZ_SEED=$$seed"; \
	FUZZ_RUNS=$(FUZZ_LONG_RUNS) FUZZ_SEED=$$seed FUZZ_RECORD=1 node --test --test-concurrency=1 --test-reporter=spec --test-timeout=3600000 'dist/test/fuzz/*.test.js'
