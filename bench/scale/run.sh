#!/bin/sh
# SPDX-License-Identifier: MIT
# Times memreport's reports, exports and SQL counts on a synthetic capture of EVENTS events
# (default 100 million) and prints wall time, CPU time and peak RSS of each (GNU time -v).
# The capture is generated once into BUILD/bench-scale/ and reused while its event count
# matches.
# Usage: bench/scale/run.sh BUILD_DIR [EVENTS]
set -eu
build=${1:?usage: run.sh BUILD_DIR [EVENTS]}
events=${2:-100000000}
dir=$build/bench-scale
cap=$dir/capture-$events.db
memreport=$build/reporter/memreport
mkdir -p "$dir"
cmake --build "$build" --target scale_gen_capture memreport >/dev/null
if [ ! -f "$cap" ]; then
    echo "generating $cap ..."
    /usr/bin/time -f "generated in %e s, max RSS %M KB" \
        "$build/bench/scale/scale_gen_capture" "$cap.tmp" "$events"
    mv "$cap.tmp" "$cap"
fi
echo "capture: $cap ($(du -m "$cap" | cut -f1) MB, $events events)"
echo "machine: $(nproc) cores, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
printf '%-34s %10s %10s %12s\n' report "wall (s)" "cpu (s)" "max RSS (MB)"
run() {
    name=$1
    shift
    /usr/bin/time -v -o "$dir/time.txt" "$memreport" "$@" >/dev/null 2>"$dir/stderr.txt" ||
        { echo "$name failed:"; cat "$dir/stderr.txt"; exit 1; }
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt" |
        awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }')
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
    # CPU time too: on a shared machine the wall time mostly measures the neighbours.
    cpu=$(sed -n 's/.*\(User\|System\) time (seconds): //p' "$dir/time.txt" | awk '{ s += $1 } END { print s }')
    printf '%-34s %10.1f %10.1f %12.0f\n' "$name" "$wall" "$cpu" "$((rss / 1024))"
}
# The first report on a capture replays it and stores its aggregates; the next ones read
# those (docs/capture-format.md, "Aggregates"); --replay reads every event regardless. The
# temporal flame graph and the view store their own answers when first made ("Derived").
sqlite3 "$cap" 'DROP TABLE IF EXISTS aggregate; DROP TABLE IF EXISTS checkpoint; DROP TABLE IF EXISTS derived'
run "summary (first open: stores)" summary "$cap"
echo "    stored: $(sqlite3 "$cap" 'SELECT count(*) || " checkpoints, " || (sum(length(data)) >> 20) || " MB" FROM checkpoint')"
run "summary --replay" --replay summary "$cap"
run "summary" summary "$cap"
run "leaks --json" leaks "$cap" --json
run "stats --json" stats "$cap" --json
run "top --json" top "$cap" --json
run "flamegraph (peak)" flamegraph "$cap" -f -o "$dir/peak.html"
run "flamegraph --at 1s" flamegraph "$cap" --at 1s -f -o "$dir/at.html"
run "--replay flamegraph --at 1s" --replay flamegraph "$cap" --at 1s -f -o "$dir/at.html"
# Just before a checkpoint: the most events a report at a moment replays.
run "flamegraph --at 1.0485s" flamegraph "$cap" --at 1.0485s -f -o "$dir/at.html"
run "flow --at 0.5s --at 1.2s --at 2s" flow "$cap" --at 0.5s --at 1.2s --at 2s
run "top --range 1s..2s" top "$cap" --range 1s..2s
run "top --range 0.2s..2.3s" top "$cap" --range 0.2s..2.3s
# A range's leaks and leak kinds: the blocks live at the end, stored when first asked.
run "leaks --range 1s..2s (first: stores)" leaks "$cap" --range 1s..2s
run "leaks --range 1s..2s --kind all" leaks "$cap" --range 1s..2s --kind all
run "top --metric leaked --range 1s..2s" top "$cap" --metric leaked --range 1s..2s
run "leaks --kind definite" leaks "$cap" --kind definite
run "flamegraph --temporal (first: stores)" flamegraph "$cap" --temporal -f -o "$dir/temporal.html"
run "flamegraph --temporal" flamegraph "$cap" --temporal -f -o "$dir/temporal.html"
run "view (first: stores)" view "$cap" -f -o "$dir/view.html"
run "view" view "$cap" -f -o "$dir/view.html"
# Per thread: the checkpoints and one pass that counts the allocations (threads_profile.h).
run "flamegraph --split-threads" flamegraph "$cap" --split-threads -f -o "$dir/split.html"
run "top --thread 1003 --json" top "$cap" --thread 1003 --json
run "flamegraph --leaks --split-threads" flamegraph "$cap" --leaks --split-threads -f \
    -o "$dir/leaks.html"
echo "flame graph pages: $(du -k "$dir/peak.html" | cut -f1) KB (peak), $(du -k "$dir/leaks.html" | cut -f1) KB (leaks)"
for format in folded speedscope pprof massif chrome csv; do
    run "export --format $format" export "$cap" --format "$format" -f -o "$dir/export.$format"
    echo "    $(du -m "$dir/export.$format" | cut -f1) MB written"
    rm -f "$dir/export.$format" # the csv of 100M events is 30 GB
done
run "sql 'select count(*) from events'" sql "$cap" 'select count(*) from events'
run "sql ... where kind = 'malloc'" sql "$cap" "select count(*) from events where kind = 'malloc'"
