# Thin wrapper around CMake: `make demo` builds everything and traces an example,
# `make test` builds and runs every test. Missing Debian packages are installed first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps test-deps build demo test test-sanitize format format-check bench clean

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

# Unit tests again with AddressSanitizer and UBSan on common/, reporter/ and the tests
# (never on libmemtrace.so, which must not run under a sanitizer's own malloc).
test-sanitize: test-deps
	@cmake -S . -B $(BUILD)-sanitize -DMEMTRACE_SANITIZE="address;undefined" $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD)-sanitize -j $(JOBS)
	@cd $(BUILD)-sanitize && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		ctest -L unit --output-on-failure --no-tests=error -j $(JOBS) --timeout 600

# Formatting (clang-format 14, .clang-format): format-check fails on any difference.
format:
	@clang-format -i $$(git ls-files '*.c' '*.h' '*.cpp')

format-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h' '*.cpp')

bench: build
	@bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize
