#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A busy program (killed_busy.c: 2 threads allocating without pause) SIGKILLed while its
writer thread is inside SQLite, in a write of the capture that strace holds for two seconds
(attached to the program's threads once they run, its delay injection on their 3rd and 4th
pwrite64, which only the writer makes; the exit watcher, a process of its own, is not
traced): the connection dies half-way through a statement, with rows of events not yet
committed. The exit watcher takes the capture back to its last commit with a connection of
its own and writes again every event since (preload/writer/writer.c, rewind_to_commit): the
capture is complete, says it ended unseen, and holds every block the threads counted (and at
most one more per thread). Before, such a capture stayed truncated at its last commit: each
of the RUNS runs failed. Skipped (77) without strace (Debian: strace).

Usage: check_killed_in_sqlite.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import glob
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import (bail, check, children, clean_env, exit_watchers, finish,  # noqa: E402
                    fresh_dir, wait_readable)

THREADS = 2
RUNS = 3
SIZE = 4000  # killed_busy.c: blocks of SIZE + 0..15 B
PWRITE64 = {"x86_64": 18, "aarch64": 68}


def sql(memreport, cap, query):
    r = subprocess.run([memreport, "sql", cap, "--csv", query], capture_output=True, text=True)
    return r.stdout.split()[1:]


def task_in_syscall(pid, nr):
    """Whether a thread of process pid is stopped inside system call nr."""
    for path in glob.glob(f"/proc/{pid}/task/*/syscall"):
        try:
            with open(path) as f:
                if f.read().split()[0] == str(nr):
                    return True
        except (OSError, IndexError):
            pass
    return False


def one_run(strace, launcher, memreport, prog, work, i, nr):
    cap = os.path.join(work, f"busy-{i}.db")
    counts_file = os.path.join(work, f"counts-{i}")
    p = subprocess.Popen([launcher, "-o", cap, "--", prog, str(THREADS), counts_file],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=clean_env())
    children.append(p)
    wait_readable(p.stdout.fileno(), "the program's 'ready'")
    ready = p.stdout.readline().split()
    if len(ready) != 2 or ready[0] != "ready":
        bail(f"the program did not start ({ready})")
    pid = int(ready[1])
    tasks = [arg for t in os.listdir(f"/proc/{pid}/task") for arg in ("-p", t)]
    tracer = subprocess.Popen([strace, "-qq", "-o", "/dev/null", "-e", "trace=pwrite64", "-e",
                               "inject=pwrite64:delay_enter=2000000:when=3..4", *tasks],
                              stderr=subprocess.PIPE, text=True)
    children.append(tracer)
    held = False
    for _ in range(20000):  # the writer commits every 10 ms: its 3rd write comes soon
        held = task_in_syscall(pid, nr)
        if held:
            break
        time.sleep(0.001)
    if not held:
        bail(f"run {i}: the writer was never seen inside a write")
    os.kill(pid, signal.SIGKILL)
    _, err = p.communicate(timeout=120)
    tracer.communicate(timeout=60)
    with open(counts_file, "rb") as f:
        counted = sum(struct.unpack(f"<{THREADS}Q", f.read(8 * THREADS)))
    for _ in range(600):  # the launcher waits for the watcher; be sure it is gone
        if not exit_watchers(cap):
            break
        time.sleep(0.05)
    status = sql(memreport, cap, "SELECT value FROM meta WHERE key = 'capture_status'")
    if not check(status == ["complete"], f"run {i}: complete ({status}; {err!r})"):
        return
    check(sql(memreport, cap, "SELECT value FROM meta WHERE key = 'ended_unseen'") == ["1"],
          f"run {i}: it says it ended unseen")
    got = sql(memreport, cap, "SELECT count(*) FROM events WHERE kind = 'malloc' AND size "
              f"BETWEEN {SIZE} AND {SIZE + 15}")
    made = int(got[0]) if got else -1
    check(counted <= made <= counted + THREADS,
          f"run {i}: every block counted is in it ({made} recorded, {counted} counted)")
    frees = sql(memreport, cap, "SELECT count(*) FROM events WHERE kind = 'free'")
    check(frees and made - THREADS <= int(frees[0]) <= made + 64,
          f"run {i}: its frees with them ({frees}, {made} blocks)")


def main():
    if len(sys.argv) != 5:
        bail(__doc__)
    launcher, memreport, prog, work = sys.argv[1:]
    strace = shutil.which("strace")
    if not strace:
        print("skip: no strace (Debian: strace)")
        sys.exit(77)
    nr = PWRITE64.get(os.uname().machine)
    if nr is None:
        print(f"skip: pwrite64's number on {os.uname().machine} is not known here")
        sys.exit(77)
    fresh_dir(work)
    for i in range(RUNS):
        one_run(strace, launcher, memreport, prog, work, i, nr)
    finish()


if __name__ == "__main__":
    main()
