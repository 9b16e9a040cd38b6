# The two commands of the README: `make run` and `make test`. Both install what is missing first.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
ARGS       ?=

.PHONY: all deps build run test e2e test-sanitize fuzz soak clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Starts the service on the embedded default policy at 127.0.0.1:8888 (ARGS="--port 9000" to change).
# Builds the service alone (the tests and benchmarks are most of a full build): minutes on a fresh machine.
run: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) --target gpu-extender
	./$(BUILD)/gpu-extender $(ARGS)

# The whole test suite, through ctest (the end-to-end suite has its own target: it needs Go).
test: build
	cd $(BUILD) && ctest --output-on-failure -LE e2e

# The end-to-end suite on real control planes of every supported release (tests/e2e/controlplane/versions),
# built from Go modules the first time (8-15 minutes a release on 2 cores; cached after). Needs Go at
# /usr/local/go/bin. `bash tests/e2e/run.sh 1.37.2` runs one release; ctest has them under label e2e.
e2e: build
	bash tests/e2e/run.sh

# The same suite in an AddressSanitizer + UndefinedBehaviorSanitizer build.
test-sanitize: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGPU_EXTENDER_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -LE e2e

# libFuzzer targets (clang, ASan+UBSan), FUZZ_SECONDS each (default 20); findings become regressions.
fuzz: deps
	FUZZ_SECONDS=$${FUZZ_SECONDS:-20} bash scripts/fuzz.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
