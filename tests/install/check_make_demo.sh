#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make demo` as a user runs it, in a fresh build directory: it succeeds, builds only what
# the demo runs, prints no make noise (directory changes, "Built target" lines), and every
# file it says it wrote is there.
# Usage: check_make_demo.sh SOURCE_DIR WORKDIR
set -u
S=$1 W=$2
rm -rf "$W" && mkdir -p "$W" || exit 1
fail=0
check() {
    local what=$1
    shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

# Run as from a shell: not as a sub-make of the `make test` that may have started ctest.
(cd "$S" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
    make demo BUILD="$W/build" JOBS=2 >"$W/out.txt" 2>&1)
rc=$?
cat "$W/out.txt"
check "make demo succeeds" test $rc = 0
check "no make directory noise" test "$(grep -c -E 'Entering directory|Leaving directory' "$W/out.txt")" = 0
check "no 'Built target' lines" test "$(grep -c 'Built target' "$W/out.txt")" = 0
# Everything the output names as written exists.
for what in capture page plot "flame graph" leaks; do
    f=$(sed -n "s/^$what: *\([^ ]*\).*/\1/p" "$W/out.txt" | tail -1)
    check "$what named and written ($f)" test -n "$f" -a -s "${f:-/nonexistent}"
done
# Only the demo's targets were built: no test, benchmark or fuzz program (the build tool
# that writes the empty capture's image is part of building the library).
built=$(cd "$W/build" && find . -name CMakeFiles -prune -o -type f -perm -u+x -print |
    sed 's|^\./||' | LC_ALL=C sort)
expected="common/capture_template_gen
examples/demo
preload/libmemtrace.so
preload/memtrace
reporter/memreport"
check "built only the demo's programs" test "$built" = "$expected"
[ "$built" = "$expected" ] || diff <(echo "$expected") <(echo "$built")
exit $fail
