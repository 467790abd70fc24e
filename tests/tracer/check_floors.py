#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tracer's floors call only downwards (docs/architecture.md).

Usage: check_floors.py NM FLOOR=OBJ;OBJ;... ...   (floors from the top down)

Reads every object file's symbols with nm. A function or variable of the tracer (mt_*,
memtrace_*) that one floor uses and a higher floor defines is a call upwards, and fails the
check, unless it is one of the known ones below, which are still to be turned around. A
known one that is gone fails too, so the list only shrinks. Calls to the libc functions
the hooks interpose (mmap, sigaction, ...) are no calls between floors: they reach libc.
"""
import os
import subprocess
import sys

# (floor that calls, symbol): why it still goes up. None do now.
KNOWN_UP = {}


def symbols(nm, path):
    defined, used = set(), set()
    out = subprocess.run([nm, path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWGSC":
            defined.add(parts[2])
    return defined, used


def ours(name):
    return name.startswith("mt_") or name.startswith("memtrace_")


def main():
    nm, floors = sys.argv[1], []
    for arg in sys.argv[2:]:
        name, objs = arg.split("=", 1)
        floors.append((name, [o for o in objs.split(";") if o]))
    if len(floors) < 2 or any(not objs for _, objs in floors):
        sys.exit("check_floors: expected two or more floors, each with object files")
    level, owner = {}, {}
    for i, (name, objs) in enumerate(floors):
        level[name] = i  # 0 is the top
        for o in objs:
            for s in symbols(nm, o)[0]:
                if ours(s):
                    owner[s] = name
    failures, seen_known = [], set()
    for name, objs in floors:
        for o in objs:
            for s in sorted(symbols(nm, o)[1]):
                if s not in owner or level[owner[s]] >= level[name]:
                    continue
                where = f"{name}/{os.path.basename(o)} uses {owner[s]}'s {s}"
                if (name, s) in KNOWN_UP:
                    seen_known.add((name, s))
                    print(f"known: {where} ({KNOWN_UP[(name, s)]})")
                else:
                    failures.append(f"FAIL: {where}: a call up the floors")
    for k in sorted(set(KNOWN_UP) - seen_known):
        failures.append(f"FAIL: {k[0]} no longer uses {k[1]}: take it off KNOWN_UP")
    for f in failures:
        print(f)
    print(" > ".join(n for n, _ in floors) + f": {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
