#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# --at and --range given as the names of marks and ranges a traced program recorded
# (ranges_prog.c, whose functions allocate known bytes between known marks), checked on
# every report that takes them (top, export, flamegraph): exact bytes per function for
# --at NAME, --range NAME, --range A..B mixing times and names, NAME#N and mark:NAME; and
# the usage errors (exit 1) for unknown and ambiguous names, naming the candidates. On an
# imported NPU log, a function region (a range ending where the next begins) ends at the
# step before the next region's first.
# Usage: ranges_test.py MEMTRACE_LAUNCHER MEMREPORT RANGES_PROG WORKDIR NPU_LOG
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402

OURS = ("load_table", "load_scratch", "step_buffer", "late_buffer")


def run(memreport, *args):
    return subprocess.run([memreport] + list(args), capture_output=True, text=True)


def ours(d):
    """The program's own functions of a name -> bytes map, without zeros."""
    return {k: v for k, v in d.items() if k in OURS and v}


def top(memreport, cap, *args, keep=ours):
    """Self bytes (or count) per function of `memreport top --json`."""
    r = run(memreport, "top", cap, "--json", "--top", "0", *args)
    if r.returncode != 0:
        print(r.stderr)
        return None
    return keep({f["function"]: f["self"] for f in json.loads(r.stdout)["functions"]})


def check_npu(memreport, log, work):
    """Regions of an NPU log as ranges: [begin, next region's begin), in steps."""
    cap = os.path.join(work, "npu.db")
    subprocess.run([memreport, "import", log, "-o", cap], check=True, capture_output=True)
    db = sqlite3.connect(cap)
    begin, end = db.execute(
        "select ts_begin, ts_end from mark where kind = 'range' and name = 'part10'").fetchone()
    db.close()
    every = lambda d: d  # noqa: E731 (the log's functions are all ours)
    steps = "step %d..step %d" % (begin, end - 1)
    got = top(memreport, cap, "--range", "part10", "--metric", "allocated", keep=every)
    want = top(memreport, cap, "--range", steps, "--metric", "allocated", keep=every)
    past = top(memreport, cap, "--range", "step %d..step %d" % (begin, end), "--metric",
               "allocated", keep=every)
    check(got == want and got != past, "npu --range part10 = %s, not one step more: %r" %
          (steps, got))
    check(top(memreport, cap, "--at", "part10", keep=every) ==
          top(memreport, cap, "--at", "step %d" % (end - 1), keep=every),
          "npu --at part10 = --at step %d" % (end - 1))


def folded(memreport, cap, *args):
    """Bytes per leaf function of `memreport export --format folded`."""
    r = run(memreport, "export", cap, "--format", "folded", *args)
    if r.returncode != 0:
        print(r.stderr)
        return None
    got = {}
    for line in r.stdout.splitlines():
        stack, value = line.rsplit(" ", 1)
        leaf = stack.split(";")[-1]
        got[leaf] = got.get(leaf, 0) + int(value)
    return ours(got)


def flamegraph(memreport, cap, page, *args):
    """Self bytes per function of the flame graph page, and its data."""
    r = run(memreport, "flamegraph", cap, "-f", "-o", page, *args)
    if r.returncode != 0:
        print(r.stderr)
        return None, None
    html = open(page, encoding="utf-8").read()
    data = json.loads(re.search(r'id="fg-data">(.*?)</script>', html, re.S).group(1))
    got = {}
    for n in data["nodes"]:
        name = data["strings"][n[1]]
        got[name] = got.get(name, 0) + n[5]
    return ours(got), data


def expect_error(memreport, args, want, what):
    """A usage error: exit 1, one line on stderr containing each of `want`."""
    r = run(memreport, *args)
    first = r.stderr.splitlines()[0] if r.stderr else ""
    ok = r.returncode == 1 and first.startswith("memreport: ") and all(w in first for w in want)
    check(ok, "%s: exit %d, %r" % (what, r.returncode, first))


