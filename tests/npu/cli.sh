#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CLI checks of `memreport import` and `memreport plot` on NPU logs: exit codes and
# messages of the issue's error cases (no output file left), the default output name,
# --force, and plot of a log == plot of its imported capture.
# Usage: cli.sh MEMREPORT FIXTURE_DIR WORKDIR
set -u
M=$1 FIX=$2 W=$3
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fail=0
check() { # description, then a command that must succeed
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

# Errors: exit 2, "memreport: FILE: ...", no output.
printf '[TRACE] [memory-usage-info]   main: Max allocated size 5 B\n' > nogate.log
"$M" import nogate.log -o nogate.db 2> err.txt; rc=$?
check "no gate: exit 2" test $rc -eq 2
check "no gate: message" grep -q "^memreport: nogate.log: no 'Start Pass StaticAllocation' line" err.txt
check "no gate: no capture" test ! -e nogate.db
printf '[DEBUG] [vpux-compiler] Start Pass StaticAllocation on Operation x\n[TRACE] [m]   init: Max allocated size 5 B\n' > nodata.log
"$M" import nodata.log 2> err.txt; rc=$?
check "no data: exit 2" test $rc -eq 2
check "no data: message" grep -q "^memreport: nodata.log: no memory-usage lines" err.txt
check "no data: no capture" test ! -e nodata.db
"$M" plot nodata.log -o nodata.png --data nodata.json 2> err.txt; rc=$?
check "plot no data: exit 2, no files" test $rc -eq 2 -a ! -e nodata.png -a ! -e nodata.json
: > empty.log
"$M" import empty.log 2> /dev/null; rc=$?
check "empty: exit 2" test $rc -eq 2
head -c 2000000 /dev/urandom > junk.log
"$M" import junk.log 2> /dev/null; rc=$?
check "garbage: exit 2" test $rc -eq 2
"$M" import missing.log 2> err.txt; rc=$?
check "missing: exit 3" test $rc -eq 3

# Default output name, refusal without -f, success with -f.
cp "$FIX/sample.log" logs.txt
check "import default name" "$M" import logs.txt
check "logs.db written" test -s logs.db
check "logs.db is complete" test "$(sqlite3 logs.db "select value from meta where key='capture_status'")" = complete
check "format meta" test "$(sqlite3 logs.db "select value from meta where key='format'")" = npu-log
check "heap 2 npu step" test "$(sqlite3 logs.db "select name||','||kind||','||time_unit from heap where id=2")" = "npu,npu,step"
check "frame per function" test "$(sqlite3 logs.db "select function from frame where mapping_id is null")" = main
"$M" import logs.txt 2> err.txt; rc=$?
check "no -f: refused" test $rc -eq 3
check "no -f: message" grep -q "already exists" err.txt
check "-f overwrites" "$M" import -f logs.txt
check "no leftovers" test -z "$(ls | grep -E 'tmp|-wal|-shm|-journal')"

# plot LOG and plot CAPTURE give the same series.
for f in sample corner legacy_2025; do
    "$M" import "$FIX/$f.log" -o "$f.db" -f 2> /dev/null
    check "$f: plot log" "$M" plot "$FIX/$f.log" -o "$f-log.png" --data "$f-log.json"
    check "$f: plot capture" "$M" plot "$f.db" -o "$f-db.svg" --data "$f-db.json"
    check "$f: same data" cmp -s "$f-log.json" "$f-db.json"
done
check "legacy format meta" test "$(sqlite3 legacy_2025.db "select value from meta where key='format'")" = npu-log-legacy
"$M" plot "$FIX/sample.log" --sites 2 -o sites.png 2> err.txt; rc=$?
check "npu --sites refused" test $rc -eq 1 -a ! -e sites.png

# The other reports read the imported heap: the sample's 5 buffers (8 KiB in all, peak 6 KiB
# live at step 3), all allocated from function main. Where a native capture shows its
# process (command, pid, threads, calls), an import shows its source log, format and steps;
# its times are steps, never ns.
"$M" summary --json sample.db > sum.json
check "summary of import" python3 -c '
import json, os, sys
s = json.load(open("sum.json"))
want = dict(allocations=5, frees=5, bytes_allocated=8192, peak_bytes=6144, peak_step=3,
            leaked_bytes=0, time_unit="step", steps=5, format="current",
            source=os.path.realpath(sys.argv[1]))
bad = {k: (s.get(k), v) for k, v in want.items() if s.get(k) != v}
bad.update({k: s[k] for k in ("pid", "command", "threads", "calls", "duration_ns",
                              "peak_time_ns") if k in s})
if bad:
    print(bad)
sys.exit(1 if bad else 0)' "$FIX/sample.log"
"$M" summary sample.db > sum.txt
check "summary text: source log" grep -qx "source log:   $(realpath "$FIX/sample.log")" sum.txt
check "summary text: format" grep -qx "format:       NPU memory-usage log (current)" sum.txt
check "summary text: steps" grep -qx "steps:        5" sum.txt
check "summary text: peak at step 3" grep -qx "peak:         6.00 KiB at step 3" sum.txt
check "summary text: no process fields" test -z "$(grep -E '^(command|pid|threads|calls|duration):' sum.txt)"
"$M" summary legacy_2025.db > legacy-sum.txt
check "summary text: legacy format" grep -qx "format:       NPU memory-usage log (legacy)" legacy-sum.txt
"$M" stats sample.db > stats.txt
check "stats text: peak at step 3" grep -qx "peak: 6.00 KiB at step 3" stats.txt
"$M" stats --json sample.db > stats.json
check "stats json: peak step" python3 -c '
import json, sys
s = json.load(open("stats.json"))
sys.exit(not (s.get("peak_step") == 3 and s.get("time_unit") == "step" and "peak_time_ns" not in s))'
check "no ns in NPU reports" test -z "$(grep -E '[0-9] ns\b' sum.txt stats.txt)"
"$M" stacks --json sample.db > stacks.json
check "stacks by function" python3 -c '
import json, sys
s = json.load(open("stacks.json"))["stacks"]
sys.exit(not (len(s) == 1 and s[0]["frames"][0]["function"] == "main" and s[0]["bytes"] == 8192))'
check "flamegraph of import" "$M" flamegraph sample.db -o flame.html
check "flamegraph names main" grep -q '"main"' flame.html
check "flamegraph peak at step 3" grep -q '"subtitle":"Peak: 6.00 KiB live at step 3"' flame.html
# Times of an import are steps: step N, 0 to 4 for the sample's 5 steps; ns are refused.
check "flamegraph --at step 2" "$M" flamegraph sample.db --at 'step 2' -o at2.html
check "flamegraph --at step 2: 5 KiB" grep -q '"subtitle":"Live heap: 5.00 KiB live at step 2"' at2.html
check "flamegraph --at step 2: step key" grep -q '"step":2' at2.html
"$M" flamegraph sample.db --at 2ms -o at-ms.html 2> err.txt; rc=$?
check "--at 2ms on an import: exit 1, no page" test $rc -eq 1 -a ! -e at-ms.html
check "--at 2ms on an import: message" grep -qx "memreport: --at 2ms: sample.db is an imported NPU log, timed in allocation steps: expected step N (0 to 4)" err.txt
"$M" flamegraph sample.db --at 'step 5' -o at5.html 2> err.txt; rc=$?
check "--at step 5: exit 1, no page" test $rc -eq 1 -a ! -e at5.html
check "--at step 5: message" grep -qx "memreport: --at step 5: past the end of sample.db (5 steps: step 0 to step 4)" err.txt
# Hostile input (run under ASan+UBSan by `make test-sanitize`, halting on any finding).
# Values up to INT64_MAX import and plot exactly; one more is refused. The buffers' sizes
# sum to at most INT64_MAX too (docs/capture-format.md, "Limits": tests/limits.cmake).
G='[DEBUG] [vpux-compiler] Start Pass StaticAllocation on Operation x'
big=9223372036854775807 half=4611686018427387903
{ echo "$G"
  for f in part1 main; do
    echo "[T] [m]   $f: Buffer size to allocate      $half B"
    echo "[T] [m]   $f: DDR free memory before alloc 0 B"
    echo "[T] [m]   $f: Max allocated size $big B"
    echo "[T] [m]   $f: Increased allocation size to $big B due to fragmentation!"
    echo "[T] [m]   $f: DDR used memory    $big 100.00%"
    echo "[T] [m]   $f: DDR free memory    $big 0.00%"
    echo "[T] [m]   $f: Free buffer of size $half B"
  done; } > huge.log
check "huge values: import" "$M" import huge.log -o huge.db
check "huge values: plot log" "$M" plot huge.log -o huge.png --data huge.json
check "huge values: exact" python3 -c '
import json, sys
d = json.load(open("huge.json"))
sys.exit(d["series"]["max_allocated"] != [[0, 2**63 - 1], [1, 2**63 - 1]] or d["unit"] != "GB")'
check "huge values: plot capture" "$M" plot huge.db -o huge-db.png --data huge-db.json
check "huge values: same data" cmp -s huge.json huge-db.json
check "huge values: summary" "$M" summary huge.db --json -o huge-summary.json
sed "s/$big/9223372036854775808/; s/$half/9223372036854775808/" huge.log > over.log
"$M" import over.log -o over.db 2> err.txt; rc=$?
check "over INT64_MAX: exit 2, one line" test $rc -eq 2 -a "$(wc -l < err.txt)" -eq 1
check "over INT64_MAX: message" grep -q "^memreport: over.log: line 2: number larger than" err.txt
# A capture whose steps are not what import writes: refused with what is wrong.
cp sample.db crafted.db
sqlite3 crafted.db "UPDATE counter SET ts = 9223372036854775807 WHERE ts = 4"
"$M" plot crafted.db -o crafted.png 2> err.txt; rc=$?
check "crafted steps: exit 2, no picture" test $rc -eq 2 -a ! -e crafted.png
check "crafted steps: message" grep -q "^memreport: crafted.db: max-allocated counter at step 9223372036854775807: NPU steps must lie in 0..2^61$" err.txt
check "crafted steps: one line" test "$(wc -l < err.txt)" -eq 1

check "help" "$M" import --help
check "plot help" "$M" plot --help
exit $fail
