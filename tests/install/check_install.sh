#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed memtrace, as a user gets it, nothing of the build tree used:
#   install: `cmake --install` with DESTDIR and a prefix (what `make install` runs);
#   deb:     the Debian package CPack builds (`make deb`), unpacked with dpkg -x into a
#            temporary root (the machine is not changed), its dependencies checked.
# Either way: exactly the expected files, man pages that render and hold every line of the
# programs' --help, a program built against the installed memtrace.h traced by the
# installed memtrace and read by the installed memreport, and a launcher that finds its
# library beside itself and nowhere else.
# Usage: check_install.sh install|deb BUILD_DIR PROBE_SOURCE WORKDIR
set -u
mode=$1 B=$2 PROBE=$3 W=$4
rm -rf "$W" && mkdir -p "$W" || exit 1
fail=0
check() {
    local what=$1
    shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

case $mode in
install)
    prefix=/opt/memtrace-test
    root=$W/destdir
    DESTDIR=$root cmake --install "$B" --prefix "$prefix" >"$W/install.log" 2>&1 ||
        { cat "$W/install.log"; echo "FAIL cmake --install"; exit 1; }
    ;;
deb)
    command -v dpkg-deb >/dev/null || { echo "SKIP: dpkg-deb is not installed"; exit 77; }
    prefix=/usr
    root=$W/root
    (cd "$B" && cpack -G DEB -B "$W/pkg" >"$W/cpack.log" 2>&1) ||
        { cat "$W/cpack.log"; echo "FAIL cpack"; exit 1; }
    debs=("$W"/pkg/memtrace_*.deb)
    check "one package written" test ${#debs[@]} = 1 -a -f "${debs[0]}"
    deb=${debs[0]}
    echo "package: $(basename "$deb")"
    depends=$(dpkg-deb -f "$deb" Depends)
    echo "Depends: $depends"
    dep_names=" $(echo "$depends" | sed 's/([^)]*)//g; s/[,|]/ /g') "
    for p in libunwind8 libdw1 libsqlite3-0 libcairo2 libjansson4; do
        check "depends on $p" grep -q " $p " <<<"$dep_names"
    done
    check "architecture is the machine's" test "$(dpkg-deb -f "$deb" Architecture)" = \
        "$(dpkg --print-architecture)"
    dpkg -x "$deb" "$root" || { echo "FAIL dpkg -x"; exit 1; }
    # Every library the installed programs link (their NEEDED entries; the libraries' own
    # dependencies are their packages' business) comes from a package the .deb depends on,
    # so apt on a fresh Debian 12 installs all they need.
    for elf in "$root/usr/bin/memtrace" "$root/usr/bin/memreport" \
        "$root/usr/lib/memtrace/libmemtrace.so"; do
        ldd "$elf" >"$W/ldd.txt" 2>&1
        check "$(basename "$elf"): every library found" test "$(grep -c 'not found' "$W/ldd.txt")" = 0
        needed=$(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
        check "$(basename "$elf"): NEEDED entries read" test -n "$needed"
        for soname in $needed; do
            lib=$(awk -v so="$soname" '$1 == so && $2 == "=>" {print $3}' "$W/ldd.txt")
            # dpkg -S knows a library by the path its package installed (/lib or /usr/lib).
            owner=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null ||
                dpkg -S "${lib#/usr}" 2>/dev/null)
            pkg=${owner%%:*}
            check "$(basename "$elf"): $soname from a dependency (${pkg:-no package})" \
                grep -q " ${pkg:-none} " <<<"$dep_names"
        done
    done
    ;;
*)
    echo "usage: check_install.sh install|deb BUILD_DIR PROBE_SOURCE WORKDIR" >&2
    exit 1
    ;;
esac

P=$root$prefix
# Exactly these files, nothing of the tests, benchmarks or build tree.
expected="bin/memreport
bin/memtrace
include/memtrace.h
lib/memtrace/libmemtrace.so
share/man/man1/memreport.1
share/man/man1/memtrace.1"
# And the documentation: README.md and every file of docs/, as in the source.
src=$(cd "$(dirname "$PROBE")/../.." && pwd)
expected=$( (echo "$expected"; echo share/doc/memtrace/README.md
    cd "$src" && find docs -type f | sed 's|^|share/doc/memtrace/|') | LC_ALL=C sort)
