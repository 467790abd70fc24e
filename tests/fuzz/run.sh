#!/usr/bin/env bash
# Runs every libFuzzer target of a MEMTRACE_FUZZ build for SECONDS each, one after another.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]   (targets: codec capture npu)
# The checked-in seeds (corpus/<target>) and past crashes (crashes/<target>) are read; new
# inputs the fuzzer finds go to BUILD_DIR/fuzz-corpus/<target>, kept between runs. A crash
# stops the run: its input is in BUILD_DIR/fuzz-artifacts/<target>/ (copy it into
# crashes/<target>/ as a regression seed when fixing it). Exit 0 only when nothing crashed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "$1" && pwd)"
seconds="$2"
shift 2
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(codec capture npu)
# UB is a crash like any other; fontconfig's process-lifetime allocations are not leaks.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$here/lsan.supp:print_suppressions=0}"
export MEMTRACE_SYMBOL_CACHE=0
for t in "${targets[@]}"; do
    bin="$build/tests/fuzz_$t"
    work="$build/fuzz-corpus/$t"
    artifacts="$build/fuzz-artifacts/$t"
    mkdir -p "$work" "$artifacts"
    dirs=("$work" "$here/corpus/$t")
    [ -d "$here/crashes/$t" ] && dirs+=("$here/crashes/$t")
    echo "fuzz: $t for ${seconds}s (new inputs: $work)"
    # -close_fd_mask=2: the reports' own error messages are not shown; the fuzzer's and the
    # sanitizers' are. -timeout: an input that runs 25 s is reported as a hang.
    set +e
    "$bin" -max_total_time="$seconds" -timeout=25 -print_final_stats=1 -close_fd_mask=2 \
        -artifact_prefix="$artifacts/" "${dirs[@]}" >"$build/fuzz-$t.log" 2>&1
    rc=$?
    set -e
    grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|SUMMARY|==[0-9]+==ERROR)' \
        "$build/fuzz-$t.log" || true
    if [ $rc -ne 0 ]; then
        tail -n 40 "$build/fuzz-$t.log" >&2
        echo "fuzz: $t FAILED (exit $rc): the input is in $artifacts/, the log $build/fuzz-$t.log" >&2
        exit 1
    fi
done
