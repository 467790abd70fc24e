#!/usr/bin/env bash
# The quick-start demo: traces examples/demo and writes the page to explore it (memreport
# view), its plot, flame graph and leak report.
set -euo pipefail
build=${1:-build}
out=$build/demo
mkdir -p "$out"
rm -f "$out"/demo.db
memreport=$build/reporter/memreport
echo "demo: tracing examples/demo with memtrace"
"$build"/preload/memtrace -o "$out/demo.db" -- "$build"/examples/demo
echo
"$memreport" summary "$out/demo.db"
echo
echo "demo: writing the page to explore it, the plot, the flame graph and the leak report"
"$memreport" view "$out/demo.db" -f -o "$out/demo-view.html"
"$memreport" plot "$out/demo.db" -f -o "$out/demo-plot.png"
"$memreport" flamegraph "$out/demo.db" -f -o "$out/demo-flamegraph.html"
"$memreport" leaks "$out/demo.db" -f -o "$out/demo-leaks.txt"
echo
echo "capture:     $out/demo.db"
echo "page:        $out/demo-view.html (open it in a browser: timeline, flame graph, tables)"
echo "plot:        $out/demo-plot.png"
echo "flame graph: $out/demo-flamegraph.html (peak memory; open in a browser)"
echo "leaks:       $out/demo-leaks.txt"
