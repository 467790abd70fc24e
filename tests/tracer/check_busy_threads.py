#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Threads that allocate without pause (busy_threads.c), more of them than the one CPU the
program is given, so the writer never empties its queue:
- kill: 4 threads, SIGKILLed 1.5 s after all are busy; memreport reads the capture, which
  holds events and the block made as they all were. (The writer committed only once its
  queue was empty: nothing in 8 s, the capture read 0 events.) Its exit watcher
  (preload/exit_watch.h) finishes it (complete, ended_unseen, named written) unless the
  writer died holding a lock (then truncated, and named so; check_killed_busy.py counts).
- fork: 2 threads; the program forks 20 times and ends within DEADLINE s (untraced: well
  under 1 s), and every capture, the parent's and each child's, is complete and readable.
  (Each fork waited for the writer's lock until its queue was empty: 2 forks in 120 s.)

Usage: check_busy_threads.py kill|fork MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import glob
import json
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import (bail, check, children, clean_env, finish, fresh_dir,  # noqa: E402
                    wait_readable)

DEADLINE = 60  # s: only a bound for forks that never return
MARK_SIZE = 123457  # busy_threads.c
LOAD_S = 1.5  # how long the threads run before the kill
FORKS = 20


def one_cpu():
    """A preexec_fn giving the program (and the tracer's threads in it) one CPU."""
    cpu = min(os.sched_getaffinity(0))
    return lambda: os.sched_setaffinity(0, {cpu})


def summary(memreport, cap):
    r = subprocess.run([memreport, "summary", "--json", cap], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


def case_kill(launcher, memreport, prog, work):
    cap = os.path.join(work, "busy.db")
    p = subprocess.Popen([launcher, "-o", cap, "--", prog, "4"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=clean_env(SYMBOLIZE=0),
                         preexec_fn=one_cpu())
    children.append(p)
    wait_readable(p.stdout.fileno(), "the program's 'ready'")
    ready = p.stdout.readline().split()
    if len(ready) != 2 or ready[0] != "ready":
        bail(f"the program did not start ({ready})")
    time.sleep(LOAD_S)
    os.kill(int(ready[1]), signal.SIGKILL)
    _, err = p.communicate(timeout=DEADLINE)
    s = summary(memreport, cap)
    if not check(s is not None, "memreport reads the capture of the killed program"):
        return
    check(s["events"] > 0, f"the capture holds events ({s['events']})")
    told = [ln for ln in err.splitlines() if cap in ln or os.path.relpath(cap) in ln]
    unseen = subprocess.run([memreport, "sql", cap, "--csv",
                             "SELECT value FROM meta WHERE key = 'ended_unseen'"],
                            capture_output=True, text=True).stdout.split()[1:]
    named = "capture written to" if s["status"] == "complete" else "truncated capture written to"
    check(len(told) == 1 and told[0].startswith(f"memtrace: {named} ")
          and unseen == (["1"] if s["status"] == "complete" else []),
          f"a {s['status']} capture (ended_unseen {unseen}) is named so ({err!r})")
    r = subprocess.run([memreport, "sql", cap, "--csv",
                        f"SELECT count(*) FROM events WHERE size = {MARK_SIZE}"],
                       capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout.split() == ["count(*)", "1"],
          f"the capture holds the block made once all threads were busy "
          f"({r.stdout.split()[1:]})")


def case_fork(launcher, memreport, prog, work):
    cap = os.path.join(work, "fork.db")
    try:
        r = subprocess.run([launcher, "-o", cap, "--", prog, "2", str(FORKS)],
                           capture_output=True, text=True, env=clean_env(SYMBOLIZE=0),
                           preexec_fn=one_cpu(), timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        check(False, f"{FORKS} forks beside 2 busy threads end within {DEADLINE} s")
        return
    check(r.returncode == 0 and r.stdout == f"{FORKS} children ok\n",
          f"the program ran ({r.returncode}: {r.stdout.strip()} {r.stderr.strip()})")
    caps = sorted(glob.glob(os.path.join(work, "fork*.db")))
    check(len(caps) == FORKS + 1, f"a capture for the parent and each child ({len(caps)})")
    bad = []
    for c in caps:
        s = summary(memreport, c)
        if s is None or s["status"] != "complete" or s["allocations"] < 1:
            bad.append((os.path.basename(c), s and s["status"], s and s["allocations"]))
    check(not bad, f"every capture complete, readable, with its allocations ({bad})")


def main():
    mode, launcher, memreport, prog, work = sys.argv[1:6]
    fresh_dir(work)
    {"kill": case_kill, "fork": case_fork}[mode](launcher, memreport, prog, work)
    finish()


if __name__ == "__main__":
    main()
