#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tracer never takes a descriptor number the program's next open() would get
(lowest_fd.c): 300,000 opens while the writer samples memory every ms all get the lowest
free number, as untraced. (The writer opened /proc/self/statm and /proc/self/stat for each
sample: 640 opens in a million got another number.) The program starts opening once the
tracer's start-up is behind it (two commits after its first event): the writer opens the
capture's files and reads each new thread's name once, on its own thread.

Usage: check_lowest_fd.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import (bail, check, children, clean_env, finish, fresh_dir,  # noqa: E402
                    wait_for_commit_after_now, wait_readable)

OPENS = 300000


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    cap = os.path.join(work, "opens.db")
    p = subprocess.Popen([launcher, "-o", cap, "--", prog, str(OPENS)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=clean_env(SAMPLE_MS=1))
    children.append(p)
    wait_readable(p.stdout.fileno(), "the program's 'ready'")
    if p.stdout.readline() != "ready\n":
        bail("the program did not start")
    wait_for_commit_after_now(memreport, cap)
    out, err = p.communicate("go\n", timeout=600)
    check(p.returncode == 0, f"the program ran ({p.returncode}: {err.strip()})")
    check(out == f"0 of {OPENS} opens got another number\n", f"every open got the lowest "
          f"free number ({out.strip()})")
    finish()


if __name__ == "__main__":
    main()
