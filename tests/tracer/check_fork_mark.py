#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A mark made just before fork is in the parent's capture only (fork_mark.c): the child's
capture has its own mark and not the parent's, and no mark before its start.

Usage: check_fork_mark.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import glob
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures, fresh_dir, traced  # noqa: E402


def marks(memreport, db):
    r = subprocess.run([memreport, "sql", db, "select name, ts_begin from mark", "--json"],
                       capture_output=True, text=True, check=True)
    return {row["name"]: row["ts_begin"] for row in json.loads(r.stdout)}


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    out = os.path.join(work, "caps") + "/"
    r = traced(launcher, out, [prog])
    if not check(r.returncode == 0, f"the program ran ({r.returncode}: {r.stderr.strip()})"):
        return
    caps = sorted(glob.glob(out + "*.db"))
    if not check(len(caps) == 2, f"two captures ({caps})"):
        return
    found = [marks(memreport, db) for db in caps]
    parent = [m for m in found if "parent_only" in m]
    child = [m for m in found if "child_only" in m]
    check(len(parent) == 1 and len(child) == 1 and parent[0] is not child[0],
          f"the parent's mark in one capture, the child's in the other ({found})")
    check(all("parent_only" not in m for m in child), f"not the parent's in the child's ({child})")
    check(all(ts >= 0 for m in found for ts in m.values()), f"no mark before its capture ({found})")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
