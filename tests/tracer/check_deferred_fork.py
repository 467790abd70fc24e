#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A forked child's capture is made at its first event, not at the fork (a child that execs
at once would leave it empty). It must still be made, and as it would have been at the fork
(deferred_fork.c): before a setuid (as the user who forked: the directory is not nobody's)
or a chroot (the path names another file in the new root), before a seccomp filter that
refuses open (set after PR_SET_NO_NEW_PRIVS, as libseccomp does); at an _exit with nothing
recorded (the process is in the tree, its exit status the program's); with the parent it was
forked by, when that parent has ended before the child's first event; with its start at the
fork, not at its first event 300 ms later; and with the stacks its events name, whole (each
callsite's caller and frame there), not the parent's from before the fork (before_fork). setuid and chroot need root (skipped
otherwise).

Usage: check_deferred_fork.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import sqlite3
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import callsite_rows, capture_meta, check, finish, fresh_dir, traced  # noqa: E402

# mode: (argv after the mode, exit status, allocations in the child's capture)
MODES = {
    "late": ([], 0, 1),
    "exit": ([], 3, 0),
    "orphan": ([], 0, 1),
    "seccomp": ([], 0, 1),
    "setuid": ([], 0, 1),
    "chroot": (["JAIL"], 0, 1),
}


def processes(memreport, out, child):
    """summary --json of the directory, once the child's capture is finished (an orphan's
    ends after the launcher): {pid: process}."""
    for _ in range(500):
        path = os.path.join(out, f"{child}.deferred_fork.db")
        s = subprocess.run([memreport, "summary", "--json", out], capture_output=True,
                           text=True, timeout=120)
        if s.returncode == 0:
            procs = {p["pid"]: p for p in json.loads(s.stdout)["processes"]}
            if child in procs and procs[child]["status"] == "complete":
                return procs
        elif not os.path.exists(path):
            return {}
        time.sleep(0.02)
    return {}


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    os.chmod(work, 0o755)  # not writable by nobody
    jail = os.path.join(work, "jail")
    os.makedirs(jail)
    root = os.geteuid() == 0
    for mode, (args, status, allocations) in MODES.items():
        if mode in ("setuid", "chroot") and not root:
            print(f"SKIP: {mode}: needs root")
            continue
        out = os.path.join(work, mode) + "/"
        r = traced(launcher, out, [prog, mode] + [jail if a == "JAIL" else a for a in args],
                   SYMBOLIZE=0)
        # The orphan may start its capture before the launcher ends: it says so then.
        said = [ln for ln in r.stderr.splitlines() if "capture written" not in ln and
                not (mode == "orphan" and "capture still being written" in ln)]
        check(r.returncode == status and not said,
              f"{mode}: exit {status}, nothing said ({r.returncode}: {said})")
        try:
            fork_ns, child = (int(x) for x in r.stdout.split())
        except ValueError:
            check(False, f"{mode}: the parent printed its fork ({r.stdout!r})")
            continue
        procs = processes(memreport, out, child)
        kid = procs.get(child)
        if not check(kid is not None, f"{mode}: the child ({child}) has a finished capture "
                     f"({sorted(os.listdir(out))})"):
            continue
        parent = procs.get(kid["ppid"])
        check(parent is not None and kid["parent"] == parent["capture"] and
              parent["parent"] is None,
              f"{mode}: the child's parent is the process that forked it: ppid {kid['ppid']}, "
              f"parent {kid['parent']}, processes {sorted(procs)}")
        check(kid["allocations"] == allocations and kid["leaked_bytes"] == 300 * allocations,
              f"{mode}: the child's capture: {allocations} allocation(s) of 300 bytes "
              f"({kid['allocations']}, {kid['leaked_bytes']} bytes leaked)")
        cap = os.path.join(out, kid["capture"])
        # The fork: after the parent's clock read (the child may wait to be scheduled).
        start = int(capture_meta(cap).get("start_realtime_ns", 0))
        check(fork_ns <= start + 1_000_000,
              f"{mode}: the child starts at its fork: {(start - fork_ns) / 1e6:.1f} ms after "
              "the parent's clock read before it")
        if mode == "late":
            check(kid["peak_time_ns"] >= 300_000_000,
                  f"{mode}: the child's allocation, 300 ms after its fork, 300 ms after its "
                  f"start ({kid['peak_time_ns'] / 1e6:.1f} ms)")
        db = sqlite3.connect(cap)  # named by the summary above
        names = {r[0] for r in db.execute("SELECT function FROM frame")}
        frames = {r[0] for r in db.execute("SELECT id FROM frame")}
        db.close()
        sites = callsite_rows(memreport, cap)
        ids = {c[0] for c in sites}
        dangling = sum(1 for c in sites if (c[1] != 0 and c[1] not in ids) or c[2] not in frames)
        check(dangling == 0 and ("allocate" in names) == (allocations > 0) and
              "before_fork" not in names,
              f"{mode}: the child's stacks: its own, whole ({dangling} callsites without their "
              f"caller or frame; allocate {'allocate' in names}, before_fork "
              f"{'before_fork' in names})")
        if mode == "setuid":
            check(os.stat(cap).st_uid == 0, f"{mode}: the capture made before the setuid, as root")
        if mode == "chroot":
            check(os.listdir(jail) == [], f"{mode}: nothing made in the new root")
    finish()


if __name__ == "__main__":
    main()
