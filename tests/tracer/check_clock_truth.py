#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Event times agree with the program's own clock (clock_truth.c): the program prints, for
each malloc(4321), CLOCK_MONOTONIC read just before and just after it. The capture's times
are nanoseconds since the capture started, so one offset must put every such allocation's
time between its two readings, give or take TOLERANCE_NS. A delay anywhere (a preempted
program or writer) only widens the readings' bracket, so the check cannot fail by timing; a
time the writer converted wrongly (by a calibration point's slope, or on a line that changed
after it) can. Run as the writer runs by default and with a commit every millisecond (more
writer passes, each converting what was recorded since the last). Times are whole microseconds
by default (MEMTRACE_TIME_NS, meta time_resolution_ns) and nanoseconds with MEMTRACE_TIME_NS=1:
400 times that are all multiples of 1000 ns by chance would be a 1-in-10^1200 event."""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures, fresh_dir, traced  # noqa: E402

ROUNDS = 400
SIZE = 4321
# As unit.clock: a calibration point's error is tens of ns; 1 ms is far above it.
TOLERANCE_NS = 1_000_000


def case(launcher, memreport, prog, work, name, unit, **settings):
    db = os.path.join(work, f"{name}.db")
    r = traced(launcher, db, [prog], **settings)
    if not check(r.returncode == 0, f"{name}: the program ran ({r.returncode}: "
                 f"{r.stderr.strip()})"):
        return
    pairs = [tuple(map(int, line.split())) for line in r.stdout.splitlines()]
    q = subprocess.run([memreport, "sql", db, f"select ts from allocations where size = {SIZE} "
                        "order by seq", "--json"], capture_output=True, text=True, check=True)
    times = [row["ts"] for row in json.loads(q.stdout)]
    meta = subprocess.run([memreport, "sql", db, "select value from meta where key = "
                           "'time_resolution_ns'", "--json"], capture_output=True, text=True,
                          check=True)
    check(json.loads(meta.stdout) == [{"value": unit}],
          f"{name}: meta time_resolution_ns is {unit} ({meta.stdout.strip()})")
    off = [t for t in times if t % 1000]
    if unit == 1000:
        check(not off, f"{name}: every time a whole microsecond ({off[:3]})")
    else:
        check(len(off) > 0, f"{name}: times in ns, not all whole microseconds")
    if not (check(len(pairs) == ROUNDS, f"{name}: {ROUNDS} readings ({len(pairs)})") and
            check(len(times) == ROUNDS, f"{name}: {ROUNDS} allocations ({len(times)})")):
        return
    # The offset must be at least before - ts and at most after - ts for every allocation.
    low = max(b - t for (b, _), t in zip(pairs, times))
    high = min(a - t for (_, a), t in zip(pairs, times))
    worst = max(range(ROUNDS), key=lambda i: pairs[i][0] - times[i])
    check(low - high <= TOLERANCE_NS,
          f"{name}: one offset fits every allocation within {TOLERANCE_NS} ns (off by "
          f"{low - high} ns; the latest against its reading: allocation {worst})")


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    case(launcher, memreport, prog, work, "default", 1000)
    case(launcher, memreport, prog, work, "commit_1ms", 1000, COMMIT_MS=1)
    case(launcher, memreport, prog, work, "ns", 1, TIME_NS=1)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
