# Thin wrapper around CMake: `make demo` builds what the demo runs and traces an example,
# `make test` builds and runs every test, `make install` (PREFIX, DESTDIR) and `make deb`
# install or package the tools. Missing Debian packages are installed first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PREFIX ?= /usr/local

# Quiet builds: CMake's one line per compiled file and every warning and error, but no
# "Built target" lines and no "gmake[3]: Entering directory" ones.
CONFIGURE = cmake -S . -B $(BUILD) -DCMAKE_TARGET_MESSAGES=OFF $(CMAKE_FLAGS) >/dev/null
QUIET = -- --no-print-directory

.PHONY: all deps test-deps build demo test test-sanitize format format-check bench clean fuzz-build fuzz \
	fuzz-ci install deb

all: build

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

build: deps
	@echo "make: building $(BUILD)/"
	@$(CONFIGURE)
	@cmake --build $(BUILD) -j $(JOBS) $(QUIET)

# Only what the demo runs: the tracer, its launcher, memreport and examples/demo.
demo: deps
	@echo "make: building the demo in $(BUILD)/"
	@$(CONFIGURE)
	@cmake --build $(BUILD) -j $(JOBS) --target memtrace memtrace_launcher memreport demo $(QUIET)
	@scripts/demo.sh $(BUILD)

test: test-deps build
	@echo "make: running the tests (logs: $(BUILD)/Testing/Temporary/LastTest.log)"
	@cd $(BUILD) && ctest --output-on-failure --no-tests=error -j $(JOBS) --timeout 600

# bin/memtrace, bin/memreport, lib/memtrace/libmemtrace.so, include/memtrace.h and the man
# pages under $(DESTDIR)$(PREFIX); each file installed is named.
install: build
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix $(PREFIX)

# The Debian package (memtrace_<version>_<arch>.deb, installed under /usr) in $(BUILD)/.
deb: build
	@cd $(BUILD) && cpack -G DEB

# Unit tests and e2e tests again, with AddressSanitizer (LeakSanitizer included) and UBSan
# on common/, reporter/ (memreport) and the tests; any finding fails the test. Programs are
# still traced by an unsanitized libmemtrace.so (it must not run under a sanitizer's own
# malloc); the tracer-only e2e cases are not registered in that build. Plotting loads
# fontconfig, whose process-lifetime caches tests/npu/lsan.supp suppresses.
test-sanitize: test-deps
	@cmake -S . -B $(BUILD)-sanitize -DMEMTRACE_SANITIZE="address;undefined" \
		-DCMAKE_TARGET_MESSAGES=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD)-sanitize -j $(JOBS) $(QUIET)
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
		-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_TARGET_MESSAGES=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_codec fuzz_capture fuzz_npu $(QUIET)

fuzz: fuzz-build
	@cd $(FUZZ_BUILD) && ctest -L fuzz --output-on-failure --no-tests=error
	@tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

fuzz-ci:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=60

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize $(FUZZ_BUILD)
