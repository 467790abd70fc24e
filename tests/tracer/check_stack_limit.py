#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program run with a small stack limit (ulimit -s 32 KiB: its main thread's stack) runs
traced as untraced and leaves a complete capture (file_limit.c: allocations, a line, exit
3). The tracer's start (a 16 KiB buffer for the command line, in the constructor) and its
end (SQLite, libdw at exit) ran on the program's main thread and overflowed it: SIGSEGV in
8 of 30 and 9 of 20 runs. 20 runs, under LD_PRELOAD; 10 under the launcher, whose buffers
on the stack overflowed it in every run.

Usage: check_stack_limit.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import resource
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, finish, fresh_dir  # noqa: E402

STACK = 32 * 1024
RUNS = 20


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    lib = os.path.join(os.path.dirname(launcher), "libmemtrace.so")
    fresh_dir(work)

    def small_stack():
        resource.setrlimit(resource.RLIMIT_STACK, (STACK, resource.getrlimit(
            resource.RLIMIT_STACK)[1]))
    argv = [prog, "100000"]
    native = subprocess.run(argv, capture_output=True, text=True, preexec_fn=small_stack,
                            timeout=120)
    check(native.returncode == 3, f"untraced: exit 3 ({native.returncode})")
    bad = []
    for run in range(RUNS):
        cap = os.path.join(work, f"{run}.db")
        env = dict(clean_env(OUTPUT=cap), LD_PRELOAD=lib)
        r = subprocess.run(argv, capture_output=True, text=True, preexec_fn=small_stack,
                           env=env, timeout=120)
        s = subprocess.run([memreport, "summary", "--json", cap], capture_output=True,
                           text=True, timeout=120)
        status = json.loads(s.stdout)["status"] if s.returncode == 0 else None
        if r.returncode != 3 or r.stdout != native.stdout or status != "complete":
            bad.append((run, r.returncode, status))
    check(not bad, f"{RUNS} traced runs exit 3 with the same output and a complete capture; "
          f"not: {bad}")
    # The launcher, which has the limit too (its buffers on the stack: SIGSEGV in every run).
    bad = []
    for run in range(RUNS // 2):
        cap = os.path.join(work, f"launcher{run}.db")
        r = subprocess.run([launcher, "-o", cap, "--"] + argv, capture_output=True, text=True,
                           preexec_fn=small_stack, env=clean_env(), timeout=120)
        if r.returncode != 3 or r.stdout != native.stdout or not os.path.exists(cap):
            bad.append((run, r.returncode))
    check(not bad, f"{RUNS // 2} runs under the launcher exit 3 with the same output and a "
          f"capture; not: {bad}")
    finish()


if __name__ == "__main__":
    main()
