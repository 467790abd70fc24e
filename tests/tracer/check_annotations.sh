#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The annotation API: untraced, the program runs as usual (weak symbols, nothing linked);
# traced, its marks, range, pause and pool allocations are in the capture.
# Usage: check_annotations.sh MEMTRACE MEMREPORT PROGRAM WORKDIR
set -u
T=$1 M=$2 P=$3 W=$4
rm -rf "$W" && mkdir -p "$W" || exit 1
fail=0
check() {
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
check "untraced run" test "$("$P")" = "annotations ok"
check "traced run" test "$("$T" -o "$W/a.db" -- "$P" 2>/dev/null)" = "annotations ok"
q() { sqlite3 "$W/a.db" "$1"; }
check "two marks" test "$(q "select group_concat(name) from (select name from mark where kind='mark' order by ts_begin)")" = "start,end"
check "closed range" test "$(q "select count(*) from mark where kind='range' and name='work' and ts_end > ts_begin")" = 1
check "pool alloc and free" test "$(q "select count(*) from event_kind")" -gt 0
"$M" summary --json "$W/a.db" > "$W/s.json" || fail=1
# malloc(100) and the pool block: 2 allocations, 612 bytes; free(p), pool free, free(hidden)
# (hidden was allocated while paused, so its free is unmatched). malloc(7) is not recorded,
# nor are the two pool blocks of over 2^56 bytes (counted: reports_ignored).
check "summary counts" python3 - "$W/s.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
got = {k: s[k] for k in ("bytes_allocated", "frees", "unmatched_frees")}
want = {"bytes_allocated": 612, "frees": 3, "unmatched_frees": 1}
ok = got == want and s["allocations"] == 2 and s["calls"]["malloc"] == 2 and \
    s.get("reports_ignored") == 2
print(got, "allocations", s["allocations"], "ignored", s.get("reports_ignored")) if not ok else None
sys.exit(0 if ok else 1)
PY
echo "$((fail ? 0 : 1)) passed, $fail failed"
exit $fail
