#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# MEMTRACE_OUTPUT without %p: the traced shell keeps the named file, and the program it
# execs (while the shell is still recording) gets <name>.<pid>.db instead of writing into
# the shell's capture. Both captures are complete and name their own command.
# Usage: check_exec_output.sh LIBMEMTRACE MEMREPORT WORKDIR
set -u
L=$1 M=$2 W=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
fail=0
check() {
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
out=$(MEMTRACE_OUTPUT="$W/cap.db" LD_PRELOAD="$L" /bin/sh -c "/bin/echo from-child; echo from-shell" 2>"$W/err")
check "output unchanged" test "$out" = "from-child
from-shell"
check "no tracer messages" test ! -s "$W/err"
check "shell capture" test -f "$W/cap.db"
n=$(ls "$W"/cap.*.db 2>/dev/null | wc -l)
check "child capture beside it" test "$n" -ge 1
for f in "$W"/cap.db "$W"/cap.*.db; do
    "$M" summary --json "$f" > "$W/s.json" || { echo "FAIL $f unreadable"; fail=1; continue; }
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["status"], s["command"])' "$W/s.json"
done
check "shell's command in cap.db" grep -q '"/bin/sh"' <("$M" summary --json "$W/cap.db")
check "echo's capture exists" sh -c "for f in $W/cap.*.db; do $M summary --json \$f; done | grep -q '\"/bin/echo\"'"
check "no leftover -wal/-shm" test -z "$(ls "$W" | grep -E -- '-wal|-shm')"
echo "$((fail ? 0 : 1)) passed, $fail failed"
exit $fail
