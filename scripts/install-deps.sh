#!/usr/bin/env bash
# Installs the Debian 12 packages memtrace builds and tests with, only those missing.
# Usage: scripts/install-deps.sh [--test|--bench|--fuzz]   (--test adds what the tests run:
# chromium, sqlite3, python3, git; --fuzz adds clang and its libFuzzer runtime for tests/fuzz)
set -euo pipefail
build_pkgs=(build-essential cmake pkg-config libunwind-dev libsqlite3-dev libcairo2-dev
            libjansson-dev libdw-dev libelf-dev zlib1g-dev libzstd-dev)
# libc6-dbg: libc's static start-up functions (__libc_start_call_main, start_thread) get
# names, so the symbol tests can check that they are tagged as noise.
# groff-base: the install tests render the man pages.
# heaptrack: e2e.stats_temporary_heaptrack compares memreport's temporaries with its count.
# golang-go: `go tool pprof` reads the pprof exports (tests/exports/).
# valgrind: its ms_print reads the massif exports (tests/exports/).
# graphviz: memreport flow -o FILE.svg runs its dot; e2e.flow reads the DOT and SVG back.
# gdb: memtrace --pid injects the tracer through it (e2e.attach_*).
# libc-devtools: glibc's memusage, whose counts e2e.early_and_late_calls compares with.
# libjemalloc-dev, libgoogle-perftools-dev: e2e.allocator_* link test programs against
# jemalloc and tcmalloc.
# strace: e2e.killed_in_sqlite holds the tracer's writer inside a write (its delay injection).
test_pkgs=(sqlite3 chromium chromium-driver python3 git fonts-dejavu-core libc6-dbg heaptrack
           groff-base golang-go valgrind graphviz gdb libc-devtools libjemalloc-dev
           libgoogle-perftools-dev strace)
want=("${build_pkgs[@]}")
[ "${1:-}" = "--test" ] && want+=("${test_pkgs[@]}")
# node and npm run the speedscope export's tests (tests/exports/speedscope): Debian's, unless
# a node with its npm is already there.
[ "${1:-}" = "--test" ] && ! command -v npm >/dev/null && want+=(nodejs npm)
# The npm packages of those tests, at the versions of their package-lock.json, into
# tests/exports/speedscope/node_modules (again only when the lock file changed).
speedscope_npm() {
    local dir
    dir="$(cd "$(dirname "$0")/.." && pwd)/tests/exports/speedscope"
    [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ] && return 0
    echo "install-deps: npm ci in $dir" >&2
    npm ci --prefix "$dir" --no-audit --no-fund >/dev/null
}
# --bench: python3-matplotlib runs bench/npu's baseline (the NPU plotter reimplemented);
# heaptrack, sqlite3, git and python3 (test_pkgs) are what bench/run.py and bench/size.py
# compare with and trace.
[ "${1:-}" = "--bench" ] && want+=("${test_pkgs[@]}" python3-matplotlib)
# --fuzz: clang builds the libFuzzer targets; libclang-rt-14-dev holds libFuzzer itself (only
# recommended by clang, and recommends are not installed here).
[ "${1:-}" = "--fuzz" ] && want+=(clang libclang-rt-14-dev)
missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    if [ "${1:-}" = "--test" ]; then speedscope_npm; fi
    exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [ "${1:-}" = "--test" ]; then speedscope_npm; fi
