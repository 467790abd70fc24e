#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the Python walk costs per allocation, by depth: bench/python/workload.py's `depth D N`
(N bytearrays made D Python frames deep, 6 allocations an iteration) traced with Python frames
(MEMTRACE_PYTHON=1) and without (0), for D in BENCH_DEPTHS (1,5,20). The workload reports
its own thread's CPU time in the loop (the hooks' cost; the writer thread's is not in it),
so the machine's load matters less than for wall time; the walk's cost per allocation is
the difference between the two, over the allocations the loop made. Given a second build
dir, both tracers run interleaved: before and after side by side.

Usage: bench/python_walk.py [BUILD_DIR] [BASE_BUILD_DIR]   (default build/; PYTHON, python3)
Nothing is asserted: it prints a table (and replaces its section of bench/results.txt)."""
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
builds = [os.path.abspath(a) for a in sys.argv[1:3]] or [os.path.join(HERE, "..", "build")]
python = os.environ.get("PYTHON", "python3")
reps = int(os.environ.get("BENCH_REPS", "7"))
n = int(os.environ.get("BENCH_N", "200000"))
depths = [int(d) for d in os.environ.get("BENCH_DEPTHS", "1,5,20").split(",")]
work = tempfile.mkdtemp(prefix="bench-python-walk-")
workload = os.path.join(HERE, "python", "workload.py")


def launcher(build):
    for p in (os.path.join(build, "preload", "memtrace"), os.path.join(build, "memtrace")):
        if os.path.exists(p):
            return p
    sys.exit(f"python_walk.py: no memtrace launcher in {build}")


def run(build, frames, depth, count):
    """The loop's CPU ns on the program's thread, and the allocations recorded."""
    cap = os.path.join(work, "cap.db")
    env = dict(os.environ, MEMTRACE_PYTHON=str(frames))
    env.pop("PYTHONMALLOC", None)
    out = subprocess.run([launcher(build), "-f", "-o", cap, "--", python, workload,
                          "depth", str(depth), str(count)], env=env, check=True,
                         capture_output=True, text=True, cwd=work).stdout
    with sqlite3.connect(cap) as db:
        allocs = sum(c for name, c in db.execute("SELECT name, count FROM call_count")
                     if name.split("_")[-1] in ("malloc", "calloc", "realloc"))
    os.unlink(cap)
    return int(out.split()[-1]), allocs


rows = []
for depth in depths:
    # The loop's allocations: those of a run of n, less those of a run of none.
    loop_allocs = run(builds[0], 0, depth, n)[1] - run(builds[0], 0, depth, 0)[1]
    ns = {}
    for _ in range(reps):  # interleaved, so that load drifts hit every run alike
        for b in builds:
            for frames in (0, 1):
                ns.setdefault((b, frames), []).append(run(b, frames, depth, n)[0])
    med = {k: statistics.median(v) for k, v in ns.items()}
    rows.append((depth, loop_allocs, med))
    print(f"depth {depth}: done", file=sys.stderr)

version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                         capture_output=True, text=True).stdout.strip()
names = ["this build"] if len(builds) == 1 else ["after", "before"]
lines = [f"== python_walk: the Python walk's CPU per allocation by depth (bench/python_walk.py,"
         f" {version}, {n} iterations of 6 allocations, median of {reps})",
         "| Python frames | build | loop CPU ns/allocation, frames off | frames on "
         "| Python walk ns/allocation |",
         "| --- | --- | --- | --- | --- |"]
for depth, allocs, med in rows:
    for b, name in zip(builds, names):
        off, on = med[(b, 0)] / allocs, med[(b, 1)] / allocs
        lines.append(f"| {depth} | {name} | {off:.0f} | {on:.0f} | {on - off:.0f} |")
table = "\n".join(lines) + "\n"
print(table)
results = os.path.join(HERE, "results.txt")
old = open(results).read() if os.path.exists(results) else ""
start = old.find("== python_walk: ")
if start >= 0:
    end = old.find("\n== ", start + 1)
    old = old[:start] + (old[end + 1:] if end >= 0 else "")
with open(results, "w") as f:
    f.write(old.rstrip("\n") + ("\n\n" if old.strip() else "") + table)
