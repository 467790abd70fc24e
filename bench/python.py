#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What tracing a Python program costs: bench/python/workload.py (json round trip, 30-deep
recursion) run natively (pymalloc, and PYTHONMALLOC=malloc), traced as it is (CPython's
allocators recorded as heap python), traced with --python-malloc (every object a malloc),
each with Python frames (MEMTRACE_PYTHON=1) and without (MEMTRACE_PYTHON=0), sampled
(MEMTRACE_SAMPLE_BYTES=524288), beside Python's own tracemalloc (-X tracemalloc=1: every
allocation with its innermost Python line, and =25 with BENCH_TRACEMALLOC_DEEP=1: each run
takes about a minute) and heaptrack; median wall and CPU (user + sys, the writer thread's included) of BENCH_REPS (5)
runs, each against the native pymalloc run, and the CPU the Python walk adds per allocation.

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
    """Allocations recorded: malloc's kin and CPython's allocators' (python_malloc...)."""
    with sqlite3.connect(cap) as db:
        return sum(n for name, n in db.execute("SELECT name, count FROM call_count")
                   if name.split("_")[-1] in ("malloc", "calloc", "realloc"))


def traced(name, extra_opts, frames):
    cap = name.replace(" ", "_").replace(",", "").replace("-", "") + ".db"
    return (name, lambda argv: [launcher, "-f", "-o", cap, *extra_opts, "--"] + argv,
            {"MEMTRACE_PYTHON": "1" if frames else "0"}, cap)


def sampled(name, interval):
    """A traced mode sampled by bytes: its capture's count is of sampled allocations only."""
    _name, wrap, env, _cap = traced(name, [], True)
    return (name, wrap, dict(env, MEMTRACE_SAMPLE_BYTES=str(interval)), None)


# (name, argv of the workload's argv, environment added, capture)
MODES = [("native", lambda argv: argv, {}, None),
         ("native PYTHONMALLOC=malloc", lambda argv: argv, {"PYTHONMALLOC": "malloc"}, None),
         traced("heap python", [], True),
         traced("heap python, no frames", [], False),
         traced("--python-malloc", ["--python-malloc"], True),
         traced("--python-malloc, no frames", ["--python-malloc"], False),
         sampled("heap python, sampled 512 KiB", 524288),
         ("tracemalloc 1 frame", lambda argv: argv[:1] + ["-X", "tracemalloc=1"] + argv[1:], {},
          None)]
if os.environ.get("BENCH_TRACEMALLOC_DEEP") == "1":
    MODES.append(("tracemalloc 25 frames",
                  lambda argv: argv[:1] + ["-X", "tracemalloc=25"] + argv[1:], {}, None))
if shutil.which("heaptrack"):
    ht = os.path.join(work, "ht")
    MODES += [("heaptrack", lambda argv: ["heaptrack", "-o", ht] + argv, {}, None),
              ("heaptrack PYTHONMALLOC=malloc", lambda argv: ["heaptrack", "-o", ht] + argv,
               {"PYTHONMALLOC": "malloc"}, None)]

rows = []
for workload in ("json", "deep"):
    argv = [python, os.path.join(HERE, "python", "workload.py"), workload]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONMALLOC", "MEMTRACE_PYTHON")}
    res = {}
    for _ in range(reps):  # interleaved, so that load drifts hit every mode alike
        for name, wrap, extra, _cap in MODES:
            res.setdefault(name, []).append(run(wrap(argv), dict(env, **extra)))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in res.items()}
    n = {name: allocations(os.path.join(work, cap)) for name, _w, _e, cap in MODES if cap}
    rows.append((workload, med, n))
    print(f"{workload}: done", file=sys.stderr)

version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                         capture_output=True, text=True).stdout.strip()
lines = [f"== python: Python programs traced (bench/python.py, {version}, median of {reps})",
         "| workload | mode | allocations recorded | wall s | CPU s | wall x | CPU x "
         "| Python walk ns/allocation |",
         "| --- | --- | --- | --- | --- | --- | --- | --- |"]
for workload, med, n in rows:
    nw, nc = med["native"]
    for name, _w, _e, cap in MODES:
        w, c = med[name]
        walk = ""
        if cap and not name.endswith("no frames") and n.get(name):
            c0 = med[name + ", no frames"][1]
            walk = f"{(c - c0) / n[name] * 1e9:.0f}"
        lines.append(f"| {workload} | {name} | {n.get(name, '')} | {w:.2f} | {c:.2f} | "
                     f"{w / nw:.2f} | {c / nc:.2f} | {walk} |")
table = "\n".join(lines) + "\n"
print(table)
results = os.path.join(HERE, "results.txt")
old = open(results).read() if os.path.exists(results) else ""
start = old.find("== python: ")
if start >= 0:
    end = old.find("\n== ", start + 1)
    old = old[:start] + (old[end + 1:] if end >= 0 else "")
with open(results, "w") as f:
    f.write(old.rstrip("\n") + ("\n\n" if old.strip() else "") + table)
shutil.rmtree(work, ignore_errors=True)
