#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a SIGKILL loses. bench_paced runs traced and is killed at a random moment; its threads
count the allocations they made in a shared file mapping, with a timeline of the total (one
point a millisecond), and the time lost is from the moment that total was the number of
allocations in the capture to the kill. The program's exit watcher (docs/tracer.md) finishes
each capture after the kill; the bench waits for it. Two parts, each printing the loss in ms
(median, p90, max), the captures left with no event and those left truncated:
- paced: one thread, one allocation every 100 us, for each commit period (KILL_COMMIT_MS),
  killed 20-500 ms after its start; and how often one killed 20-40 ms after its start left
  any event;
- busy: 1, 2 and 8 threads allocating without pause (KILL_THREADS), at the default commit
  period, killed at random between KILL_BUSY_S seconds (default "0.05 3") after the start.
No timing is asserted anywhere.

Usage: bench/kill/kill.py BUILD_DIR [KILLS]
Settings: KILL_COMMIT_MS="100 10", KILL_THREADS="1 2 8", KILL_BUSY_S="0.05 3",
KILL_PROG (default BUILD_DIR/bench/bench_paced: a tracer built without the bench can be
measured with another build's workload), KILL_PARTS="paced busy".
"""
import json
import os
import random
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
from checks import exit_watchers  # noqa: E402

PERIOD_US = 100
TIMELINE = 8192  # bench_paced.c: where its timeline starts in the count file


def one_kill(build, prog, tmp, name, args, env_extra, delay_s):
    """Runs bench_paced ARGS traced, kills it after delay_s; returns (ms lost, allocations in
    the capture, whether the capture was finished)."""
    cap = os.path.join(tmp, f"{name}.db")
    count = os.path.join(tmp, f"{name}.count")
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, "preload", "libmemtrace.so"),
               MEMTRACE_OUTPUT=cap, MEMTRACE_SYMBOL_CACHE="0", MEMTRACE_SYMBOLIZE="0",
               **env_extra)
    p = subprocess.Popen([prog, count, *args], env=env)
    time.sleep(delay_s)
    killed = time.monotonic_ns()  # CLOCK_MONOTONIC, as the timeline's
    p.send_signal(signal.SIGKILL)
    p.wait()
    for _ in range(400):  # the watcher finishes the capture (10 s at most)
        if not exit_watchers(cap):
            break
        time.sleep(0.05)
    data = b""  # killed before the program made its file
    if os.path.exists(count):
        with open(count, "rb") as f:
            data = f.read()
    n = struct.unpack_from("<Q", data, 0)[0] if data else 0
    points = [struct.unpack_from("<QQ", data, TIMELINE + 16 * i) for i in range(n)]
    r = subprocess.run([os.path.join(build, "reporter", "memreport"), "summary", "--json", cap],
                       capture_output=True, text=True)
    summary = json.loads(r.stdout) if r.returncode == 0 else {}
    recorded = summary.get("allocations", 0)
    finished = summary.get("status") == "complete"
    for f in (cap, cap + "-wal", count):
        if os.path.exists(f):
            os.unlink(f)
    # The recorded total was reached between two points: taken linearly between them.
    at = points[0][0] if points else killed
    for i, (t, total) in enumerate(points):
        if total >= recorded:
            if i > 0 and total > points[i - 1][1]:
                t0, n0 = points[i - 1]
                at = t0 + (t - t0) * (recorded - n0) / (total - n0)
            else:
                at = t
            break
    else:
        at = killed
    return max(0.0, (killed - at) / 1e6), recorded, finished


def line(what, runs):
    lost = sorted(r[0] for r in runs)
    none = sum(1 for r in runs if not r[1])
    truncated = sum(1 for r in runs if not r[2])
    return (f"{what}: {len(lost)} kills: lost median {statistics.median(lost):.1f} ms, "
            f"p90 {lost[int(0.9 * (len(lost) - 1))]:.1f} ms, max {lost[-1]:.1f} ms; "
            f"{none} with no event, {truncated} truncated")


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    kills = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    prog = os.environ.get("KILL_PROG", os.path.join(build, "bench", "bench_paced"))
    parts = os.environ.get("KILL_PARTS", "paced busy").split()
    settings = [int(x) for x in os.environ.get("KILL_COMMIT_MS", "100 10").split()]
    threads = [int(x) for x in os.environ.get("KILL_THREADS", "1 2 8").split()]
    lo, hi = (float(x) for x in os.environ.get("KILL_BUSY_S", "0.05 3").split())
    rng = random.Random(9)
    delays = [rng.uniform(0.02, 0.5) for _ in range(kills)]
    early = [rng.uniform(0.02, 0.04) for _ in range(max(10, kills // 5))]
    busy = [rng.uniform(lo, hi) for _ in range(kills)]
    with tempfile.TemporaryDirectory(prefix="memtrace-kill.") as tmp:
        for ms in settings if "paced" in parts else []:
            env = {"MEMTRACE_COMMIT_MS": str(ms)}
            runs = [one_kill(build, prog, tmp, f"k{ms}.{n}", [str(PERIOD_US)], env, d)
                    for n, d in enumerate(delays)]
            kept = sum(1 for n, d in enumerate(early)
                       if one_kill(build, prog, tmp, f"e{ms}.{n}", [str(PERIOD_US)], env, d)[1])
            print(line(f"paced, MEMTRACE_COMMIT_MS={ms}, killed at 20-500 ms", runs) +
                  f"; killed at 20-40 ms: {kept}/{len(early)} left events", flush=True)
        for nt in threads if "busy" in parts else []:
            runs = [one_kill(build, prog, tmp, f"b{nt}.{n}", ["0", str(nt)], {}, d)
                    for n, d in enumerate(busy)]
            print(line(f"busy, {nt} thread{'s' if nt > 1 else ''}, killed at {lo:g}-{hi:g} s",
                       runs), flush=True)


if __name__ == "__main__":
    main()
