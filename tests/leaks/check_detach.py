#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The leak scan at `memtrace --detach` (docs/leaks.md): held_heap, started under the
# launcher, waits on stdin with N blocks of 64 B held from a global array and one of 100 B
# lost; a --detach then finishes its capture, whose scan finds the N blocks and the array
# still reachable and the 100 B definitely lost, while the program goes on, untraced, to
# its own exit (status 3, its output whole). Exits 77 without gdb, which --detach needs.
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import bail, capture_meta, check, children, clean_env, finish, fresh_dir  # noqa: E402,E501
from checks import wait_readable  # noqa: E402

BLOCKS = 1000


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    if not shutil.which("gdb"):
        print("skip: gdb is not installed (scripts/install-deps.sh --test installs it)")
        sys.exit(77)
    fresh_dir(work)
    db = os.path.join(work, "detach.db")
    p = subprocess.Popen([launcher, "-o", db, "--", prog, str(BLOCKS)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())
    children.append(p)
    wait_readable(p.stdout.fileno(), "the program's 'ready'")
    if p.stdout.readline() != b"ready\n":
        bail("the program did not start")
    pid = None
    for name in os.listdir("/proc"):  # the program: the launcher's child
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if name.isdigit() and int(stat[stat.rindex(")") + 2:].split()[1]) == p.pid:
            pid = int(name)
    if not pid:
        bail("the program's process was not found")
    d = subprocess.run([launcher, "--detach", str(pid)], capture_output=True, text=True,
                       timeout=180)
    check(d.returncode == 0, f"memtrace --detach exits 0 ({d.returncode}: {d.stderr.strip()})")
    out, _ = p.communicate(b"go\n", timeout=120)
    check(p.returncode == 3 and out == b"bye\n", f"the program goes on to its exit "
          f"({p.returncode}, {out!r})")
    meta = capture_meta(db)
    check(meta.get("leak_scan") == "complete", f"the scan ran ({meta.get('leak_scan_why')})")
    q = ("SELECT k.name, a.size, count(*) FROM leak l JOIN allocations a ON a.seq = l.seq "
         "JOIN leak_kind k ON k.id = l.kind WHERE a.size IN (64, 100, ?) GROUP BY 1, 2")
    q = q.replace("?", str((BLOCKS + 1) * 8))
    rows = subprocess.run([memreport, "sql", db, q, "--csv"], capture_output=True,
                          text=True).stdout.splitlines()[1:]
    got = sorted(tuple(r.split(",")) for r in rows)
    want = sorted([("still_reachable", "64", str(BLOCKS)),
                   ("still_reachable", str((BLOCKS + 1) * 8), "1"),
                   ("definitely_lost", "100", "1")])
    check(got == want, f"verdicts {got} as {want}")
    finish()


if __name__ == "__main__":
    main()
