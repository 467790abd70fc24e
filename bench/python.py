#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What Python frames cost: bench/python/workload.py (json round trip, 30-deep recursion)
under PYTHONMALLOC=malloc and the default, run natively, traced with Python frames
(MEMTRACE_PYTHON=1), traced without (MEMTRACE_PYTHON=0) and under heaptrack; median wall and
CPU (user + sys) of BENCH_REPS (5) runs, and the CPU the Python walk adds per allocation.

Usage: bench/python.py [BUILD_DIR] [PYTHON]    (default build/, python3)
Nothing is asserted: it prints a table (and replaces its section of bench/results.txt)."""
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build"))
python = sys.argv[2] if len(sys.argv) > 2 else "python3"
launcher = os.path.join(build, "preload", "memtrace")
reps = int(os.environ.get("BENCH_REPS", "5"))
work = tempfile.mkdtemp(prefix="bench-python-")


def run(argv, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, cwd=work)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def allocations(cap):
    with sqlite3.connect(cap) as db:
        return sum(n for name, n in db.execute("SELECT name, count FROM call_count")
                   if name in ("malloc", "calloc", "realloc"))


rows = []
for workload in ("json", "deep"):
    for pymalloc in ("malloc", "default"):
        env = dict(os.environ)
        if pymalloc == "malloc":
            env["PYTHONMALLOC"] = "malloc"
        argv = [python, os.path.join(HERE, "python", "workload.py"), workload]
        res = {}
        modes = [("native", argv, {}),
                 ("frames", [launcher, "-f", "-o", "cap.db", "--"] + argv, {"MEMTRACE_PYTHON": "1"}),
                 ("no frames", [launcher, "-f", "-o", "cap.db", "--"] + argv,
                  {"MEMTRACE_PYTHON": "0"})]
        if shutil.which("heaptrack"):
            modes.append(("heaptrack", ["heaptrack", "-o", os.path.join(work, "ht")] + argv, {}))
        for _ in range(reps):  # interleaved, so that load drifts hit every mode alike
            for name, a, extra in modes:
                res.setdefault(name, []).append(run(a, dict(env, **extra)))
        n = allocations(os.path.join(work, "cap.db"))
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for k, v in res.items()}
        added = (med["frames"][1] - med["no frames"][1]) / n * 1e9 if n else float("nan")
        rows.append((workload, pymalloc, n, med, added))
        print(f"{workload} {pymalloc}: done", file=sys.stderr)

lines = ["== python: Python frames (bench/python.py, %s, median of %d)" %
         (subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                         capture_output=True, text=True).stdout.strip(), reps),
         "| workload | PYTHONMALLOC | allocations | native wall/cpu s | frames wall/cpu (x) "
         "| no frames wall/cpu (x) | heaptrack wall/cpu (x) | walk ns/alloc |",
         "| --- | --- | --- | --- | --- | --- | --- | --- |"]
for workload, pymalloc, n, med, added in rows:
    nw, nc = med["native"]

    def cell(k):
        if k not in med:
            return "-"
        w, c = med[k]
        return f"{w:.2f}/{c:.2f} ({w / nw:.2f}x/{c / nc:.2f}x)"
    lines.append(f"| {workload} | {pymalloc} | {n} | {nw:.2f}/{nc:.2f} | {cell('frames')} | "
                 f"{cell('no frames')} | {cell('heaptrack')} | {added:.0f} |")
table = "\n".join(lines) + "\n"
print(table)
results = os.path.join(HERE, "results.txt")
old = open(results).read() if os.path.exists(results) else ""
start = old.find(lines[0].split(" (")[0])
if start >= 0:
    end = old.find("\n== ", start + 1)
    old = old[:start] + (old[end + 1:] if end >= 0 else "")
with open(results, "w") as f:
    f.write(old.rstrip("\n") + ("\n\n" if old.strip() else "") + table)
shutil.rmtree(work, ignore_errors=True)
