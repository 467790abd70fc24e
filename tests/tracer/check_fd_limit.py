#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program that opens files up to its descriptor limit (RLIMIT_NOFILE) gets as many traced
as untraced (fd_limit.c): the tracer's own descriptors (the capture, its -wal, the /proc files
it samples, libunwind's pipe) sit above the soft limit where the hard limit leaves room, at
numbers the program is never given; the program got 6 fewer before. Where the hard limit is
the soft one, they stay under it: the program runs, with fewer. Its capture is complete.

Usage: check_fd_limit.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import resource
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, finish, fresh_dir  # noqa: E402


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    for soft, hard_limit in ((64, 4096), (100, 1024), (64, 64)):
        if hard != resource.RLIM_INFINITY and hard_limit > hard:
            continue  # cannot be set here

        def limited():
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard_limit))
        label = f"soft {soft}, hard {hard_limit}"
        native = subprocess.run([prog], capture_output=True, text=True, preexec_fn=limited,
                                timeout=120)
        cap = os.path.join(work, f"{soft}-{hard_limit}.db")
        r = subprocess.run([launcher, "-o", cap, "--", prog], capture_output=True, text=True,
                           preexec_fn=limited, env=clean_env(SYMBOLIZE=0), timeout=120)
        check(native.returncode == 0 and r.returncode == 0,
              f"{label}: exit 0 untraced and traced ({native.returncode}, {r.returncode}: "
              f"{r.stderr.strip()})")
        if soft < hard_limit:
            check(r.stdout == native.stdout, f"{label}: as many descriptors traced as "
                  f"untraced: {r.stdout.strip()!r}, {native.stdout.strip()!r}")
        s = subprocess.run([memreport, "summary", "--json", cap], capture_output=True,
                           text=True, timeout=120)
        got = json.loads(s.stdout)["status"] if s.returncode == 0 else s.stderr.strip()
        check(got == "complete", f"{label}: the capture is complete ({got})")
    finish()


if __name__ == "__main__":
    main()
