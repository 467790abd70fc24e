#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program that sandboxes itself with a seccomp filter that kills the process at any call
it does not list (sandboxed.c): traced, it must run as untraced (its output, status 4), and
its capture hold what came before the filter: the tracer's writer makes calls no sandbox
lists. The capture is finished before the filter is set, complete, with the 1000 blocks
made before it and the 4242 B one kept; the program goes on untraced. A filter refused
(`refused`): the recording goes on into a new capture, with the 100 000 blocks made after.
Before, the writer's first call under the filter killed the program with SIGSYS (status
159), its capture truncated.

Usage: check_sandboxed.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import glob
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import bail, check, clean_env, finish, fresh_dir, memreport_sql  # noqa: E402


def blocks(memreport, cap):
    return memreport_sql(memreport, cap, "SELECT count(*) FROM events WHERE kind = 'malloc'"
                         " AND size BETWEEN 500 AND 599")


def main():
    if len(sys.argv) != 5:
        bail(__doc__)
    launcher, memreport, prog, work = sys.argv[1:]
    fresh_dir(work)
    for how in ("set", "refused"):
        argv = [prog] + (["refused"] if how == "refused" else [])
        plain = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        cap = os.path.join(work, f"{how}.db")
        r = subprocess.run([launcher, "-o", cap, "--", *argv], capture_output=True, text=True,
                           env=clean_env(), timeout=120)
        check((r.returncode, r.stdout) == (plain.returncode, plain.stdout) and
              plain.returncode == 4,
              f"{how}: status and output as untraced ({r.returncode}, {r.stdout!r}; "
              f"untraced {plain.returncode}, {plain.stdout!r}; {r.stderr!r})")
        status = memreport_sql(memreport, cap,
                               "SELECT value FROM meta WHERE key = 'capture_status'")
        if not check(status == ["complete"], f"{how}: the capture complete ({status})"):
            continue
        check(blocks(memreport, cap) == ["1000"],
              f"{how}: the blocks made before the filter ({blocks(memreport, cap)})")
        kept = memreport_sql(memreport, cap, "SELECT count(*) FROM events WHERE kind = 'malloc'"
                   " AND size = 4242")
        check(kept == ["1"], f"{how}: the block kept ({kept})")
        after = sorted(glob.glob(os.path.join(work, f"{how}.*.db")))
        if how == "set":
            check(after == [], f"set: no capture after the filter ({after})")
        else:
            got = [blocks(memreport, a) for a in after]
            check(got == [["100000"]], f"refused: a new capture with the blocks after ({got})")
    finish()


if __name__ == "__main__":
    main()
