#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Children sent SIGTERM by their parent as they end on their own (term_at_exit.c), as
Python's multiprocessing Pool.terminate() does to its workers: every child's capture must be
complete, with its 1000 blocks. The tracer finishes a capture at the end (exit, _exit) with
the signals that others send held, and the exit watcher finishes it where the signal came
first. Before, the signal cut the finish short after the watcher had been stopped: most
such captures stayed truncated (and Python's pool workers lost theirs).

Usage: check_term_at_exit.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import glob
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import bail, check, clean_env, finish, fresh_dir, memreport_sql  # noqa: E402

CHILDREN = 6


def main():
    if len(sys.argv) != 5:
        bail(__doc__)
    launcher, memreport, prog, work = sys.argv[1:]
    fresh_dir(work)
    for how in ("exit", "_exit"):
        cap = os.path.join(work, f"{how}.db")
        argv = [prog, str(CHILDREN)] + (["_exit"] if how == "_exit" else [])
        r = subprocess.run([launcher, "-o", cap, "--", *argv], capture_output=True, text=True,
                           env=clean_env(), timeout=120)
        ends = r.stdout.splitlines()
        check(r.returncode == 0 and len(ends) == CHILDREN,
              f"{how}: the parent ends well ({r.returncode}, {r.stdout!r}, {r.stderr!r})")
        check("truncated" not in r.stderr, f"{how}: no capture truncated ({r.stderr!r})")
        kids = sorted(glob.glob(os.path.join(work, f"{how}.*.db")))
        check(len(kids) == CHILDREN, f"{how}: a capture per child ({kids})")
        for kid in kids:
            name = os.path.basename(kid)
            status = memreport_sql(memreport, kid,
                                   "SELECT value FROM meta WHERE key = 'capture_status'")
            if not check(status == ["complete"], f"{how}: {name} complete ({status})"):
                continue
            made = memreport_sql(memreport, kid, "SELECT count(*) FROM events WHERE kind ="
                                 " 'malloc' AND size BETWEEN 500 AND 599")
            check(made == ["1000"], f"{how}: {name} holds its 1000 blocks ({made})")
    finish()


if __name__ == "__main__":
    main()
