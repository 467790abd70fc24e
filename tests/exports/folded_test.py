#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport export --format folded: the lines' values add up to the report's own total for
# each metric (summary --json: peak_bytes for live at the peak, leaked_bytes for --leaks,
# bytes_allocated, allocations) on the standard fixture (whose truth is also spelled out
# here), on the hostile fixture and on a real traced program; and names holding ';', CR
# or a newline never break a line or add a frame.
# Usage: folded_test.py MEMREPORT FIXTURE_TOOL WORKDIR [MEMTRACE_LAUNCHER PROG]
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check_quietly as check, failures  # noqa: E402

LINE = re.compile(rb"^(.+) (\d+)$")


def folded(memreport, cap, *args):
    """The export's lines as (frames, value), after checking each is well formed."""
    out = subprocess.run([memreport, "export", cap, "--format", "folded", *args],
                         check=True, capture_output=True).stdout
    check(out.endswith(b"\n"), "%s %s: output ends with a newline" % (cap, " ".join(args)))
    lines = []
    for raw in out[:-1].split(b"\n"):
        m = LINE.match(raw)
        check(m is not None, "well formed line %r" % raw)
        if m:
            lines.append((m.group(1).split(b";"), int(m.group(2))))
    return lines


def summary(memreport, cap):
    return json.loads(subprocess.run([memreport, "summary", cap, "--json"], check=True,
                                     capture_output=True, text=True).stdout)


# Each metric's folded options and the summary --json key holding its total.
METRICS = [((), "peak_bytes"), (("--metric", "live", "--leaks"), "leaked_bytes"),
           (("--metric", "allocated"), "bytes_allocated"), (("--metric", "count"), "allocations")]


def check_totals(memreport, cap, truth=None):
    s = summary(memreport, cap)
    for args, key in METRICS:
        total = sum(v for _, v in folded(memreport, cap, *args))
        check(total == s[key], "%s: folded %s sums to summary's %s: %d == %d"
              % (os.path.basename(cap), " ".join(args) or "(live at peak)", key, total, s[key]))
        if truth:
            check(total == truth[key], "%s: %s is the fixture's truth %d"
                  % (os.path.basename(cap), key, truth[key]))


def check_hostile(memreport, fixture, work):
    cap = os.path.join(work, "hostile.db")
    subprocess.run([fixture, "--hostile", cap], check=True)
    # A name with a newline, a CR and ';' (frame 6 is the leaf of callsite 6).
    db = sqlite3.connect(cap)
    db.execute("UPDATE frame SET function = 'new' || char(10) || 'line;semi' || char(13) || 'cr'"
               " WHERE id = 6")
    db.commit()
    db.close()
    # fx_hostile: callsites 2..7 under main, 100 * id bytes each, all live to the end.
    truth = {"peak_bytes": 2700, "leaked_bytes": 2700, "bytes_allocated": 2700,
             "allocations": 6}
    check_totals(memreport, cap, truth)
    lines = folded(memreport, cap, "--metric", "allocated")
    check(len(lines) == 6, "hostile: one line per stack (%d)" % len(lines))
    check(all(f[0] == b"main" for f, _ in lines), "hostile: every line starts at main")
    by_value = {v: f for f, v in lines}
    # Callsite 2's frame has an inlined callee (3 frames); the others are main;leaf.
    for v in (300, 400, 500, 600, 700):
        check(len(by_value.get(v, [])) == 2, "hostile: %d B stack has 2 frames: %r"
              % (v, by_value.get(v)))
    check(len(by_value.get(200, [])) == 3, "hostile: 200 B stack has main, caller, inlined")
    check(b"\x1b]0" in by_value.get(300, [b"", b""])[1],
          "hostile: the name with ';' stays one frame: %r" % by_value.get(300))


def traced(memreport, launcher, prog, work):
    cap = os.path.join(work, "prog.db")
    subprocess.run([launcher, "-o", cap, "--", prog], check=True)
    check_totals(memreport, cap)
    # progs/reports_prog.c: peak_phase holds 10 x 10000 B at the peak.
    peak = {}
    for frames, v in folded(memreport, cap):
        for name in frames:
            if name == b"peak_phase":
                peak[name] = peak.get(name, 0) + v
    check(peak.get(b"peak_phase") == 100000, "traced: peak_phase holds 100000 B at the peak "
          "(%r)" % peak)


def main():
    memreport, fixture, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    std = os.path.join(work, "std.db")
    subprocess.run([fixture, std], check=True)
    # tests/reports/fixture.c: peak 10364 B at seq 7; 4814 B live at the end; 9 allocations
    # (the realloc's new block included) of 11314 B.
    check_totals(memreport, std, {"peak_bytes": 10364, "leaked_bytes": 4814,
                                  "bytes_allocated": 11314, "allocations": 9})
    check_hostile(memreport, fixture, work)
    if len(sys.argv) > 5:
        traced(memreport, sys.argv[4], sys.argv[5], work)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
