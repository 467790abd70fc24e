#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A busy program SIGKILLed at a random moment (killed_busy.c: 2 threads allocating without
pause, on one CPU with the tracer's writer, so the writer is always mid-drain, holding its
lock): its exit watcher finishes the capture from where the writer stopped (preload/writer/
writer.c, mt_writer_finish_orphaned). Each finished capture is complete, says it ended
unseen, and holds every block the threads counted (and at most one more per thread: made,
not yet counted). A writer stopped inside SQLite is gone back on (check_killed_in_sqlite.py
holds it there); one killed holding a lock of SQLite's own leaves the capture truncated, and
named so: none in 40 kills here, so at most 1 of the KILLS runs may end so. Before, the
watcher gave up whenever the writer held its lock: 4 or 5 of 5 runs ended truncated; then
whenever it was inside SQLite (about 1 kill in 8) or its heap's lock was held (1 in 60).

Usage: check_killed_busy.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import os
import random
import signal
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import (bail, check, children, clean_env, exit_watchers, finish,  # noqa: E402
                    fresh_dir, wait_for_exit_watchers, wait_readable)

THREADS = 2
KILLS = 5
SIZE = 4000  # killed_busy.c: blocks of SIZE + 0..15 B


def sql(memreport, cap, query):
    r = subprocess.run([memreport, "sql", cap, "--csv", query], capture_output=True, text=True)
    return r.stdout.split()[1:]


def one_cpu():
    cpu = min(os.sched_getaffinity(0))
    return lambda: os.sched_setaffinity(0, {cpu})


def one_run(launcher, memreport, prog, work, i):
    """True when the capture was finished (and then checked), False when left truncated."""
    cap = os.path.join(work, f"busy-{i}.db")
    counts_file = os.path.join(work, f"counts-{i}")
    p = subprocess.Popen([launcher, "-o", cap, "--", prog, str(THREADS), counts_file],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=clean_env(), preexec_fn=one_cpu())
    children.append(p)
    wait_readable(p.stdout.fileno(), "the program's 'ready'")
    ready = p.stdout.readline().split()
    if len(ready) != 2 or ready[0] != "ready":
        bail(f"the program did not start ({ready})")
    if not wait_for_exit_watchers(cap):
        bail("no exit watcher")
    time.sleep(random.uniform(0.3, 1.5))
    os.kill(int(ready[1]), signal.SIGKILL)
    _, err = p.communicate(timeout=120)
    with open(counts_file, "rb") as f:
        counted = sum(struct.unpack(f"<{THREADS}Q", f.read(8 * THREADS)))
    for _ in range(600):  # the launcher waits for the watcher; be sure it is gone
        if not exit_watchers(cap):
            break
        time.sleep(0.05)
    status = sql(memreport, cap, "SELECT value FROM meta WHERE key = 'capture_status'")
    told = [ln for ln in err.splitlines() if cap in ln or os.path.relpath(cap) in ln]
    if status == ["recording"]:
        check(len(told) == 1 and "truncated" in told[0],
              f"run {i}: a truncated capture is named so ({err!r})")
        print(f"run {i}: truncated (the writer died holding a lock); {counted} blocks counted")
        return False
    check(status == ["complete"], f"run {i}: complete ({status})")
    check(len(told) == 1 and told[0].startswith("memtrace: capture written to "),
          f"run {i}: the launcher names it written ({err!r})")
    check(sql(memreport, cap, "SELECT value FROM meta WHERE key = 'ended_unseen'") == ["1"],
          f"run {i}: it says it ended unseen")
    got = sql(memreport, cap, "SELECT count(*) FROM events WHERE kind = 'malloc' AND size "
              f"BETWEEN {SIZE} AND {SIZE + 15}")
    made = int(got[0]) if got else -1
    check(counted <= made <= counted + THREADS,
          f"run {i}: every block counted is in it ({made} recorded, {counted} counted)")
    print(f"run {i}: complete, {made} blocks recorded, {counted} counted")
    return True


def main():
    if len(sys.argv) != 5:
        bail(__doc__)
    launcher, memreport, prog, work = sys.argv[1:]
    fresh_dir(work)
    finished = sum(one_run(launcher, memreport, prog, work, i) for i in range(KILLS))
    check(finished >= KILLS - 1, f"{finished} of {KILLS} captures finished by the watcher")
    finish()


if __name__ == "__main__":
    main()
