#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# What tracing costs a short-lived program: start-up, capture creation, finalization and
# naming the frames at exit, which a 10-million-event run hides. Real programs nobody here
# wrote, each run natively and under libmemtrace.so side by side (interleaved), with the
# symbol cache warm (a second trace of the same program), cold (no cache: DWARF read at every
# exit) and with MEMTRACE_SYMBOLIZE=0. Prints the median wall time of each; asserts nothing.
# Usage: bench/short.py [BUILD_DIR]   (settings: SHORT_REPS, default 9)
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = [
    ("true", ["/bin/true"]),
    ("ls", ["ls", "/usr/lib"]),
    ("sqlite3", ["sqlite3", ":memory:", "select 1"]),
    ("git status", ["git", "-C", os.path.dirname(HERE), "status", "--short"]),
    ("python3", ["/usr/bin/python3", "-c", "pass"]),
]


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    lib = os.path.join(build, "preload", "libmemtrace.so")
    if not os.path.exists(lib):
        sys.exit(f"short.py: no {lib}: build first (make build)")
    reps = int(os.environ.get("SHORT_REPS", "9"))
    tmp = tempfile.mkdtemp(prefix="memtrace-short.")
    cache = os.path.join(tmp, "symbols.db")
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMTRACE_")}
    base.pop("LD_PRELOAD", None)
    traced = dict(base, LD_PRELOAD=lib, MEMTRACE_OUTPUT=os.path.join(tmp, "cap.%p.db"))
    modes = [
        ("native", base),
        ("warm", dict(traced, MEMTRACE_SYMBOL_CACHE=cache)),
        ("cold", dict(traced, MEMTRACE_SYMBOL_CACHE="0")),
        ("no names", dict(traced, MEMTRACE_SYMBOLIZE="0")),
    ]
    rows = []
    for name, argv in PROGRAMS:
        if not shutil.which(argv[0]):
            continue
        # Fills the cache for "warm", as a first trace of the program would.
        subprocess.run(argv, env=modes[1][1], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times = {m: [] for m, _ in modes}
        for _ in range(reps):
            for mode, env in modes:
                t0 = time.monotonic()
                subprocess.run(argv, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                times[mode].append((time.monotonic() - t0) * 1000)
                for f in os.listdir(tmp):
                    if f.startswith("cap."):
                        os.unlink(os.path.join(tmp, f))
        rows.append((name, {m: statistics.median(v) for m, v in times.items()}))
    shutil.rmtree(tmp, ignore_errors=True)

    print(f"median wall ms of {reps} runs each (interleaved); in brackets: added to native")
    print(f"{'program':12} " + " ".join(f"{m:>16}" for m, _ in modes))
    for name, med in rows:
        cells = [f"{med['native']:16.1f}"]
        for mode, _ in modes[1:]:
            cells.append(f"{med[mode]:7.1f} (+{med[mode] - med['native']:5.1f})")
        print(f"{name:12} " + " ".join(cells))


if __name__ == "__main__":
    main()
