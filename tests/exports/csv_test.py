#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport export --format csv, read back by Python's csv module and by the sqlite3 shell's
# `.import --csv`, on the standard fixture (tests/reports/fixture.c) with marks and ranges
# added: the header, one row per event plus the MSTX rows, the known rows, per-stack sums equal
# to `memreport stats --stacks --json`, the --thread and --range filters, and an imported NPU
# log (Event Type is the heap's name). With the tracer, the same counts and sums on python3
# traced with a mark and a range (real_program.py).
# Usage: csv_test.py MEMREPORT REPORTS_FIXTURE NPU_LOG WORKDIR [MEMTRACE_LAUNCHER]
import collections
import csv
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
HEADER = ["ID", "Event", "Event Type", "Name", "Timestamp(ns)", "Process Id", "Thread ID",
          "Device ID", "Ptr", "Attr", "Call Stack(C)"]
run = runner(memreport)


def export(cap, name, *opts):
    out = os.path.join(work, name)
    run("export", cap, "--format", "csv", "-f", "-o", out, *opts)
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, strict=True))
    check(rows and rows[0] == HEADER, f"{name}: header {rows[:1]}")
    return out, rows[1:]


def attr(row):
    # "{allocation_id:N,addr:0x...,size:N}" -> dict
    body = row[9]
    assert body.startswith("{") and body.endswith("}"), body
    return dict(kv.split(":", 1) for kv in body[1:-1].split(",")) if body != "{}" else {}


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
cap = os.path.join(work, "fx.db")
subprocess.run([fixture, cap], check=True)
# Marks as the tracer writes them (heap 1): a mark whose name needs quoting, a closed range on
# thread 100 and a range still open at the end. Events are at seq * 1000 ns.
db = sqlite3.connect(cap)
db.executemany("INSERT INTO mark(heap, kind, name, ts_begin, ts_end, tid) VALUES(1,?,?,?,?,?)",
               [("mark", 'load "config", fast', 2500, None, 100),
                ("range", "parse\nphase", 4500, 9500, 100),
                ("range", "open", 12500, None, 200)])
db.commit()
db.close()

stats = json.loads(run("stats", cap, "--json", "--stacks", "--top", "0"))
events = stats["allocations"] + stats["frees"]
out, rows = export(cap, "all.csv")

# One row per event and per MSTX row (mark, range start, range end), IDs 1..n in order.
mstx = [r for r in rows if r[1] == "MSTX"]
check(len(rows) == events + 4, f"rows {len(rows)} != events {events} + 4 MSTX rows")
check([r[0] for r in rows] == [str(i) for i in range(1, len(rows) + 1)], "IDs are 1..n")
check([(r[2], r[3], r[4], r[6]) for r in mstx] ==
      [("Mark", 'load "config", fast', "2500", "100"), ("Range_start", "parse\nphase", "4500", "100"),
       ("Range_end", "parse\nphase", "9500", "100"), ("Range_start", "open", "12500", "200")],
      f"MSTX rows {mstx}")
times = [int(r[4]) for r in rows]
check(times == sorted(times), "rows in time order")

heap = [r for r in rows if r[1] != "MSTX"]
check(all(r[2] == "HOST" and r[5] == "4242" and r[7] == "host" for r in heap),
      "Event Type HOST, pid 4242, device host")
check([r[1] for r in heap].count("MALLOC") == stats["allocations"], "MALLOC rows = allocations")
check(sum(int(attr(r)["size"]) for r in heap if r[1] == "MALLOC") == stats["bytes_allocated"],
      "MALLOC sizes sum to bytes_allocated")
by_ts = {int(r[4]): r for r in heap}
# seq 7: E's 64 bytes at 0x6000, allocated by an unnamed frame under main.
check(by_ts[7000][1] == "MALLOC" and attr(by_ts[7000]) ==
      {"allocation_id": "7", "addr": "0x6000", "size": "64"} and by_ts[7000][8] == "0x6000",
      f"seq 7 row {by_ts[7000]}")
check(by_ts[7000][10] == "prog+0x1234\nmain prog.c:10\n", f"seq 7 stack {by_ts[7000][10]!r}")
# A free carries the id and size of its allocation; realloc frees too; a block allocated
# before tracing started has id 0 and size 0.
check(attr(by_ts[3000]) == {"allocation_id": "2", "addr": "0x2000", "size": "200"}, "free of B")
check(by_ts[8000][6] == "200" and attr(by_ts[8000])["allocation_id"] == "6", "cross-row free")
check(by_ts[12000][1] == "FREE" and attr(by_ts[12000])["size"] == "300", "realloc's free")
check(attr(by_ts[14000]) == {"allocation_id": "0", "addr": "0x9999", "size": "0"},
      "unmatched free")



