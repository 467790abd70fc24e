#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Instructions per event, counted by callgrind: a measure of the tracer's cost that the load of
# a shared machine leaves alone (wall and cpu ratios, bench/run.py's, move by 20-50% there).
# Each workload of bench/run.py runs under callgrind at two sizes (INSTR_EVENTS, default
# 200000 and 600000 events); the difference of the two counts over the difference of events is
# the cost of an event, start-up and exit left out. Per mode (native, floor-fp, mt-auto) and
# per build dir given: instructions an event in all threads, and of memtrace's the hook path
# (the functions of preload/record and preload/hooks: what the program's threads pay) and the
# rest of libmemtrace.so (the writer thread: encoding, zstd, SQLite, the live set).
# The exit watcher is off (MEMTRACE_EXIT_WATCH=0): valgrind cannot run its clone(). The
# symbol cache is warm (a first short run fills it). Asserts nothing.
# Usage: bench/instr.py BUILD_DIR [BUILD_DIR...]   (settings: INSTR_WORKLOADS, default
# cxx,cxx_fp,xt4,xt4_fp,st_fp,rs_fp; INSTR_MODES native,floor-fp,mt-auto; INSTR_EVENTS
# 200000,600000; BENCH_WORK, default 0 here: dense heap calls; BENCH_RESULTS)
import collections
import datetime
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import results_file
from run import WORKLOADS, git_rev

# Valgrind names a source file under its working directory relatively: the runs are made
# elsewhere (cwd tmp), and the patterns take either form.
HOOK_PATH = re.compile(r"(^|/)preload/(record|hooks)/|stackhash\.h|unwind_cache\.h")
WRITER_SIDE = re.compile(r"clock_to_ns|calibrate")  # record/clock.c, run by the writer
TRACER = re.compile(r"libmemtrace\.so|(^|/)(preload|common)/")


def self_costs(outs):
    """Instructions of each function (self cost), summed over callgrind's per-thread files."""
    r = collections.Counter()
    for f in outs:
        text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100",
                               "--auto=no", f], capture_output=True, text=True).stdout
        for line in text.splitlines():
            m = re.match(r"\s*([\d,]+)\s+(?:\([\d. %]+\)\s+)?(.*)$", line)
            if m and ":" in m.group(2) and not m.group(2).startswith("=>"):
                r[m.group(2)] += int(m.group(1).replace(",", ""))
    return r


def measure(build, binary, args, mode, sizes, tmp):
    """(all, hooks, writer) instructions per event, or None if a run failed."""
    exe = os.path.join(build, "bench", binary)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMTRACE_") and k != "LD_PRELOAD"}
    env["BENCH_WORK"] = os.environ.get("BENCH_WORK", "0")
    if mode == "floor-fp":
        env["LD_PRELOAD"] = os.path.join(build, "bench", "libbench_floor_fp.so")
    elif mode == "mt-auto":
        env.update(LD_PRELOAD=os.path.join(build, "preload", "libmemtrace.so"),
                   MEMTRACE_UNWIND="auto", MEMTRACE_EXIT_WATCH="0",
                   MEMTRACE_OUTPUT=os.path.join(tmp, "capture.db"),
                   MEMTRACE_SYMBOL_CACHE=os.path.join(tmp, "symbols.db"))
        subprocess.run([exe] + args, env=dict(env, BENCH_EVENTS="2000"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    costs = []
    for n in sizes:
        out = os.path.join(tmp, f"cg.{n}")
        # /usr/bin/valgrind is a shell script: the preloaded tracer sees it too (its own
        # capture, not counted: callgrind counts the program only).
        r = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                            f"--callgrind-out-file={out}", exe] + args,
                           env=dict(env, BENCH_EVENTS=str(n)), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, cwd=tmp)
        outs = glob.glob(out + "*")
        if r.returncode != 0 or not outs:
            return None
        costs.append(self_costs(outs))
        for f in outs + glob.glob(os.path.join(tmp, "capture*")):
            os.unlink(f)
    ev = sizes[1] - sizes[0]
    d = {k: (costs[1][k] - costs[0][k]) / ev for k in set(costs[0]) | set(costs[1])}
    hooks = sum(v for k, v in d.items() if HOOK_PATH.search(k) and not WRITER_SIDE.search(k))
    tracer = sum(v for k, v in d.items() if TRACER.search(k))
    return sum(d.values()), hooks, tracer - hooks


def main():
    if len(sys.argv) < 2:
        print("usage: instr.py BUILD_DIR [BUILD_DIR...]", file=sys.stderr)
        return 1
    if not shutil.which("valgrind"):
        print("instr: valgrind is missing (scripts/install-deps.sh --test installs it)",
              file=sys.stderr)
        return 1
    builds = [os.path.abspath(b) for b in sys.argv[1:]]
    names = os.environ.get("INSTR_WORKLOADS", "cxx,cxx_fp,xt4,xt4_fp,st_fp,rs_fp").split(",")
    modes = os.environ.get("INSTR_MODES", "native,floor-fp,mt-auto").split(",")
    sizes = [int(x) for x in os.environ.get("INSTR_EVENTS", "200000,600000").split(",")]
    tmp = tempfile.mkdtemp(prefix="memtrace-instr.", dir=os.environ.get("BENCH_TMP"))
    rows = []
    try:
        for name, binary, args in WORKLOADS:
            if name not in names:
                continue
            native = None
            for mode in modes:
                for build in builds if mode == "mt-auto" else builds[:1]:
                    print(f"  {name} {mode} {build}", file=sys.stderr, flush=True)
                    m = measure(build, binary, args, mode, sizes, tmp)
                    if mode == "native" and m:
                        native = m[0]
                    rows.append((name, mode, build, m, native))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines = [f"instr.py, {now}, git {git_rev()}, BENCH_WORK={os.environ.get('BENCH_WORK', '0')}, "
             f"events {sizes[0]} and {sizes[1]}; instructions an event (callgrind):"]
    for i, b in enumerate(builds):
        lines.append(f"  build {i + 1}: {b}")
    hdr = f"{'workload':8} {'mode':9} {'build':>5} {'all':>8} {'x native':>9} {'hooks':>7} {'writer':>7}"
    lines += [hdr, "-" * len(hdr)]
    for name, mode, build, m, native in rows:
        if not m:
            lines.append(f"{name:8} {mode:9} {builds.index(build) + 1:5}  (a run failed)")
            continue
        total, hooks, writer = m
        x = f"{total / native:9.2f}" if native else f"{'-':>9}"
        h, w = (f"{hooks:7.1f}", f"{writer:7.1f}") if mode == "mt-auto" else ("      -",) * 2
        lines.append(f"{name:8} {mode:9} {builds.index(build) + 1:5} {total:8.1f} {x} {h} {w}")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    results_file.write(title="instructions per event (bench/instr.py)", section=text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
