#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program whose main thread ends with pthread_exit ends, traced, when its last thread
does (main_pthread_exit.c): status 0, its output, a complete capture with the worker's
1000 malloc(300). It never ended before: the tracer's writer thread kept it alive.

Usage: check_main_pthread_exit.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, failures  # noqa: E402

TIMEOUT = 60  # the program takes 0.05 s; a traced one that never ends is killed then


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    db = os.path.join(work, "main_exit.db")
    # Its own process group: the launcher and the program are killed together on a hang.
    p = subprocess.Popen([launcher, "-o", db, "--", prog], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=clean_env(),
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        check(False, f"the traced program ended (still running after {TIMEOUT} s)")
        return
    check(p.returncode == 0 and out == "worker done\n",
          f"status 0 and the worker's output ({p.returncode}, {out!r})")
    s = json.loads(subprocess.run([memreport, "stats", "--json", db], capture_output=True,
                                  text=True, check=True).stdout)
    check(s["status"] == "complete", f"capture complete ({s['status']})")
    worker = [(x["allocations"], x["bytes_allocated"]) for x in s["by_count"]
              if x["site"] == "worker"]
    check(worker == [(1000, 300000)], f"the worker's 1000 malloc(300) ({worker})")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