def check_site_sums(name, heap, stats):
    """The MALLOC rows summed per stack equal stats' rows (one per stack, leaf first)."""
    got = collections.Counter()
    for r in heap:
        if r[1] == "MALLOC":
            got[(r[10], "bytes")] += int(attr(r)["size"])
            got[(r[10], "count")] += 1
    want = collections.Counter()
    # by_count: every stack that allocated (by_bytes leaves out those of 0-byte blocks, which
    # CPython's allocators hand out).
    for s in stats["by_count"]:
        text = "".join(f"{f['function']} {f['file']}:{f['line']}\n" if f.get("file")
                       else f"{f['function']}\n" for f in s["stack"])
        want[(text, "bytes")] += s["bytes_allocated"]
        want[(text, "count")] += s["allocations"]
    check(+got == +want, f"{name}: per-stack sums {dict(got)} != stats {dict(want)}")


check_site_sums("fixture", heap, stats)

# The sqlite3 shell reads the same table.
sqlite3_cli = shutil.which("sqlite3")
if sqlite3_cli:
    dbpath = os.path.join(work, "import.db")
    p = subprocess.run([sqlite3_cli, dbpath, ".import --csv " + out + " ev",
                        "SELECT count(*), sum(Event = 'MSTX'), max(ID + 0) FROM ev;"],
                       capture_output=True, text=True)
    check(p.returncode == 0 and p.stdout.strip() == f"{len(rows)}|4|{len(rows)}",
          f"sqlite3 .import: {p.stdout!r} {p.stderr!r}")
    p = subprocess.run([sqlite3_cli, dbpath, "SELECT \"Call Stack(C)\" FROM ev WHERE \"Timestamp(ns)\" = '7000'"],
                       capture_output=True, text=True)
    check(p.stdout == "prog+0x1234\nmain prog.c:10\n\n", f"sqlite3 stack {p.stdout!r}")

# --thread keeps that thread's rows, --range the rows in the range (events and marks).
_, t200 = export(cap, "t200.csv", "--thread", "200")
check([(r[1], r[4]) for r in t200] == [("MALLOC", "6000"), ("FREE", "8000"),
                                       ("MALLOC", "11000"), ("MSTX", "12500")],
      f"--thread 200: {t200}")
_, ranged = export(cap, "range.csv", "--range", "4us..9us")
check([r[4] for r in ranged] == ["4000", "4500", "5000", "6000", "7000", "8000", "9000"],
      f"--range 4us..9us: {[r[4] for r in ranged]}")
check(attr(ranged[-1])["allocation_id"] == "9" and
      attr([r for r in ranged if r[4] == "8000"][0])["size"] == "5000",
      "a range still pairs frees with allocations made before it")

# A write error (stdout on a full device): one "memreport: ..." line and exit 3.
if os.path.exists("/dev/full"):
    with open("/dev/full", "wb") as full:
        p = subprocess.run([memreport, "export", cap, "--format", "csv", "-o", "-"],
                           stdout=full, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 3 and p.stderr.startswith("memreport: ") and
          p.stderr.count("\n") == 1, f"write error: exit {p.returncode}, {p.stderr!r}")

# An imported NPU log: Event Type is the heap's name, timestamps are steps.
npu = os.path.join(work, "npu.db")
run("import", npu_log, "-o", npu)
nsum = json.loads(run("summary", npu, "--json"))
_, nrows = export(npu, "npu.csv")
nheap = [r for r in nrows if r[1] != "MSTX"]
check(nheap and all(r[2] == "npu" and r[7] == "N/A" for r in nheap), "NPU rows name the heap")
check(len(nheap) == nsum["allocations"] + nsum["frees"],
      f"NPU rows {len(nheap)} != {nsum['allocations']} + {nsum['frees']} events")

# A real program: python3 with a point mark ("start", one Mark row) and a closed range
# ("build", a Range_start and a Range_end row); row count = events + MSTX rows, sums = stats.
if launcher:
    pcap, mstx_rows = trace_python(launcher, work)
    pstats = json.loads(run("stats", pcap, "--json", "--stacks", "--top", "0"))
    _, prows = export(pcap, "python3.csv")
    pevents = pstats["allocations"] + pstats["frees"]
    check(pevents > 5000, f"python3: only {pevents} events")
    check(len(prows) == pevents + mstx_rows,
          f"python3: rows {len(prows)} != events {pevents} + {mstx_rows} MSTX rows")
    check([(r[2], r[3]) for r in prows if r[1] == "MSTX"] ==
          [("Mark", "start"), ("Range_start", "build"), ("Range_end", "build")],
          f"python3: MSTX rows {[r[:5] for r in prows if r[1] == 'MSTX']}")
    pheap = [r for r in prows if r[1] != "MSTX"]
    check(sum(int(attr(r)["size"]) for r in pheap if r[1] == "MALLOC") ==
          pstats["bytes_allocated"], "python3: MALLOC sizes sum to bytes_allocated")
    check_site_sums("python3", pheap, pstats)

finish()
if not launcher:
    print("SKIP: the tracer is not built: no real program checked")
    sys.exit(77)
if not sqlite3_cli:
    print("SKIP: the sqlite3 shell is not installed (scripts/install-deps.sh --test)")
    sys.exit(77)
print(f"ok: {len(rows)} rows")
