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

# The other reports read the imported heap: the sample's 5 buffers (8 KB in all, peak 6 KB
# live at step 3), all allocated from function main.
"$M" summary --json sample.db > sum.json
check "summary of import" python3 -c '
import json, sys
s = json.load(open("sum.json"))
want = dict(allocations=5, frees=5, bytes_allocated=8192, peak_bytes=6144, peak_time_ns=3,
            leaked_bytes=0, time_unit="step")
bad = {k: (s.get(k), v) for k, v in want.items() if s.get(k) != v}
if bad:
    print(bad)
sys.exit(1 if bad else 0)'
"$M" stacks --json sample.db > stacks.json
check "stacks by function" python3 -c '
import json, sys
s = json.load(open("stacks.json"))["stacks"]
sys.exit(not (len(s) == 1 and s[0]["frames"][0]["function"] == "main" and s[0]["bytes"] == 8192))'
check "flamegraph of import" "$M" flamegraph sample.db -o flame.html
check "flamegraph names main" grep -q '"main"' flame.html
check "help" "$M" import --help
check "plot help" "$M" plot --help
exit $fail
