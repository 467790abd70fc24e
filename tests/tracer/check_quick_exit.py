#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program that ends by a raw exit_group a moment after it starts (quick_exit.c), with the
launcher, the program and the tracer's tasks on one CPU: the launcher reaps the program
before the exit watcher (preload/writer/exit_watch.c) has first run. The watcher must still
finish every capture: complete, every heap call in it (100 blocks freed, the 4242 B one
leaked), named written by the launcher. Before the watcher's pidfd was opened while the
program waited for it, a watcher first run after the reap found no process to watch and
ended: 13 of 30 such captures stayed truncated, with no event.

Usage: check_quick_exit.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import bail, check, clean_env, finish, fresh_dir, memreport_sql  # noqa: E402

RUNS = 20


def main():
    if len(sys.argv) != 5:
        bail(__doc__)
    launcher, memreport, prog, work = sys.argv[1:]
    fresh_dir(work)
    cpu = min(os.sched_getaffinity(0))
    for i in range(RUNS):
        cap = os.path.join(work, f"quick-{i}.db")
        r = subprocess.run([launcher, "-o", cap, "--", prog], capture_output=True, text=True,
                           env=clean_env(), timeout=120,
                           preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
        check((r.returncode, r.stdout) == (7, "done\n"),
              f"run {i}: the program's status and output ({r.returncode}, {r.stdout!r})")
        told = [ln for ln in r.stderr.splitlines() if cap in ln or os.path.relpath(cap) in ln]
        check(len(told) == 1 and told[0].startswith("memtrace: capture written to "),
              f"run {i}: the launcher names it written ({r.stderr!r})")
        status = memreport_sql(memreport, cap,
                               "SELECT value FROM meta WHERE key = 'capture_status'")
        if not check(status == ["complete"], f"run {i}: complete ({status})"):
            continue
        check(memreport_sql(memreport, cap, "SELECT count(*) FROM events WHERE kind = 'malloc'"
                  " AND size BETWEEN 300 AND 309") == ["100"],
              f"run {i}: the 100 blocks freed")
        lk = subprocess.run([memreport, "leaks", "--json", cap], capture_output=True, text=True)
        groups = json.loads(lk.stdout)["groups"] if lk.returncode == 0 else []
        check([(g["bytes"], g["blocks"]) for g in groups if g["bytes"] == 4242] == [(4242, 1)],
              f"run {i}: the block kept is its leak ({lk.stdout[:200]!r} {lk.stderr!r})")
    finish()


if __name__ == "__main__":
    main()
