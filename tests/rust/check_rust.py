#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Rust programs traced (tests/rust/*.rs, built here with rustc; every one of them hung at
its start before: the runtime's first heap call of each thread is inside
pthread_getattr_np). Each case runs its program untraced and under LD_PRELOAD: the exit
status, stdout and stderr (thread ids in panic messages aside) must be the same, and the
capture complete and exact: the programs that count their own heap calls (counting.rs)
find every block they counted in the capture at their allocator's frames, bytes included;
threads' blocks are each worker's; the leaked Box is a leak of its size at its function.

Usage: check_rust.py --lib LIBMEMTRACE --memreport MEMREPORT --workdir DIR CASE
       check_rust.py --list      (the cases, one a line: tests/rust.cmake makes a test of each)
Without rustc (PATH, or ~/.cargo/bin) the case is skipped (exit 77).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import capture_meta, check, clean_env, finish, fresh_dir  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 60
MARKER = 7919  # counting.rs's marker block
# The blocks counting.rs counted, in the capture: made at its allocator's functions, before
# its marker block.
COUNTED_SQL = f"""
SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes FROM allocations
WHERE seq < (SELECT min(seq) FROM allocations WHERE size = {MARKER})
  AND callsite IN (SELECT callsite FROM stacks WHERE function LIKE '%Counting%GlobalAlloc%')
"""


class Skip(Exception):
    pass


def find_rustc():
    found = shutil.which("rustc")
    if found:
        return found
    home = os.environ.get("CARGO_HOME") or os.path.expanduser("~/.cargo")
    path = os.path.join(home, "bin", "rustc")
    return path if os.access(path, os.X_OK) else None


class Ctx:
    def __init__(self, args):
        self.lib, self.memreport, self.work = args.lib, args.memreport, args.workdir

    def build(self, name):
        rustc = find_rustc()
        if not rustc:
            raise Skip("rustc is not installed")
        exe = os.path.join(self.work, name)
        r = subprocess.run([rustc, "--edition", "2021", "-O", "-o", exe,
                            os.path.join(HERE, f"{name}.rs")],
                           capture_output=True, text=True, timeout=300, cwd=self.work)
        if r.returncode != 0:
            sys.exit(f"rustc {name}.rs failed: {r.stderr}")
        return exe

    def sql(self, db, query):
        r = subprocess.run([self.memreport, "sql", "--json", db, query], capture_output=True,
                           text=True, timeout=TIMEOUT)
        if r.returncode != 0:
            sys.exit(f"memreport sql {db} failed: {r.stderr}")
        return json.loads(r.stdout)  # the rows, each an object

    def report(self, command, db):
        r = subprocess.run([self.memreport, command, "--json", db], capture_output=True,
                           text=True, timeout=TIMEOUT)
        if r.returncode != 0:
            sys.exit(f"memreport {command} {db} failed: {r.stderr}")
        return json.loads(r.stdout)

    def traced_as_untraced(self, name, expect_rc):
        """Builds and runs `name` untraced and traced; checks they behave alike and the
        capture is whole. Returns the traced run and its capture."""
        exe = self.build(name)
        env = dict(clean_env(), RUST_BACKTRACE="0")
        runs = {}
        db = os.path.join(self.work, f"{name}.db")
        for label, e in (("untraced", env),
                         ("traced", dict(env, MEMTRACE_OUTPUT=db, LD_PRELOAD=self.lib))):
            try:
                runs[label] = subprocess.run([exe], capture_output=True, text=True, env=e,
                                             timeout=TIMEOUT, cwd=self.work)
            except subprocess.TimeoutExpired:
                check(False, f"{name} {label}: ended within {TIMEOUT} s (killed)")
                finish()
        n, t = runs["untraced"], runs["traced"]
        check(n.returncode == expect_rc, f"{name}: exit status {n.returncode} untraced, "
              f"want {expect_rc} ({n.stderr[-300:]!r})")
        check(t.returncode == n.returncode,
              f"{name}: exit status {t.returncode} traced as untraced ({t.stderr[-300:]!r})")
        check(t.stdout == n.stdout, f"{name}: stdout traced as untraced ({t.stdout!r}, "
              f"untraced {n.stdout!r})")
        # A panic message names the thread's id, which differs from run to run.
        tid = re.compile(r"(thread '[^']*') \(\d+\)")
        check(tid.sub(r"\1", t.stderr) == tid.sub(r"\1", n.stderr),
              f"{name}: stderr traced as untraced ({t.stderr!r}, untraced {n.stderr!r})")
        meta = capture_meta(db) if os.path.exists(db) else {}
        check(meta.get("capture_status") == "complete",
              f"{name}: capture complete ({meta.get('capture_status')})")
        s = self.report("summary", db)
        check(s["events"] == s["allocations"] + s["frees"] and s["unmatched_frees"] == 0 and
              s["allocations"] > 0,
              f"{name}: {s['events']} events, {s['allocations']} allocations, "
              f"{s['frees']} frees, {s['unmatched_frees']} unmatched")
        return t, db, s, meta

    def counted_exactly(self, name, run, db):
        m = re.search(r"^rust heap: (\d+) allocations, (\d+) bytes$", run.stderr, re.M)
        if not check(m is not None, f"{name}: the program's own counts ({run.stderr!r})"):
            return
        want = (int(m.group(1)), int(m.group(2)))
        got = self.sql(db, COUNTED_SQL)[0]
        check((got["n"], got["bytes"]) == want,
              f"{name}: every block the program counted is in the capture, at its allocator "
              f"({got['n']} allocations, {got['bytes']} bytes; counted {want[0]}, {want[1]})")


