#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs fork_storm under the tracer (CTest's timeout catches a deadlock) and checks that the
# parent's and every child's capture is complete and readable.
# Usage: check_fork_storm.sh MEMTRACE MEMREPORT PROGRAM WORKDIR
set -u
T=$1 M=$2 P=$3 W=$4
rm -rf "$W" && mkdir -p "$W" || exit 1
fail=0
# Symbols are not what this checks; resolving them at each child's exit only costs time.
out=$(MEMTRACE_SYMBOLIZE=0 "$T" -o "$W/storm.db" -- "$P" 2>"$W/err")
rc=$?
[ $rc -eq 0 ] && [ "$out" = "40 children ok" ] || { echo "FAIL run: exit $rc, '$out'"; cat "$W/err"; fail=1; }
n=0
for f in "$W"/storm*.db; do
    s=$("$M" summary --json "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
    [ "$s" = complete ] || { echo "FAIL $f: status '$s'"; fail=1; }
    n=$((n + 1))
done
[ $n -eq 41 ] || { echo "FAIL expected 41 captures, found $n"; fail=1; }
echo "$((fail ? 0 : 1)) passed, $fail failed"
exit $fail