def main():
    launcher, memreport, prog, work, npu_log = sys.argv[1:6]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = os.path.join(work, "ranges.db")
    r = subprocess.run([launcher, "-o", cap, "--", prog], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout == "ranges ok\n", "traced run: %r" % r.stdout)
    # Events are placed against marks by time: a program that marks keeps its times in ns
    # (rounded down to the default microsecond, allocations just after a mark fell before it).
    db = sqlite3.connect(cap)
    unit = db.execute("select value from meta where key = 'time_resolution_ns'").fetchone()
    db.close()
    check(unit == (1,), "a program that marks keeps ns: time_resolution_ns %r" % (unit,))

    table, scratch, late = {"load_table": 1000}, {"load_scratch": 4000}, {"late_buffer": 50000}
    # --at a mark: live then. --at a range: live at its end.
    check(top(memreport, cap, "--at", "start") == {}, "top --at start: nothing yet")
    check(top(memreport, cap, "--at", "loaded") == table, "top --at loaded: the table only")
    check(top(memreport, cap, "--at", "load") == table, "top --at load (a range): at its end")
    check(top(memreport, cap, "--at", "tick#1") == {**table, "step_buffer": 100},
          "top --at tick#1")
    check(top(memreport, cap, "--at", "mark:900s") == {**table, "step_buffer": 300},
          "top --at mark:900s (a name that reads as a time)")
    # --range: allocations made within it; live at its highest point (not the run's peak).
    check(top(memreport, cap) == {**table, "step_buffer": 300, **late}, "top: the run's peak")
    check(top(memreport, cap, "--range", "load") == {**table, **scratch},
          "top --range load: live at the highest point of load")
    check(top(memreport, cap, "--range", "load", "--metric", "allocated") == {**table, **scratch},
          "top --range load --metric allocated")
    check(top(memreport, cap, "--range", "step#2", "--metric", "allocated") ==
          {"step_buffer": 200}, "top --range step#2 --metric allocated")
    check(top(memreport, cap, "--range", "step#1..step#2", "--metric", "count") ==
          {"step_buffer": 2}, "top --range step#1..step#2 --metric count")
    check(top(memreport, cap, "--range", "loaded..done", "--metric", "allocated") ==
          {"step_buffer": 300, **late}, "top --range loaded..done --metric allocated")
    check(top(memreport, cap, "--range", "0ns..loaded", "--metric", "allocated") ==
          {**table, **scratch}, "top --range 0ns..loaded (a time and a name)")
    check(top(memreport, cap, "--range", "tick#2..", "--metric", "allocated") == late,
          "top --range tick#2.. (to the end)")
    check(top(memreport, cap, "--range", "..start", "--metric", "allocated") == {},
          "top --range ..start: nothing of ours")
    check(top(memreport, cap, "--range", "tick#1..tick#2") == {**table, "step_buffer": 300},
          "top --range tick#1..tick#2: live at its highest point")

    # export: the same names, the same meaning.
    check(folded(memreport, cap, "--at", "loaded") == table, "export --at loaded")
    check(folded(memreport, cap, "--range", "load") == {**table, **scratch},
          "export --range load: live at its highest point")
    check(folded(memreport, cap, "--range", "load", "--metric", "allocated") ==
          {**table, **scratch}, "export --range load --metric allocated")
    check(folded(memreport, cap, "--range", "step#2..done", "--metric", "count") ==
          {"step_buffer": 1, "late_buffer": 1}, "export --range step#2..done --metric count")

    # flamegraph: --at NAME, and --range at the highest point within the range.
    page = os.path.join(work, "fg.html")
    got, _ = flamegraph(memreport, cap, page, "--at", "tick#2")
    check(got == {**table, "step_buffer": 300}, "flamegraph --at tick#2: %r" % got)
    got, data = flamegraph(memreport, cap, page, "--range", "load")
    check(got == {**table, **scratch}, "flamegraph --range load: %r" % got)
    got, _ = flamegraph(memreport, cap, page, "--range", "loaded..")
    check(got == {**table, "step_buffer": 300, **late}, "flamegraph --range loaded..: %r" % got)

    # Names that match no mark, or several: usage errors naming the candidates.
    expect_error(memreport, ["top", cap, "--at", "nosuch"],
                 ["--at nosuch", "no mark or range", "'load' (range)", "'tick' (mark x2)"],
                 "unknown name")
    expect_error(memreport, ["top", cap, "--at", "tick"], ["tick#1 (mark at", "tick#2 (mark at"],
                 "a mark recorded twice")
    expect_error(memreport, ["top", cap, "--range", "step"],
                 ["step#1 (range", "step#2 (range"], "a range entered twice")
    expect_error(memreport, ["export", cap, "--format", "folded", "--range", "step..done"],
                 ["step#1", "step#2"], "export: ambiguous FROM")
    expect_error(memreport, ["flamegraph", cap, "-o", page, "-f", "--at", "nosuch"],
                 ["no mark or range"], "flamegraph: unknown name")
    expect_error(memreport, ["top", cap, "--range", "tick#3"], ["recorded 2 times"],
                 "NAME#N past the last")
    expect_error(memreport, ["top", cap, "--range", "start"], ["not a range"],
                 "--range NAME of a point mark")
    expect_error(memreport, ["top", cap, "--range", "done..start"], ["FROM is after TO"],
                 "--range done..start")
    expect_error(memreport, ["top", cap, "--at", "900s"], ["past the end"],
                 "900s is a time, not the mark")
    expect_error(memreport, ["top", cap, "--at", "mark:"], ["name of a mark"], "mark: alone")
    check_npu(memreport, npu_log, work)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
