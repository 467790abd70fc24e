#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Stacks through code without unwind info but with frame pointers (no_unwind_info.c), called
from code with it (no_unwind_info_main.c): under MEMTRACE_UNWIND=auto every allocation has
exactly the stack MEMTRACE_UNWIND=libunwind (unw_backtrace) gives it, also for code with unwind
info reached through a call site or a thread start that code without it used first; each
path's stack holds the path from its leaf to main, as the frame-pointer walk
(MEMTRACE_UNWIND=fp) has it.

Usage: check_no_unwind_info.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures, fresh_dir, traced  # noqa: E402

ALLOCS = 40  # per path (no_unwind_info.c)


def trace(launcher, memreport, prog, work, mode):
    """({size: [(count, frames innermost first)]}, {path id: [f.., ...]}) of one run."""
    db = os.path.join(work, f"{mode}.db")
    r = traced(launcher, db, [prog], UNWIND=mode)
    if r.returncode != 0:
        sys.exit(f"FAIL: {mode}: the program ran ({r.returncode}: {r.stderr.strip()})")
    paths = {}
    for line in r.stdout.splitlines():
        word = line.split()
        paths[int(word[1])] = word[2:]
    doc = json.loads(subprocess.run([memreport, "stacks", "--json", "--all-frames", "--top",
                                     "0", db], capture_output=True, text=True,
                                    check=True).stdout)
    stacks = {}
    for s in doc["stacks"]:
        size = s["bytes"] // s["count"]
        if s["bytes"] == size * s["count"] and 1000 <= size < 4000:
            frames = [f.get("function") or "?" for f in s["frames"]]
            stacks.setdefault(size, []).append((s["count"], frames))
    return stacks, paths


def expected(path):
    """The frames of a path from the leaf to main, innermost first."""
    frames = ["leaf", "descend"]
    for step in reversed(path):
        frames += [step, "descend"]
    return frames + ["noinfo_paths", "main"]


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    auto, paths = trace(launcher, memreport, prog, work, "auto")
    ref, _ = trace(launcher, memreport, prog, work, "libunwind")
    fp, _ = trace(launcher, memreport, prog, work, "fp")
    check(len(paths) == 24, f"the program printed its 24 paths ({len(paths)})")
    # Sizes (no_unwind_info_main.c): 2001 and 2003 normal_callback, 2102 noinfo_callback,
    # 3000 normal_thread, 3100 noinfo_thread, 1000 + id the paths.
    for size in (2001, 2003, 2102, 3000, 3100):
        check(size in ref, f"libunwind found the allocations of {size} bytes")
    for size in (2001, 2003, 2102, 3000, 3100):
        check(size in ref, f"libunwind found the allocations of {size} bytes")
    for size in sorted(ref):
        check(sorted(auto.get(size, [])) == sorted(ref[size]),
              f"{size} bytes: auto {auto.get(size)} equals libunwind {ref[size]}")
    check(ref.get(2003, [(0, [])])[0][1][:3] == ["normal_callback", "call_through", "main"],
          f"5 calls of normal_callback through call_through ({ref.get(2003)})")
    for pid, path in sorted(paths.items()):
        want = expected(path)
        got = auto.get(1000 + pid, [])
        if not check(len(got) == 1 and got[0][0] == ALLOCS,
                     f"path {pid}: one stack for its {ALLOCS} allocations "
                     f"({[c for c, _ in got]})"):
            continue
        frames = got[0][1]
        check(frames[:len(want)] == want,
              f"path {pid}: leaf to main {want}, got {frames[:len(want)]}")
        fp_frames = [f for c, f in fp.get(1000 + pid, [])]
        check(len(fp_frames) == 1 and fp_frames[0][:len(want)] == want,
              f"path {pid}: the frame-pointer walk agrees up to main ({fp_frames})")
    print(f"{len(auto)} allocation sites traced")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
