#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The leak scan in place (docs/leaks.md) reads memory through the kernel: a block whose first
# page the program made unreadable (tests/leaks/unreadable.c) is skipped there, as memcheck
# skips it, where a read would have raised SIGSEGV. The program's last thread exits: the
# scan is made in place and complete; the held block and the one its readable page points
# at are still reachable, the one only its unreadable page points at is definitely lost.
# With a thread left at the exit the scan is made in a copy, which dies of that SIGSEGV:
# the scan is not run, and says why. Either way the program's output and exit status are the
# untraced run's.
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import capture_meta, check, clean_env, finish, fresh_dir  # noqa: E402


def verdicts(memreport, db):
    """{allocation size: leak kind} of the capture's verdicts."""
    q = ("SELECT a.size, k.name FROM leak l JOIN allocations a ON a.seq = l.seq"
         " JOIN leak_kind k ON k.id = l.kind WHERE a.size IN (48, 80, 8192)")
    out = subprocess.run([memreport, "sql", db, q, "--csv"], capture_output=True, text=True,
                         check=True).stdout.splitlines()[1:]
    return {int(line.split(",")[0]): line.split(",")[1] for line in out}


def main():
    lib, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    for mode in ("", "thread"):
        argv = [prog] + ([mode] if mode else [])
        plain = subprocess.run(argv, capture_output=True, env=clean_env())
        db = os.path.join(work, f"unreadable{'-' + mode if mode else ''}.db")
        traced = subprocess.run(argv, capture_output=True,
                                env=clean_env(OUTPUT=db) | {"LD_PRELOAD": lib})
        name = mode or "alone"
        check(plain.returncode == 0 and plain.stdout == b"unreadable\n",
              f"{name}: untraced ({plain.returncode}, {plain.stdout})")
        check((traced.returncode, traced.stdout, traced.stderr)
              == (plain.returncode, plain.stdout, plain.stderr),
              f"{name}: status and output as untraced ({traced.returncode}, {traced.stdout}, "
              f"{traced.stderr})")
        meta = capture_meta(db)
        check(meta.get("capture_status") == "complete", f"{name}: capture complete")
        if mode:
            check(meta.get("leak_scan") == "not run"
                  and meta.get("leak_scan_why") == "the scanning copy died of signal 11",
                  f"{name}: in a copy, the scan not run, and why "
                  f"({meta.get('leak_scan_why')!r})")
            continue
        check(meta.get("leak_scan") == "complete" and meta.get("leak_scan_where") == "in place",
              f"{name}: the scan complete, in place ({meta.get('leak_scan')}, "
              f"{meta.get('leak_scan_where')}, {meta.get('leak_scan_why')!r})")
        want = {8192: "still_reachable", 80: "still_reachable", 48: "definitely_lost"}
        got = verdicts(memreport, db) if meta.get("leak_scan") == "complete" else {}
        check(got == want, f"{name}: verdicts {got} as {want}")
    finish()


if __name__ == "__main__":
    main()
