#!/usr/bin/env bash
# The quick-start demo: traces examples/demo and writes its plot, flame graph and leak report.
set -euo pipefail
build=${1:-build}
out=$build/demo
mkdir -p "$out"
rm -f "$out"/demo.db
"$build"/preload/memtrace -o "$out/demo.db" -- "$build"/examples/demo
"$build"/reporter/memreport summary "$out/demo.db"
echo
echo "capture:  $out/demo.db"
