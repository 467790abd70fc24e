#!/usr/bin/env bash
# Installs the Debian 12 packages memtrace builds and tests with, only those missing.
# Usage: scripts/install-deps.sh [--test|--bench|--fuzz]   (--test adds what the tests run:
# chromium, sqlite3, python3, git; --fuzz adds clang and its libFuzzer runtime for tests/fuzz)
set -euo pipefail
build_pkgs=(build-essential cmake pkg-config libunwind-dev libsqlite3-dev libcairo2-dev
            libjansson-dev libdw-dev libelf-dev zlib1g-dev)
# libc6-dbg: libc's static start-up functions (__libc_start_call_main, start_thread) get
# names, so the symbol tests can check that they are tagged as noise.
# groff-base: the install tests render the man pages.
# heaptrack: e2e.stats_temporary_heaptrack compares memreport's temporaries with its count.
# golang-go: `go tool pprof` reads the pprof exports (tests/exports/).
# valgrind: its ms_print reads the massif exports (tests/exports/).
test_pkgs=(sqlite3 chromium chromium-driver python3 git fonts-dejavu-core libc6-dbg heaptrack
           groff-base golang-go valgrind)
want=("${build_pkgs[@]}")
[ "${1:-}" = "--test" ] && want+=("${test_pkgs[@]}")
# --bench: python3-matplotlib runs bench/npu's baseline (the NPU plotter reimplemented).
[ "${1:-}" = "--bench" ] && want+=("${test_pkgs[@]}" python3-matplotlib)
# --fuzz: clang builds the libFuzzer targets; libclang-rt-14-dev holds libFuzzer itself (only
# recommended by clang, and recommends are not installed here).
[ "${1:-}" = "--fuzz" ] && want+=(clang libclang-rt-14-dev)
missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
