#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a SIGKILL loses: a paced program (one allocation every 100 us) is killed at a random
moment, and the allocations it made (counted in a shared file) are compared with those in
its capture. Prints the loss in ms (median, p90, max) for each commit period, and how often a
program killed 20-40 ms after its start left any event. No timing is asserted anywhere.

Usage: bench/kill/kill.py BUILD_DIR [KILLS]   (settings: KILL_COMMIT_MS="100 10")
"""
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

PERIOD_US = 100


def one_kill(build, tmp, commit_ms, delay_s, n):
    cap = os.path.join(tmp, f"k{commit_ms}.{n}.db")
    count = os.path.join(tmp, f"k{commit_ms}.{n}.count")
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, "preload", "libmemtrace.so"),
               MEMTRACE_OUTPUT=cap, MEMTRACE_COMMIT_MS=str(commit_ms), MEMTRACE_SYMBOL_CACHE="0")
    p = subprocess.Popen([os.path.join(build, "bench", "bench_paced"), count, str(PERIOD_US)],
                         env=env)
    time.sleep(delay_s)
    p.send_signal(signal.SIGKILL)
    p.wait()
    with open(count, "rb") as f:
        made = int.from_bytes(f.read(8), "little")
    r = subprocess.run([os.path.join(build, "reporter", "memreport"), "summary", "--json", cap],
                       capture_output=True, text=True)
    recorded = json.loads(r.stdout)["allocations"] if r.returncode == 0 else 0
    for f in (cap, cap + "-wal", count):
        if os.path.exists(f):
            os.unlink(f)
    return made, recorded


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    kills = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    settings = [int(x) for x in os.environ.get("KILL_COMMIT_MS", "100 10").split()]
    rng = random.Random(9)
    delays = [rng.uniform(0.02, 0.5) for _ in range(kills)]
    early = [rng.uniform(0.02, 0.04) for _ in range(max(10, kills // 5))]
    with tempfile.TemporaryDirectory(prefix="memtrace-kill.") as tmp:
        for ms in settings:
            lost = []
            for n, d in enumerate(delays):
                made, recorded = one_kill(build, tmp, ms, d, n)
                lost.append((made - recorded) * PERIOD_US / 1000)
            kept = sum(1 for n, d in enumerate(early)
                       if one_kill(build, tmp, ms, d, 1000 + n)[1] > 0)
            lost.sort()
            print(f"MEMTRACE_COMMIT_MS={ms}: {kills} kills at 20-500 ms: lost median "
                  f"{statistics.median(lost):.1f} ms, p90 {lost[int(0.9 * (kills - 1))]:.1f} ms, "
                  f"max {lost[-1]:.1f} ms; killed at 20-40 ms: {kept}/{len(early)} left events")


if __name__ == "__main__":
    main()
