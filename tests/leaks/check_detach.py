#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The leak scan on demand (docs/leaks.md): held_heap, started under the launcher, waits on
# stdin with N blocks of 64 B held from a global array and one of 100 B lost; then
#   detach  `memtrace --detach PID` (gdb; skipped without it),
#   signal  the signal MEMTRACE_LEAK_SIGNAL names (USR1),
# finishes its capture, whose scan finds the N blocks and the array still reachable and
# the 100 B definitely lost, while the program goes on, untraced, to its own exit (status
# 3, its output whole).
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import bail, capture_meta, check, children, clean_env, finish, fresh_dir  # noqa: E402,E501
from checks import wait_readable  # noqa: E402

BLOCKS = 1000


def program_of(launcher_pid):
    """The pid of the launcher's child: the program."""
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if name.isdigit() and int(stat[stat.rindex(")") + 2:].split()[1]) == launcher_pid:
            return int(name)
    bail("the program's process was not found")


def wait_finished(db):
    """Until the capture says it is complete (the program runs on meanwhile)."""
    for _ in range(600):
        try:
            c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
            row = c.execute("SELECT value FROM meta WHERE key = 'capture_status'").fetchone()
            c.close()
            if row and row[0] == "complete":
                return
        except sqlite3.Error:
            pass
        time.sleep(0.1)
    bail("the capture was not finished after the signal")


def case(name, launcher, memreport, prog, work):
    db = os.path.join(work, f"{name}.db")
    settings = {"LEAK_SIGNAL": "USR1"} if name == "signal" else {}
    p = subprocess.Popen([launcher, "-o", db, "--", prog, str(BLOCKS)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=clean_env(**settings))
    children.append(p)
    wait_readable(p.stdout.fileno(), "the program's 'ready'")
    if p.stdout.readline() != b"ready\n":
        bail("the program did not start")
    pid = program_of(p.pid)
    if name == "detach":
        d = subprocess.run([launcher, "--detach", str(pid)], capture_output=True, text=True,
                           timeout=180)
        check(d.returncode == 0, f"memtrace --detach exits 0 ({d.returncode}: "
              f"{d.stderr.strip()})")
    else:
        os.kill(pid, signal.SIGUSR1)
        wait_finished(db)
    out, _ = p.communicate(b"go\n", timeout=120)
    check(p.returncode == 3 and out == b"bye\n", f"{name}: the program goes on to its exit "
          f"({p.returncode}, {out!r})")
    meta = capture_meta(db)
    check(meta.get("leak_scan") == "complete",
          f"{name}: the scan ran ({meta.get('leak_scan_why')})")
    q = ("SELECT k.name, a.size, count(*) FROM leak l JOIN allocations a ON a.seq = l.seq "
         "JOIN leak_kind k ON k.id = l.kind WHERE a.size IN (64, 100, ?) GROUP BY 1, 2")
    q = q.replace("?", str((BLOCKS + 1) * 8))
    rows = subprocess.run([memreport, "sql", db, q, "--csv"], capture_output=True,
                          text=True).stdout.splitlines()[1:]
    got = sorted(tuple(r.split(",")) for r in rows)
    want = sorted([("still_reachable", "64", str(BLOCKS)),
                   ("still_reachable", str((BLOCKS + 1) * 8), "1"),
                   ("definitely_lost", "100", "1")])
    check(got == want, f"{name}: verdicts {got} as {want}")


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    case("signal", launcher, memreport, prog, work)
    if shutil.which("gdb"):
        case("detach", launcher, memreport, prog, work)
    else:
        print("note: gdb is not installed: no --detach case (scripts/install-deps.sh --test)")
    finish()


if __name__ == "__main__":
    main()
