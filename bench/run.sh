#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the tracer, memreport and the bench workloads in BUILD_DIR (default: build) if needed,
# then runs the benchmark (bench/run.py): native, the floor shim, memtrace (auto, fp, libunwind)
# and heaptrack side by side, and writes the table to stdout and bench/results.txt. No timing is asserted.
# Usage: bench/run.sh [BUILD_DIR]; settings: see bench/README.md (BENCH_EVENTS, BENCH_REPS...).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac

if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target memtrace memtrace_launcher memreport bench_workloads \
    >/dev/null
exec python3 "$here/run.py" "$build"
