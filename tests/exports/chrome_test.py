#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport export --format chrome: valid trace-event JSON whose heap counter track follows
# the standard fixture (tests/reports/fixture.c) event by event and peaks at summary's
# peak, whose RSS and VSZ tracks are the capture's counter points (added here, in µs), and
# whose marks are instant, complete and begin events; --thread and --range filter; an
# imported NPU log gives its NPU counters and summary's peak. With the tracer, python3 traced
# with a mark and a range (real_program.py): the heap track peaks at summary's peak, the
# mark is an instant event and the range a complete one.
# Usage: chrome_test.py MEMREPORT REPORTS_FIXTURE NPU_LOG WORKDIR [MEMTRACE_LAUNCHER]
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check_quietly as check, finish, runner  # noqa: E402
from real_program import trace_python  # noqa: E402

memreport, fixture, npu_log, work = sys.argv[1:5]
launcher = sys.argv[5] if len(sys.argv) > 5 else None
run = runner(memreport)


def export(cap, name, *opts):
    out = os.path.join(work, name)
    run("export", cap, "--format", "chrome", "-f", "-o", out, *opts)
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)  # strict JSON: no NaN, no trailing commas
    events = doc["traceEvents"]
    for e in events:
        check(isinstance(e.get("name"), str) and e.get("ph") in ("M", "C", "i", "X", "B")
              and isinstance(e.get("pid"), int) and (e["ph"] == "M" or
                                                     isinstance(e.get("ts"), (int, float))),
              f"{name}: trace event {e}")
    return events


def track(events, name):
    return [(e["ts"], e["args"]["bytes"]) for e in events if e["ph"] == "C" and e["name"] == name]


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
cap = os.path.join(work, "fx.db")
subprocess.run([fixture, cap], check=True)
db = sqlite3.connect(cap)
db.executescript("""
INSERT INTO counter_track VALUES(1, 1, 'rss', 'bytes'), (2, 1, 'vsz', 'bytes');
INSERT INTO counter VALUES(1, 0, 100000), (1, 5000, 300000), (1, 10000, 200000),
                          (2, 0, 900000), (2, 10000, 950000);
INSERT INTO mark(heap, kind, name, ts_begin, ts_end, tid) VALUES
  (1, 'mark', 'load "config"', 2500, NULL, 100), (1, 'range', 'parse', 4500, 9500, 100),
  (1, 'range', 'open', 12500, NULL, 200), (1, 'mark', 'global', 3000, NULL, NULL);
""")
db.commit()
db.close()
summary = json.loads(run("summary", cap, "--json"))

ev = export(cap, "all.json")
heap = track(ev, "heap")
check(max(v for _, v in heap) == summary["peak_bytes"] == 10364, f"heap peak {heap}")
check((7.0, 10364) in heap, "the peak at 7 µs")
check(heap[-1] == (13.0, summary["leaked_bytes"]), f"heap at the end {heap[-1:]}")
check(len(heap) == 13, f"one heap point per matched event: {len(heap)}")
check(track(ev, "RSS") == [(0, 100000), (5.0, 300000), (10.0, 200000)], f"RSS {track(ev, 'RSS')}")
check(track(ev, "VSZ") == [(0, 900000), (10.0, 950000)], f"VSZ {track(ev, 'VSZ')}")
marks = sorted((e["ph"], e["name"], e["ts"], e.get("dur"), e["tid"], e.get("s"))
               for e in ev if e["ph"] in ("i", "X", "B"))
check(marks == [("B", "open", 12.5, None, 200, None), ("X", "parse", 4.5, 5.0, 100, None),
                ("i", "global", 3.0, None, 0, "p"), ("i", 'load "config"', 2.5, None, 100, "t")],
      f"marks {marks}")
names = {(e["name"], e.get("tid"), e["args"]["name"]) for e in ev if e["ph"] == "M"}
check(("thread_name", 200, "worker-1") in names and ("process_name", None, "prog") in names,
      f"names {names}")

# --thread 200: its blocks only (5000 at 6 µs, freed at 8 µs, 50 at 11 µs) and its marks.
ev = export(cap, "t200.json", "--thread", "200")
check(track(ev, "heap") == [(6.0, 5000), (8.0, 0), (11.0, 50)], f"--thread 200 {track(ev, 'heap')}")
check([e["name"] for e in ev if e["ph"] in ("i", "X", "B")] == ["open"], "--thread 200 marks")
ev = export(cap, "range.json", "--range", "5us..9us")
check([t for t, _ in track(ev, "heap")] == [5.0, 6.0, 7.0, 8.0, 9.0], "--range heap points")
check(track(ev, "RSS") == [(5.0, 300000)], "--range RSS points")

npu = os.path.join(work, "npu.db")
run("import", npu_log, "-o", npu)
nsum = json.loads(run("summary", npu, "--json"))
ev = export(npu, "npu.json")
check(max(v for _, v in track(ev, "heap")) == nsum["peak_bytes"], "NPU heap peak")
check(track(ev, "NPU used"), "NPU used track")

if launcher:
    pcap, _ = trace_python(launcher, work)
    psum = json.loads(run("summary", pcap, "--json"))
    ev = export(pcap, "python3.json")
    check(max(v for _, v in track(ev, "heap")) == psum["peak_bytes"],
          f"python3: heap peak {max(v for _, v in track(ev, 'heap'))} != {psum['peak_bytes']}")
    check(track(ev, "RSS"), "python3: an RSS track")
    pmarks = sorted((e["ph"], e["name"]) for e in ev if e["ph"] in ("i", "X", "B"))
    check(pmarks == [("X", "build"), ("i", "start")], f"python3: marks {pmarks}")

finish()
if not launcher:
    print("SKIP: the tracer is not built: no real program checked")
    sys.exit(77)
print("ok")
