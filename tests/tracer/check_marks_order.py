#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A mark keeps its place among the heap calls around it (marks_order.c): the time of the
i-th malloc(24) lies between the times of the i-th and the (i+1)-th mark "m", for every i.
Marks and events are stamped on one clock and converted alike; with two clocks, calibration
error misplaced some (e2e.ranges failed now and then).

Usage: check_marks_order.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures, fresh_dir, traced  # noqa: E402


def query(memreport, db, sql):
    r = subprocess.run([memreport, "sql", db, sql, "--json"], capture_output=True, text=True,
                       check=True)
    return json.loads(r.stdout)


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    db = os.path.join(work, "marks.db")
    r = traced(launcher, db, [prog])
    if not check(r.returncode == 0 and r.stdout.startswith("rounds "),
                 f"the program ran ({r.returncode}: {r.stdout!r} {r.stderr.strip()})"):
        return
    rounds = int(r.stdout.split()[1])
    marks = [row["ts_begin"] for row in
             query(memreport, db, "select ts_begin from mark where name = 'm' order by rowid")]
    allocs = [row["ts"] for row in
              query(memreport, db, "select ts from allocations where size = 24 order by seq")]
    check(len(marks) == rounds + 1, f"{rounds + 1} marks ({len(marks)})")
    check(len(allocs) == rounds, f"{rounds} allocations ({len(allocs)})")
    if len(marks) != rounds + 1 or len(allocs) != rounds:
        return
    check(marks == sorted(marks), "the marks in the order they were made")
    misplaced = [i for i in range(rounds) if not marks[i] <= allocs[i] <= marks[i + 1]]
    check(not misplaced, f"every allocation between its two marks ({len(misplaced)} not, "
          f"first: {[(marks[i], allocs[i], marks[i + 1]) for i in misplaced[:3]]})")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
