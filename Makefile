# Thin wrapper around CMake: `make demo` builds everything and traces an example,
# `make test` builds and runs every test. Missing Debian packages are installed first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps test-deps build demo test test-sanitize format format-check bench clean fuzz-build fuzz \
	fuzz-ci

all: build

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: test-deps build
	@cd $(BUILD) && ctest --output-on-failure --no-tests=error -j $(JOBS) --timeout 600

# Unit tests and e2e tests again, with AddressSanitizer (LeakSanitizer included) and UBSan
# on common/, reporter/ (memreport) and the tests; any finding fails the test. Programs are
# still traced by an unsanitized libmemtrace.so (it must not run under a sanitizer's own
# malloc); the tracer-only e2e cases are not registered in that build. Plotting loads
# fontconfig, whose process-lifetime caches tests/npu/lsan.supp suppresses.
test-sanitize: test-deps
	@cmake -S . -B $(BUILD)-sanitize -DMEMTRACE_SANITIZE="address;undefined" $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD)-sanitize -j $(JOBS)
	@cd $(BUILD)-sanitize && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		LSAN_OPTIONS=suppressions=$(CURDIR)/tests/npu/lsan.supp:print_suppressions=0 \
		ctest -L 'unit|e2e' --output-on-failure --no-tests=error -j $(JOBS) --timeout 600

# Formatting (clang-format 14, .clang-format): format-check fails on any difference.
format:
	@clang-format -i $$(git ls-files '*.c' '*.h' '*.cpp')

format-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h' '*.cpp')

bench: build
	@bench/run.sh $(BUILD)

# libFuzzer targets (tests/fuzz: codec, capture reader and reports, NPU log parser) built
# with clang in $(FUZZ_BUILD), each run for FUZZ_SECONDS; fuzz-ci is CI's bounded run.
FUZZ_BUILD ?= $(BUILD)-fuzz
FUZZ_SECONDS ?= 600

fuzz-build:
	@scripts/install-deps.sh --fuzz
	@cmake -S . -B $(FUZZ_BUILD) -DMEMTRACE_FUZZ=ON -DCMAKE_C_COMPILER=clang \
		-DCMAKE_CXX_COMPILER=clang++ $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_codec fuzz_capture fuzz_npu

fuzz: fuzz-build
	@cd $(FUZZ_BUILD) && ctest -L fuzz --output-on-failure --no-tests=error
	@tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

fuzz-ci:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=60

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize $(FUZZ_BUILD)
