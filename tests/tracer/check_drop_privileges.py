#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A root program that drops its privileges at once (drop_privileges.c: setuid to nobody,
or chroot into an empty directory) keeps its capture, exact and complete, and hears nothing
from the tracer: the capture's files are opened before the program runs (the writer thread
opened them when it first ran, often after the setuid: 'cannot create capture' on the
program's stderr, an empty file left), and the capture is finished in place where its
directory can no longer be written ('cannot finalize capture: SQLite error'). Its -wal
may stay beside it there (only root may remove it), empty. Nothing is made in the directory
a program chrooted into (names are left to memreport then). Root only (exit 77 otherwise).

Usage: check_drop_privileges.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, finish, fresh_dir  # noqa: E402

RUNS = 5  # each: the program drops its privileges as main starts


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    if os.geteuid() != 0:
        print("SKIP: needs root, to drop privileges")
        sys.exit(77)
    lib = os.path.join(os.path.dirname(launcher), "libmemtrace.so")
    fresh_dir(work)
    os.chmod(work, 0o755)  # not writable by nobody
    jail = os.path.join(work, "jail")
    os.makedirs(jail)
    for how in ("setuid", "chroot"):
        for run in range(RUNS):
            label = f"{how} {run}"
            cap = os.path.join(work, f"{how}{run}.db")
            # Names at exit (the default) in the chroot case: nothing may be made in the
            # jail (the symbol cache, ~/.cache/memtrace, was made there).
            env = clean_env(OUTPUT=cap, **({} if how == "chroot" else {"SYMBOLIZE": 0}))
            env["LD_PRELOAD"] = lib
            r = subprocess.run([prog, how, jail], env=env, capture_output=True, text=True,
                               timeout=120)
            check(r.returncode == 0 and r.stderr == "",
                  f"{label}: exit 0, nothing said ({r.returncode}: {r.stderr.strip()!r})")
            if how == "chroot":
                made = os.listdir(jail)
                check(made == [], f"{label}: nothing made in the new root: {made}")
            wal = cap + "-wal"
            check(not os.path.exists(wal) or os.path.getsize(wal) == 0,
                  f"{label}: no -wal beside it, or an empty one")
            s = subprocess.run([memreport, "summary", "--json", cap], capture_output=True,
                               text=True, timeout=120)
            got = None
            if s.returncode == 0:
                d = json.loads(s.stdout)
                got = (d["status"], d["allocations"], d["frees"], d["leaked_bytes"])
            check(got == ("complete", 1002, 1000, 3000),
                  f"{label}: the capture: complete, 1002 allocations, 1000 frees, 3000 bytes "
                  f"leaked: {got} {s.stderr.strip()}")
    # A child forked after the chroot: its capture's path names a file of the new root (the
    # same directories made there), where it was created.
    mirror = jail + work
    os.makedirs(mirror)
    for run in range(2):
        label = f"chroot, fork {run}"
        cap = os.path.join(work, f"fork{run}.db")
        env = clean_env(OUTPUT=cap, SYMBOLIZE=0)
        env["LD_PRELOAD"] = lib
        r = subprocess.run([prog, "chroot", jail, "fork"], env=env, capture_output=True,
                           text=True, timeout=120)
        check(r.returncode == 0 and "changed its root directory" in r.stderr,
              f"{label}: exit 0, the child untraced, said why ({r.returncode}: "
              f"{r.stderr.strip()!r})")
        made = os.listdir(mirror)
        check(made == [], f"{label}: nothing made in the new root: {made}")
        s = subprocess.run([memreport, "summary", "--json", cap], capture_output=True,
                           text=True, timeout=120)
        got = json.loads(s.stdout)["status"] if s.returncode == 0 else s.stderr.strip()
        check(got == "complete", f"{label}: the parent's capture is complete ({got})")
    finish()


if __name__ == "__main__":
    main()
