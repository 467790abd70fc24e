#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A thread whose first heap call was in a vfork child keeps its record until it is gone
(vfork_first_call.c): every malloc(222) of the threads started meanwhile and every one of
its own malloc(111) is in the capture.

Usage: check_vfork_first_call.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures, fresh_dir, traced  # noqa: E402

B_CALLS = 10 * 10000


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    db = os.path.join(work, "vfork.db")
    r = traced(launcher, db, [prog])
    if not check(r.returncode == 0 and r.stdout.startswith("a_calls "),
                 f"the program ran ({r.returncode}: {r.stdout!r} {r.stderr.strip()})"):
        return
    a_calls = int(r.stdout.split()[1])
    s = json.loads(subprocess.run([memreport, "stats", "--json", db], capture_output=True,
                                  text=True, check=True).stdout)
    sizes = {b["min"]: b["count"] for b in s["sizes"]}
    check(sizes.get(128) == B_CALLS, f"every malloc(222) recorded ({sizes.get(128)} of {B_CALLS})")
    check(sizes.get(64) == a_calls, f"every malloc(111) recorded ({sizes.get(64)} of {a_calls})")
    check(0 not in sizes, f"no event of size 0 ({sizes.get(0)})")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
