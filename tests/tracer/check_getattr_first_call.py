#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A thread whose first heap call is inside pthread_getattr_np, the initial thread and a new
one (getattr_first_call.c, what every Rust program does): traced, the program ends as
untraced (it hung in the tracer's first hook of the thread), under LD_PRELOAD and the
launcher, in each unwinding mode; each thread's leaked block is in the capture, of its size,
at its function. A run that does not end within TIMEOUT s is killed and the test fails.

Usage: check_getattr_first_call.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, finish, fresh_dir  # noqa: E402

TIMEOUT = 60
EXPECTED = "main stack known\nthread stack known\n"


def run(argv, env):
    """The finished run, or None when it did not end within TIMEOUT s (killed)."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None


def leaks(memreport, db):
    r = subprocess.run([memreport, "leaks", "--json", db], capture_output=True, text=True,
                       timeout=TIMEOUT)
    if r.returncode != 0:
        return {}
    return {g["bytes"]: (g["blocks"], [f.get("function") for f in g["stack"]])
            for g in json.loads(r.stdout)["groups"]}


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    lib = os.path.join(os.path.dirname(launcher), "libmemtrace.so")
    fresh_dir(work)
    native = run([prog], clean_env())
    if not check(native is not None and native.returncode == 0 and native.stdout == EXPECTED,
                 f"untraced: {native and (native.returncode, native.stdout)!r}"):
        finish()
    for unwind in ("auto", "fp", "libunwind"):
        pre = os.path.join(work, f"pre_{unwind}.db")
        via = os.path.join(work, f"launcher_{unwind}.db")
        runs = [("LD_PRELOAD", [prog], dict(clean_env(OUTPUT=pre, UNWIND=unwind),
                                            LD_PRELOAD=lib), pre),
                ("launcher", [launcher, "-o", via, "--", prog], clean_env(UNWIND=unwind), via)]
        for label, argv, env, db in runs:
            label = f"{label}, MEMTRACE_UNWIND={unwind}"
            r = run(argv, env)
            if not check(r is not None, f"{label}: ended within {TIMEOUT} s (killed)"):
                finish()  # the others would hang as well
            check(r.returncode == 0 and r.stdout == native.stdout,
                  f"{label}: exit 0 and the output of untraced ({r.returncode}: {r.stdout!r} "
                  f"{r.stderr.strip()!r})")
            found = leaks(memreport, db)
            for size, fn, caller in ((4001, "leak_in_main", "main"),
                                     (4002, "leak_in_thread", "thread_main")):
                blocks, stack = found.get(size, (0, []))
                check(blocks == 1 and stack[:2] == [fn, caller],
                      f"{label}: the {size}-byte leak, once, at {fn} called by {caller} "
                      f"({blocks}, {stack})")
    finish()


if __name__ == "__main__":
    main()
