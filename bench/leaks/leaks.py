#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The leak scan's cost (docs/leaks.md): leak_heap with N blocks of SIZE bytes traced with
# MEMTRACE_LEAKS=1 and 0; the scan's wall and CPU time, the memory it scanned (roots, and
# roots plus the blocks' contents) from the capture's meta, the traced process's CPU time
# (its scanning copy's included) and max RSS either way. CPU, not wall: on a loaded machine
# the wall time is the scheduler's. Measures; asserts nothing.
# Usage: bench/leaks/leaks.py BUILD_DIR [N:SIZE ...]   (default 100000:100 1000000:100
#        10000000:100 1000000:1000)
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile


def run(build, n, size, leaks, tmp):
    cap = os.path.join(tmp, f"h{n}-{size}-{leaks}.db")
    env = dict(os.environ, MEMTRACE_OUTPUT=cap, MEMTRACE_LEAKS=str(leaks),
               LD_PRELOAD=os.path.join(build, "preload", "libmemtrace.so"))
    p = subprocess.Popen([os.path.join(build, "bench", "leak_heap"), str(n), str(size)], env=env)
    _, status, ru = os.wait4(p.pid, 0)
    cpu = ru.ru_utime + ru.ru_stime  # with the scanning copy, which the process waited for
    db = sqlite3.connect(cap)
    meta = dict(db.execute("SELECT key, value FROM meta WHERE key LIKE 'leak_scan%'"))
    db.close()
    os.unlink(cap)
    return cpu, ru.ru_maxrss / 1024, meta


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    cases = [tuple(int(x) for x in c.split(":")) for c in sys.argv[2:]] or \
        [(100000, 100), (1000000, 100), (10000000, 100), (1000000, 1000)]
    tmp = tempfile.mkdtemp(prefix="memtrace-leaks-")
    print(f"{'blocks':>9} {'size':>5} {'heap MiB':>8} | {'scan ms':>8} {'scan cpu ms':>11} "
          f"{'roots MiB':>9} {'scanned MiB':>11} | {'cpu s':>6} {'cpu s off':>9} | "
          f"{'RSS MiB':>7} {'RSS MiB off':>11}")
    for n, size in cases:
        w1, r1, m = run(build, n, size, 1, tmp)
        w0, r0, _ = run(build, n, size, 0, tmp)
        ok = m.get("leak_scan") == "complete"
        scan = int(m.get("leak_scan_ns", 0)) / 1e6
        scan_cpu = int(m.get("leak_scan_cpu_ns", 0)) / 1e6
        roots = int(m.get("leak_scan_roots_bytes", 0)) / 2**20
        scanned = int(m.get("leak_scan_bytes", 0)) / 2**20
        print(f"{n:>9} {size:>5} {n * size / 2**20:>8.0f} | "
              f"{scan if ok else float('nan'):>8.0f} {scan_cpu:>11.0f} {roots:>9.1f} "
              f"{scanned:>11.0f} | {w1:>6.2f} {w0:>9.2f} | {r1:>7.0f} {r0:>11.0f}" +
              ("" if ok else f"  (no scan: {m.get('leak_scan_why')})"), flush=True)
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
