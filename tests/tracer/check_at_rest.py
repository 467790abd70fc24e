#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program at rest (at_rest.c) leaves its capture alone: while it sleeps, the tracer
writes next to nothing (a sample and a commit every 10 ms wrote 1.9 MB a second to the
capture's log for `sleep`), and the RSS series keeps its shape: a sample when RSS changed,
the last one of the old value just before it, one at the end. The capture is complete,
with the program's two blocks, each allocated and freed once.

Usage: check_at_rest.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, failures  # noqa: E402

SAMPLE_MS = 10  # MEMTRACE_SAMPLE_MS's default


def written_bytes(pid):
    with open(f"/proc/{pid}/io") as f:
        return int(next(ln for ln in f if ln.startswith("wchar:")).split()[1])


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    db = os.path.join(work, "at_rest.db")
    p = subprocess.Popen([launcher, "-o", db, "--", prog], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=clean_env())
    check(p.stdout.readline() == "resting\n", "the program rests")
    pid = int(open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()[0])
    time.sleep(0.2)
    before = written_bytes(pid)
    time.sleep(0.6)
    during = written_bytes(pid) - before
    out, _ = p.communicate(timeout=60)
    check(p.returncode == 0 and out == "awake\n", f"status 0, its output ({p.returncode})")
    # 60 commits of a few pages each would be hundreds of KB.
    check(during < 64 << 10, f"{during} bytes written in 0.6 s of rest")
    s = json.loads(subprocess.run([memreport, "summary", db, "--json"], capture_output=True,
                                  text=True).stdout)
    check(s["status"] == "complete", f"complete ({s['status']})")
    rss = sqlite3.connect(db).execute(
        "SELECT c.ts, c.value FROM counter c JOIN counter_track t ON t.id = c.track "
        "WHERE t.name = 'RSS' ORDER BY c.ts").fetchall()
    ends = s["duration_ns"]
    resting = [ts for ts, _ in rss if ts < ends - 400_000_000]
    check(len(resting) < 20, f"{len(resting)} RSS samples in the first second (at rest: "
          f"one every {SAMPLE_MS} ms would be 100)")
    # The 4 MiB touched after the rest: the sample before the rise holds the old value and
    # was taken at most a few sample periods before it, not at the rest's start.
    rise = next((i for i in range(1, len(rss)) if rss[i][1] >= rss[i - 1][1] + (1 << 20)), 0)
    gap = rss[rise][0] - rss[rise - 1][0] if rise else None
    check(rise and gap <= 3 * SAMPLE_MS * 1_000_000,
          f"the rise of the 4 MiB: {gap} ns after the last sample of the old value")
    check(rss and rss[-1][0] >= ends - 2 * SAMPLE_MS * 1_000_000, "a sample at the end")
    mine = subprocess.run([memreport, "sql", db, "SELECT size, count(*), count(freed_ts) FROM "
                           f"allocations WHERE size IN (100, {4 << 20}) GROUP BY size", "--csv"],
                          capture_output=True, text=True).stdout.split()
    check(mine == ["size,count(*),count(freed_ts)", "100,1,1", f"{4 << 20},1,1"],
          f"its two blocks, each allocated and freed once ({mine})")
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main()
