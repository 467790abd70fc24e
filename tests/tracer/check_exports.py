#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libmemtrace.so exports exactly the hooks of preload/hooks.def and memtrace_*: a hook
missing from the library (but an OPTIONAL one: this libc may lack it, and the shim then
does not define it), or an export no row names, fails.

Usage: check_exports.py NM LIBMEMTRACE HOOKS_DEF
"""
import re
import subprocess
import sys


def main():
    nm, lib, hooks_def = sys.argv[1:]
    found = re.findall(r"^MT_(?:HEAP_HOOK\(\w+, |HOOK\()(\w+), (\w+),", open(hooks_def).read(),
                       re.M)
    rows = [name for name, _ in found]
    optional = {name for name, real in found if real == "OPTIONAL"}
    out = subprocess.run([nm, "-D", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    exports = {line.split()[-1] for line in out.splitlines() if line.strip()}
    ours = {e for e in exports if e.startswith("memtrace_")}
    bad = [f"FAIL: {n}: in hooks.def, not exported" for n in rows
           if n not in exports and n not in optional]
    bad += [f"FAIL: {e}: exported, in no row of hooks.def" for e in sorted(exports - ours)
            if e not in rows]
    if len(rows) != len(set(rows)):
        bad.append("FAIL: a name is listed twice in hooks.def")
    print("\n".join(bad) or f"ok: {len(rows)} hooks and {len(ours)} memtrace_* exported")
    sys.exit(1 if bad or len(rows) < 10 else 0)


if __name__ == "__main__":
    main()
