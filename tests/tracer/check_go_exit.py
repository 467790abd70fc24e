#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A Go program (cgo, go_exit/main.go) ends with a raw exit_group, by os.Exit and by
returning from main: no destructor of the tracer's runs. Its status and output are its own,
and the launcher says what the capture is: "capture written" only for a finished one, else
"truncated capture written ... ended without running its exit handlers", as memreport reads
it. Before, the launcher said "capture written" of a capture cut short (0 events in it).
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
        db = os.path.join(work, f"{how}.db")
        r = subprocess.run([launcher, "-o", db, "--", exe, how], capture_output=True, text=True,
                           env=clean_env(), timeout=120)
        check((r.returncode, r.stdout) == (status, "done\n"),
              f"{how}: status {status} and its output ({r.returncode}, {r.stdout!r})")
        s = subprocess.run([memreport, "stats", "--json", db], capture_output=True, text=True)
        if not check(s.returncode == 0, f"{how}: memreport reads the capture ({s.stderr!r})"):
            continue
        st = json.loads(s.stdout)["status"]
        told = [ln for ln in r.stderr.splitlines() if db in ln or os.path.relpath(db) in ln]
        if st == "complete":
            check(told == [f"memtrace: capture written to {os.path.relpath(db)}"],
                  f"{how}: a complete capture is named written ({r.stderr!r})")
        else:
            check(len(told) == 1 and told[0].startswith("memtrace: truncated capture written to ")
                  and "ended without running its exit handlers" in told[0],
                  f"{how}: a {st} capture is named truncated, and why ({r.stderr!r})")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
