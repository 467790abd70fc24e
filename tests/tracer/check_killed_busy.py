#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A busy program SIGKILLed (killed_busy.c: 2 threads allocating without pause): its exit
watcher finishes the capture from where the writer stopped (preload/writer/writer.c,
mt_writer_finish_orphaned). Each finished capture is complete, says it ended unseen, and
holds every block the threads counted (and at most one more per thread: made, not yet
counted) and their frees.
- random: killed at a random moment, on one CPU with the tracer's writer, so the writer is
  always mid-drain, holding its lock. One killed holding a lock of SQLite's own leaves the
  capture truncated, and named so: none in 40 kills here, so at most 1 of the KILLS runs may
  end so. Before, the watcher gave up whenever the writer held its lock: 4 or 5 of 5 runs
  ended truncated; then whenever it was inside SQLite (about 1 kill in 8) or its heap's lock
  was held (1 in 60).
- new_stacks: as random, each block from a call stack never seen before (killed_busy.c
  new-stacks), so a thread is often killed inside the tracer's callsite table, holding its
  lock, which the watcher then takes over (mt_trie_take_over). Before, it waited for that
  lock until its alarm: 4 to 5 of 5 captures stayed truncated (and Python's multiprocessing
  workers, forked off a large parent and ended by SIGTERM, lost theirs nearly always).
- in_sqlite: killed while its writer is inside SQLite, in a write of the capture that strace
  holds for two seconds (attached to the program's threads once they run, its delay
  injection on their 3rd and 4th pwrite64, which only the writer makes; the exit watcher, a
  process of its own, is not traced): the connection dies half-way through a statement, with
  rows of events not yet committed. The watcher takes the capture back to its last commit
  with a connection of its own and writes again every event since (rewind_to_commit). Every
  run must finish: before, each stayed truncated at its last commit. Skipped (77) without
  strace (Debian: strace).

Usage: check_killed_busy.py random|new_stacks|in_sqlite MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import glob
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import (bail, check, children, clean_env, exit_watchers, finish,  # noqa: E402
                    fresh_dir, memreport_sql, wait_for_exit_watchers, wait_readable)

THREADS = 2
KILLS = {"random": 5, "new_stacks": 5, "in_sqlite": 3}
SIZE = 4000  # killed_busy.c: blocks of SIZE + 0..15 B
PWRITE64 = {"x86_64": 18, "aarch64": 68}


def one_cpu():
    cpu = min(os.sched_getaffinity(0))
    return lambda: os.sched_setaffinity(0, {cpu})


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


def kill_at_random(pid, cap):
    if not wait_for_exit_watchers(cap):
        bail("no exit watcher")
    time.sleep(random.uniform(0.3, 1.5))
    os.kill(pid, signal.SIGKILL)
    return None


def kill_in_sqlite(pid, i):
    """Kills pid once strace holds its writer in a write; strace's Popen."""
    nr = PWRITE64[os.uname().machine]
    tasks = [arg for t in os.listdir(f"/proc/{pid}/task") for arg in ("-p", t)]
    tracer = subprocess.Popen([shutil.which("strace"), "-qq", "-o", "/dev/null", "-e",
                               "trace=pwrite64", "-e",
                               "inject=pwrite64:delay_enter=2000000:when=3..4", *tasks],
                              stderr=subprocess.PIPE, text=True)
    children.append(tracer)
    for _ in range(20000):  # the writer commits every 10 ms: its 3rd write comes soon
        if task_in_syscall(pid, nr):
            os.kill(pid, signal.SIGKILL)
            return tracer
        time.sleep(0.001)
    bail(f"run {i}: the writer was never seen inside a write")


def one_run(mode, launcher, memreport, prog, work, i):
    """True when the capture was finished (and then checked), False when left truncated."""
    cap = os.path.join(work, f"busy-{i}.db")
    counts_file = os.path.join(work, f"counts-{i}")
    extra = ["new-stacks"] if mode == "new_stacks" else []
    p = subprocess.Popen([launcher, "-o", cap, "--", prog, str(THREADS), counts_file, *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=clean_env(), preexec_fn=one_cpu() if mode != "in_sqlite" else None)
    children.append(p)
    wait_readable(p.stdout.fileno(), "the program's 'ready'")
    ready = p.stdout.readline().split()
    if len(ready) != 2 or ready[0] != "ready":
        bail(f"the program did not start ({ready})")
    pid = int(ready[1])
    tracer = kill_in_sqlite(pid, i) if mode == "in_sqlite" else kill_at_random(pid, cap)
    _, err = p.communicate(timeout=120)
    if tracer:
        tracer.communicate(timeout=60)
    with open(counts_file, "rb") as f:
        counted = sum(struct.unpack(f"<{THREADS}Q", f.read(8 * THREADS)))
    for _ in range(600):  # the launcher waits for the watcher; be sure it is gone
        if not exit_watchers(cap):
            break
        time.sleep(0.05)
    status = memreport_sql(memreport, cap, "SELECT value FROM meta WHERE key = 'capture_status'")
    told = [ln for ln in err.splitlines() if cap in ln or os.path.relpath(cap) in ln]
    if status == ["recording"]:
        check(len(told) == 1 and "truncated" in told[0],
              f"run {i}: a truncated capture is named so ({err!r})")
        print(f"run {i}: truncated; {counted} blocks counted")
        return False
    check(status == ["complete"], f"run {i}: complete ({status})")
    check(len(told) == 1 and told[0].startswith("memtrace: capture written to "),
          f"run {i}: the launcher names it written ({err!r})")
    unseen = memreport_sql(memreport, cap, "SELECT value FROM meta WHERE key = 'ended_unseen'")
    check(unseen == ["1"], f"run {i}: it says it ended unseen")
    got = memreport_sql(memreport, cap, "SELECT count(*) FROM events WHERE kind = 'malloc'"
                        f" AND size BETWEEN {SIZE} AND {SIZE + 15}")
    made = int(got[0]) if got else -1
    check(counted <= made <= counted + THREADS,
          f"run {i}: every block counted is in it ({made} recorded, {counted} counted)")
    frees = memreport_sql(memreport, cap, "SELECT count(*) FROM events WHERE kind = 'free'")
    check(frees and made - THREADS <= int(frees[0]) <= made + 64,
          f"run {i}: its frees with them ({frees}, {made} blocks)")
    print(f"run {i}: complete, {made} blocks recorded, {counted} counted")
    return True


def main():
    if len(sys.argv) != 6 or sys.argv[1] not in KILLS:
        bail(__doc__)
    mode, launcher, memreport, prog, work = sys.argv[1:]
    if mode == "in_sqlite" and not shutil.which("strace"):
        print("skip: no strace (Debian: strace)")
        sys.exit(77)
    if mode == "in_sqlite" and os.uname().machine not in PWRITE64:
        print(f"skip: pwrite64's number on {os.uname().machine} is not known here")
        sys.exit(77)
    fresh_dir(work)
    kills = KILLS[mode]
    finished = sum(one_run(mode, launcher, memreport, prog, work, i) for i in range(kills))
    least = kills if mode == "in_sqlite" else kills - 1
    check(finished >= least, f"{finished} of {kills} captures finished by the watcher")
    finish()


if __name__ == "__main__":
    main()
