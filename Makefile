# The two commands of the README: `make run` and `make test`. Both install what is missing first.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
ARGS       ?=

.PHONY: all deps build run test test-sanitize fuzz soak clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Starts the service on the embedded default policy at 127.0.0.1:8888 (ARGS="--port 9000" to change).
run: build
	./$(BUILD)/gpu-extender $(ARGS)

# The whole test suite, through ctest.
test: build
	cd $(BUILD) && ctest --output-on-failure

# The same suite in an AddressSanitizer + UndefinedBehaviorSanitizer build.
test-sanitize: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGPU_EXTENDER_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure

# libFuzzer targets (clang, ASan+UBSan), FUZZ_SECONDS each (default 20); findings become regressions.
fuzz: deps
	FUZZ_SECONDS=$${FUZZ_SECONDS:-20} bash scripts/fuzz.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
