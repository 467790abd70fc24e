#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The leak scan in a CPython program against valgrind's memcheck: CPython keeps its objects in
# arenas it maps itself, which the scan reads as roots (docs/leaks.md). On `python -c pass`
# and on a script that drops the pointer a C function returned (ctypes: malloc(1000)), the
# program's definitely, indirectly and possibly lost bytes and blocks (`leaks --json`, the C
# runtime's blocks apart) equal `valgrind --leak-check=full`'s LEAK SUMMARY; the output and
# exit status are the untraced run's. Exits 77 where valgrind is missing.
import argparse
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import capture_meta, check, clean_env, finish, fresh_dir, skip_without  # noqa: E402,E501

LOST = ("definitely_lost", "indirectly_lost", "possibly_lost")
SUMMARY = re.compile(r"==\d+== +(definitely|indirectly|possibly) lost: ([\d,]+) bytes in "
                     r"([\d,]+) blocks")
DROPPED = """import ctypes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc(1000)
print("dropped")
"""


def memcheck(argv):
    """memcheck's lost kinds as {kind: (bytes, blocks)}."""
    p = subprocess.run(["valgrind", "--leak-check=full", *argv], capture_output=True,
                       text=True, env=clean_env())
    got = {f"{m.group(1)}_lost": (int(m.group(2).replace(",", "")),
                                  int(m.group(3).replace(",", "")))
           for m in SUMMARY.finditer(p.stderr)}
    check(set(got) == set(LOST), f"memcheck gave a summary of {argv}")
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--memreport", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    skip_without("valgrind")
    fresh_dir(a.workdir)
    script = os.path.join(a.workdir, "dropped.py")
    with open(script, "w") as f:
        f.write(DROPPED)
    for name, argv in [("pass", [sys.executable, "-c", "pass"]),
                       ("dropped", [sys.executable, script])]:
        db = os.path.join(a.workdir, f"{name}.db")
        plain = subprocess.run(argv, capture_output=True, env=clean_env())
        traced = subprocess.run(argv, capture_output=True,
                                env=clean_env(OUTPUT=db) | {"LD_PRELOAD": a.lib})
        check(traced.returncode == plain.returncode == 0, f"{name}: exit status as untraced")
        check(traced.stdout == plain.stdout, f"{name}: output as untraced")
        meta = capture_meta(db)
        check(meta.get("leak_scan") == "complete",
              f"{name}: scan complete ({meta.get('leak_scan_why')})")
        leaks = subprocess.run([a.memreport, "leaks", db, "--json"], capture_output=True,
                               text=True)
        kinds = json.loads(leaks.stdout).get("kinds", {}) if leaks.returncode == 0 else {}
        ours = {k: (kinds.get(k, {}).get("bytes"), kinds.get(k, {}).get("blocks")) for k in LOST}
        theirs = memcheck(argv)
        check(ours == theirs, f"{name}: lost kinds {ours} as memcheck's {theirs}")
    check(theirs["definitely_lost"] == (1000, 1), "memcheck: the dropped block definitely lost")
    finish()


if __name__ == "__main__":
    main()
