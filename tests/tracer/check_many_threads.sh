#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Usage: check_many_threads.sh MEMTRACE MEMREPORT PROGRAM WORKDIR
set -u
T=$1 M=$2 P=$3 W=$4
rm -rf "$W" && mkdir -p "$W" || exit 1
out=$("$T" -o "$W/m.db" -- "$P" 2>/dev/null) || { echo "FAIL: exit $?"; exit 1; }
[ "$out" = "many threads ok" ] || { echo "FAIL: output '$out'"; exit 1; }
"$M" summary --json "$W/m.db" | python3 -c '
import json, sys
s = json.load(sys.stdin)
# 201 threads made heap calls; each of the 200 workers made 2 mallocs and 2 frees.
ok = s["status"] == "complete" and s["threads"] == 201 and s["calls"]["malloc"] >= 400 \
    and s["calls"]["free"] >= 400
print("1 passed, 0 failed" if ok else f"FAIL: {s}")
sys.exit(0 if ok else 1)'
