#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A Go program (cgo, go_exit/main.go) ends with a raw exit_group, by os.Exit and by
returning from main: no destructor of the tracer's runs. Its status and output are its own,
and its exit watcher (preload/exit_watch.h) finishes the capture: complete, every heap call
of the program in it (1000 blocks freed, the leaks of 4242 and 777 B at `work`), and the
launcher names it written once the watcher is done. Before the watcher, the events after
the last commit were lost (a short run: 0 events) and the capture stayed truncated.
Skipped (77) without go (Debian: golang-go).

Usage: check_go_exit.py MEMTRACE MEMREPORT SOURCE_DIR WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, failures, fresh_dir  # noqa: E402


def build(src, work):
    """The program built with cgo in work/ (its Go caches there too, no network)."""
    go = shutil.which("go")
    if not go:
        print("skip: no go (Debian: golang-go)")
        sys.exit(77)
    tree = os.path.join(work, "src")
    os.makedirs(tree)
    shutil.copy(os.path.join(src, "main.go"), tree)
    with open(os.path.join(tree, "go.mod"), "w") as f:
        f.write("module goexit\n\ngo 1.19\n")
    env = dict(os.environ, CGO_ENABLED="1", GOFLAGS="-mod=mod", GOPROXY="off",
               GOCACHE=os.path.join(work, "gocache"), GOPATH=os.path.join(work, "gopath"))
    exe = os.path.join(work, "goexit")
    p = subprocess.run([go, "build", "-o", exe, "."], cwd=tree, env=env, capture_output=True,
                       text=True)
    if p.returncode != 0:
        sys.exit(f"go build failed: {p.stderr}")
    return exe


def main():
    launcher, memreport, src, work = sys.argv[1:5]
    fresh_dir(work)
    exe = build(src, work)
    for how, status in (("exit", 3), ("return", 0)):
        # A writer thread killed by the exit holding a lock of SQLite's own leaves the
        # watcher nothing it may finish: the capture stays truncated and is
        # named so (docs/tracer.md). That known limit is tried again, at most twice;
        # anything else counts.
        for attempt in range(3):
            db = os.path.join(work, f"{how}-{attempt}.db")
            r = subprocess.run([launcher, "-o", db, "--", exe, how], capture_output=True,
                               text=True, env=clean_env(), timeout=120)
            if attempt == 2 or "memtrace: truncated capture written to" not in r.stderr:
                break
            print(f"{how}: truncated, the known limit (the writer killed holding a lock); "
                  "again")
        check((r.returncode, r.stdout) == (status, "done\n"),
              f"{how}: status {status} and its output ({r.returncode}, {r.stdout!r})")
        s = subprocess.run([memreport, "stats", "--json", db], capture_output=True, text=True)
        if not check(s.returncode == 0, f"{how}: memreport reads the capture ({s.stderr!r})"):
            continue
        check(json.loads(s.stdout)["status"] == "complete", f"{how}: the capture is complete")
        told = [ln for ln in r.stderr.splitlines() if db in ln or os.path.relpath(db) in ln]
        check(told in ([f"memtrace: capture written to {db}"],
                       [f"memtrace: capture written to {os.path.relpath(db)}"]),
              f"{how}: the launcher names it written ({r.stderr!r})")
        q = subprocess.run([memreport, "sql", "--csv", db,
                            "select count(*) from events where kind = 'malloc'"
                            " and size between 1000 and 1006"],
                           capture_output=True, text=True)
        check(q.stdout.split() == ["count(*)", "1000"],
              f"{how}: 1000 blocks of 1000-1006 B ({q.stdout!r} {q.stderr!r})")
        lk = subprocess.run([memreport, "leaks", "--json", db], capture_output=True, text=True)
        groups = json.loads(lk.stdout)["groups"] if lk.returncode == 0 else []
        # The Go runtime's own blocks may be live too (a new thread's start record).
        check(sorted((g["bytes"], g["blocks"]) for g in groups
                     if g["stack"] and g["stack"][0]["function"] == "work")
              == [(777, 1), (4242, 1)],
              f"{how}: work's leaks are its two blocks ({lk.stdout[:300]!r})")

if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