def case_hello(ctx):
    t, _, s, _ = ctx.traced_as_untraced("hello", 0)
    check(t.stdout == "hello, world\n", f"hello: its output ({t.stdout!r})")
    check(s["threads"] == 1, f"hello: one thread ({s['threads']})")


def case_threads(ctx):
    t, db, s, _ = ctx.traced_as_untraced("threads", 0)
    ctx.counted_exactly("threads", t, db)
    check(s["threads"] == 5, f"threads: main and 4 workers ({s['threads']})")
    rows = ctx.sql(db, """
        SELECT a.size AS size, count(*) AS n, sum(a.freed_ts IS NULL) AS live,
               count(DISTINCT a.tid) AS tids, min(t.name) AS name
        FROM allocations a LEFT JOIN thread t ON t.tid = a.tid
        WHERE a.size BETWEEN 3001 AND 3004 GROUP BY a.size ORDER BY a.size""")
    got = [(r["size"], r["n"], r["live"], r["tids"], r["name"]) for r in rows]
    want = [(3001 + k, 1000, 0, 1, f"worker{k}") for k in range(4)]
    check(got == want, f"threads: each worker's 1000 blocks, freed, on its thread ({got})")


def case_panic(ctx):
    t, db, _, _ = ctx.traced_as_untraced("panic", 101)
    check("worker gives up after 100 items" in t.stderr and "index out of bounds" in t.stderr,
          f"panic: both panics' messages ({t.stderr!r})")
    ctx.counted_exactly("panic", t, db)


def case_leak_box(ctx):
    _, db, _, _ = ctx.traced_as_untraced("leak_box", 0)
    groups = ctx.report("leaks", db)["groups"]
    box = [g for g in groups if g["bytes"] == 4321]
    frames = [f.get("function") or "" for f in box[0]["stack"]] if box else []
    check(len(box) == 1 and box[0]["blocks"] == 1 and
          any("leak_a_box" in f for f in frames),
          f"leak_box: one leak of 4321 bytes at leak_a_box ({box})")
    check(not any(g["bytes"] % 1234 == 0 for g in groups), "leak_box: the dropped box is no leak")
    rows = ctx.sql(db, "SELECT count(*) AS n, sum(freed_ts IS NULL) AS live FROM allocations "
                       "WHERE size = 1234")
    check((rows[0]["n"], rows[0]["live"]) == (1, 0),
          f"leak_box: the 1234-byte box allocated and freed ({rows})")


def case_overflow(ctx):
    t, _, _, meta = ctx.traced_as_untraced("overflow", -signal.SIGABRT)
    check("has overflowed its stack" in t.stderr, f"overflow: the runtime says so ({t.stderr!r})")
    check(meta.get("terminated_by_signal") == str(int(signal.SIGABRT)),
          f"overflow: the capture saved before SIGABRT ({meta.get('terminated_by_signal')})")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="print the cases, one a line")
    ap.add_argument("--lib", help="libmemtrace.so")
    ap.add_argument("--memreport", help="memreport")
    ap.add_argument("--workdir", help="a directory for the programs and captures")
    ap.add_argument("case", nargs="?", choices=sorted(CASES))
    args = ap.parse_args()
    if args.list:
        print("\n".join(sorted(CASES)))
        return 0
    if not (args.lib and args.memreport and args.workdir and args.case):
        ap.error("--lib, --memreport, --workdir and a case are required")
    fresh_dir(args.workdir)
    try:
        CASES[args.case](Ctx(args))
    except Skip as e:
        print(f"SKIP: {e}")
        return 77
    finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
