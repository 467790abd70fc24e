#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Traces one program under MEMTRACE_UNWIND=auto and =libunwind and checks that both give
exactly the same allocation stacks (every frame, noise included) with the same counts; with
DEPTH, both under MEMTRACE_DEPTH=DEPTH (stacks cut to their leaf-most DEPTH frames).
usage: compare_unwinders.py MEMTRACE MEMREPORT PROGRAM [DEPTH]"""
import json
import os
import subprocess
import sys
import tempfile


def stacks(memtrace, memreport, prog, mode, tmp, depth):
    cap = os.path.join(tmp, f"{mode}.db")
    env = dict(os.environ, MEMTRACE_UNWIND=mode)
    if depth:
        env["MEMTRACE_DEPTH"] = depth
    run = subprocess.run([memtrace, "-o", cap, "--", prog], env=env, capture_output=True)
    if run.returncode != 0:
        sys.exit(f"FAIL: {mode}: exit {run.returncode}: {run.stderr.decode()}")
    out = subprocess.run([memreport, "stacks", "--json", "--all-frames", "--top", "0", cap],
                         capture_output=True, check=True).stdout
    doc = json.loads(out)
    result = {}
    for s in doc["stacks"]:
        key = tuple((f.get("function"), f.get("file"), f.get("line")) for f in s["frames"])
        result[key] = (s["count"], s["bytes"])
    return result, run.stdout


def main():
    memtrace, memreport, prog = sys.argv[1:4]
    depth = sys.argv[4] if len(sys.argv) > 4 else None
    with tempfile.TemporaryDirectory() as tmp:
        auto, out_a = stacks(memtrace, memreport, prog, "auto", tmp, depth)
        ref, out_r = stacks(memtrace, memreport, prog, "libunwind", tmp, depth)
    failures = 0
    if out_a != out_r:
        print("FAIL: program output differs between the two runs")
        failures += 1
    for key in sorted(set(auto) | set(ref), key=str):
        if auto.get(key) != ref.get(key):
            failures += 1
            if failures <= 5:
                print(f"FAIL: stack differs: auto {auto.get(key)} libunwind {ref.get(key)}")
                for f in key:
                    print(f"    {f}")
    deepest = max((len(k) for k in ref), default=0)
    print(f"{len(ref)} distinct stacks (deepest {deepest} frames), "
          f"{sum(c for c, _ in ref.values())} allocations compared")
    if len(ref) < 50 or deepest < (int(depth) if depth else 20):
        print("FAIL: the program did not produce the variety of stacks this test needs")
        failures += 1
    print(f"{0 if failures else 1} passed, {1 if failures else 0} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