actual=$(cd "$P" && find . -type f -o -type l | sed 's|^\./||' | LC_ALL=C sort)
check "installed files" test "$actual" = "$expected"
[ "$actual" = "$expected" ] || diff <(echo "$expected") <(echo "$actual")
check "the installed pages' links to docs/ and README.md lead to installed files" \
    python3 - "$P/share/doc/memtrace" <<'PY'
import os, re, sys
top = sys.argv[1]
broken = []
for d, _, files in os.walk(top):
    for f in files:
        if f.endswith(".md"):
            for link in re.findall(r"\]\(([^)#\s]+)", open(os.path.join(d, f)).read()):
                target = os.path.normpath(os.path.join(d, link))
                # Other links lead to the source's developer pages (CONTRIBUTING, folders).
                ours = target.startswith(top + "/docs/") or target == top + "/README.md"
                if "://" not in link and ours and not os.path.exists(target):
                    broken.append(f"{f}: {link}")
print("\n".join(broken))
sys.exit(1 if broken else 0)
PY
check "programs are executable" test -x "$P/bin/memtrace" -a -x "$P/bin/memreport"

# The man pages render without a warning, and hold each line of the programs' --help.
man_has_help() {
    local page=$1
    shift
    local text
    text=$(groff -man -Tascii -P-cbou -ww "$page" 2>"$W/groff.err") || return 1
    [ -s "$W/groff.err" ] && { cat "$W/groff.err"; return 1; }
    text=$(tr -s ' \n' ' ' <<<"$text")
    local line
    while IFS= read -r line; do
        line=$(sed 's/^usage: //' <<<"$line" | tr -s ' ' ' ' | sed 's/^ //; s/ $//')
        [ -z "$line" ] && continue
        grep -qF -- "$line" <<<"$text" || { echo "not in $page: $line"; return 1; }
    done < <("$@" --help)
}
check "memtrace.1 holds memtrace --help" man_has_help "$P/share/man/man1/memtrace.1" "$P/bin/memtrace"
check "memreport.1 holds memreport --help" \
    man_has_help "$P/share/man/man1/memreport.1" "$P/bin/memreport"
commands=$("$P/bin/memreport" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
check "memreport lists commands" test -n "$commands"
for c in $commands; do
    check "memreport.1 holds memreport $c --help" \
        man_has_help "$P/share/man/man1/memreport.1" "$P/bin/memreport" "$c"
done

# A program built against the installed header, traced and read by the installed programs.
check "probe builds with the installed memtrace.h" \
    cc -g -O0 -I"$P/include" -o "$W/probe" "$PROBE"
(cd "$W" && "$P/bin/memtrace" -o "$W/probe.db" -- ./probe >"$W/probe.out" 2>"$W/probe.err")
check "traced probe runs" test "$(cat "$W/probe.out")" = "probe ok"
check "capture written" test -s "$W/probe.db"
"$P/bin/memreport" summary --json "$W/probe.db" >"$W/summary.json" 2>"$W/summary.err"
"$P/bin/memreport" leaks --json "$W/probe.db" >"$W/leaks.json" 2>"$W/leaks.err"
check "installed memreport reads the capture" python3 - "$W/summary.json" "$W/leaks.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
leaks = json.load(open(sys.argv[2]))
ok = s["status"] == "complete" and s["calls"]["free"] == 1 and s["allocations"] >= 2
found = [g for g in leaks["groups"]
         if g["bytes"] == 4242 and g["stack"] and g["stack"][0]["function"] == "make_leak"]
if not (ok and len(found) == 1):
    print(json.dumps(s, indent=1), json.dumps(leaks, indent=1))
    sys.exit(1)
PY

# The launcher finds libmemtrace.so at ../lib/memtrace beside itself: without it there, it
# stops with a message rather than using another copy (the build tree's).
mv "$P/lib/memtrace/libmemtrace.so" "$W/libmemtrace.so.away"
(cd "$W" && "$P/bin/memtrace" -o "$W/nolib.db" -- ./probe >/dev/null 2>"$W/nolib.err")
rc=$?
mv "$W/libmemtrace.so.away" "$P/lib/memtrace/libmemtrace.so"
check "without its library the launcher fails" test $rc -ne 0 -a ! -e "$W/nolib.db"
check "and says so" grep -q "libmemtrace.so" "$W/nolib.err"

exit $fail
