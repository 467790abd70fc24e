#!/bin/sh
# SPDX-License-Identifier: MIT
# Compares two builds of memreport on one capture: runs `memreport REPORT CAPTURE ARGS...`
# with each, interleaved (A B A B ...) so that a neighbour's load falls on both alike, and
# prints every run's wall and cpu (user + sys) time, then each build's medians and spread.
# Usage: bench/scale/ab.sh BUILD_A BUILD_B CAPTURE [RUNS [REPORT [ARGS...]]]
#        (RUNS defaults to 3, REPORT to summary)
set -eu
a=${1:?usage: ab.sh BUILD_A BUILD_B CAPTURE [RUNS [REPORT [ARGS...]]]}
b=${2:?usage: ab.sh BUILD_A BUILD_B CAPTURE [RUNS [REPORT [ARGS...]]]}
cap=${3:?usage: ab.sh BUILD_A BUILD_B CAPTURE [RUNS [REPORT [ARGS...]]]}
runs=${4:-3}
shift 3
[ $# -gt 0 ] && shift
report=${1:-summary}
[ $# -gt 0 ] && shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
i=0
while [ "$i" -lt "$runs" ]; do
    for side in A B; do
        if [ $side = A ]; then build=$a; else build=$b; fi
        /usr/bin/time -f '%e %U %S' -o "$out/t" "$build/reporter/memreport" "$report" "$cap" \
            "$@" >/dev/null 2>"$out/err" || { echo "$side failed:"; cat "$out/err"; exit 1; }
        awk -v l=$side '{ printf "%s %.2f %.2f\n", l, $1, $2 + $3 }' "$out/t" | tee -a "$out/all"
    done
    i=$((i + 1))
done
# Medians and (min-max) of wall (column 2) and cpu (column 3).
stat() { # SIDE COLUMN
    grep "^$1 " "$out/all" | cut -d' ' -f"$2" | sort -n >"$out/col"
    n=$(wc -l <"$out/col")
    printf '%s (%s-%s)' "$(sed -n "$(((n + 1) / 2))p" "$out/col")" "$(head -1 "$out/col")" \
        "$(tail -1 "$out/col")"
}
for side in A B; do
    echo "$side: wall $(stat $side 2) s, cpu $(stat $side 3) s"
done
