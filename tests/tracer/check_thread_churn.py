#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""4000 threads, one after another (thread_churn.c): the tracer's mappings stay flat, and
the capture still holds every thread with its own name and every leak exactly.

Usage: check_thread_churn.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures, fresh_dir, traced  # noqa: E402

THREADS = 4000
# Without reuse each exited thread kept its record and stack cache (about 600 KiB of
# mappings): 3500 threads after the warm rounds grew VmSize by 2 GiB.
MAX_GROWTH_KB = 256 * 1024


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    db = os.path.join(work, "churn.db")
    r = traced(launcher, db, [prog])
    if not check(r.returncode == 0, f"the program ran ({r.returncode}: {r.stderr.strip()})"):
        return
    warm, end = (int(x) for x in r.stdout.split()[1:3])
    check(end - warm < MAX_GROWTH_KB,
          f"VmSize grew {end - warm} kB over {THREADS * 7 // 8} threads (< {MAX_GROWTH_KB})")

    s = json.loads(subprocess.run([memreport, "summary", "--json", db], capture_output=True,
                                  text=True, check=True).stdout)
    check(s["status"] == "complete", f"capture complete ({s['status']})")
    leaked, blocks = s["leaked_bytes"], s["leaked_allocations"]
    want = sum(5000 + i for i in range(0, THREADS, 10))
    check((leaked, blocks) == (want, THREADS // 10),
          f"leaks exact: {blocks} blocks, {leaked} B (want {THREADS // 10}, {want})")

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    names = [n for (n,) in con.execute("SELECT name FROM thread WHERE name LIKE 'w%'")]
    check(sorted(names) == sorted(f"w{i}" for i in range(THREADS)),
          f"every worker has its own row and final name ({len(names)} rows, "
          f"{len(set(names))} names)")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
