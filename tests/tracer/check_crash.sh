#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A program killed by a fatal signal dies exactly as it does untraced (same status), and its
# capture is saved first: complete, with all 23 allocations and the signal recorded.
# Usage: check_crash.sh LIBMEMTRACE MEMREPORT PROGRAM WORKDIR
set -u
L=$1 M=$2 P=$3 W=$4
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
ulimit -c 0
fail=0
for how in a s k; do
    "$P" "$how" 2>/dev/null; native=$?
    MEMTRACE_OUTPUT="$W/$how.db" LD_PRELOAD="$L" "$P" "$how" 2>/dev/null; traced=$?
    [ $native -eq $traced ] || { echo "FAIL $how: exit $traced, untraced $native"; fail=1; }
    "$M" summary --json "$how.db" > "$how.json" || { echo "FAIL $how: capture unreadable"; fail=1; continue; }
    python3 - "$how.json" "$((native - 128))" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))
want = {"status": "complete", "allocations": 23, "terminated_by_signal": int(sys.argv[2])}
got = {k: s.get(k) for k in want}
print(("ok   " if got == want else "FAIL ") + sys.argv[1], got)
sys.exit(0 if got == want else 1)
PY
done
echo "$((fail ? 0 : 1)) passed, $fail failed"
exit $fail
