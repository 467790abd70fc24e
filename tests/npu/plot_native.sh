#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The native time plot on a real traced program: the plot's peak (--data) equals
# `memreport summary --json`'s, site rows are drawn, and the PNG has the expected size.
# Usage: plot_native.sh MEMTRACE MEMREPORT WORKDIR
set -u
T=$1 M=$2 W=$3
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fail=0
check() {
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
seq 1 200000 | "$T" -o sort.db -- sort -r > /dev/null 2> trace.err
check "traced" test -s sort.db
check "plot" "$M" plot sort.db -o sort.png --data sort.json --sites 3
check "summary" "$M" summary sort.db --json -o summary.json
peak() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
check "same peak as summary" test "$(peak sort.json 'd["peak"]["bytes"]')" = \
    "$(peak summary.json 'd["peak_bytes"]')"
check "heap series ends at the bytes still live: leaked and held by the C runtime" test \
    "$(peak sort.json 'd["series"]["heap"][-1][1]')" = \
    "$(peak summary.json 'd["leaked_bytes"] + d.get("runtime_held_bytes", 0)')"
check "site rows" test "$(peak sort.json 'len(d["sites"])')" -ge 1
check "png size" python3 -c "
import struct,sys
h=open('sort.png','rb').read(24)
w,hh=struct.unpack('>II',h[16:24]); sys.exit(0 if (w,hh)==(1600,1200) else 1)"
exit $fail
