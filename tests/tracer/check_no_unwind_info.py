#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Stacks through code without unwind info but with frame pointers (no_unwind_info.c):
under MEMTRACE_UNWIND=auto every allocation of a path has the path's whole stack, from the
leaf up through main into libc's start-up frames, with no unnamed frame (libunwind alone
follows such code into a wrong frame above main), the first allocation of a path included;
the frame-pointer walk (MEMTRACE_UNWIND=fp) gives the same frames from the leaf to main.

Usage: check_no_unwind_info.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, failures  # noqa: E402

ALLOCS = 40  # per path (no_unwind_info.c)


def trace(launcher, memreport, prog, work, mode):
    """{path id: [(count, frames innermost first)]} of the allocations of 1000 + id bytes,
    and the paths the program printed."""
    db = os.path.join(work, f"{mode}.db")
    r = subprocess.run([launcher, "-o", db, "--", prog], capture_output=True, text=True,
                       env=dict(clean_env(), MEMTRACE_UNWIND=mode))
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
        if 1000 <= size < 1000 + len(paths) and s["bytes"] == size * s["count"]:
            frames = [f.get("function") or "?" for f in s["frames"]]
            stacks.setdefault(size - 1000, []).append((s["count"], frames))
    return stacks, paths


def expected(path):
    """The frames of a path from the leaf to main, innermost first."""
    frames = ["leaf", "descend"]
    for step in reversed(path):
        frames += [step, "descend"]
    return frames + ["main"]


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    auto, paths = trace(launcher, memreport, prog, work, "auto")
    fp, _ = trace(launcher, memreport, prog, work, "fp")
    check(len(paths) == 24, f"the program printed its 24 paths ({len(paths)})")
    for pid, path in sorted(paths.items()):
        want = expected(path)
        got = auto.get(pid, [])
        if not check(len(got) == 1 and got[0][0] == ALLOCS,
                     f"path {pid}: one stack for its {ALLOCS} allocations "
                     f"({[c for c, _ in got]})"):
            continue
        frames = got[0][1]
        check(frames[:len(want)] == want,
              f"path {pid}: leaf to main {want}, got {frames[:len(want)]}")
        outer = frames[len(want):]
        check(outer and outer[0].startswith("__libc_start") and
              all(f.startswith("__libc_start") or f == "_start" for f in outer),
              f"path {pid}: above main only libc's start-up frames ({outer})")
        fp_frames = [f for c, f in fp.get(pid, [])]
        check(len(fp_frames) == 1 and fp_frames[0][:len(want)] == want,
              f"path {pid}: the frame-pointer walk agrees up to main ({fp_frames})")
    print(f"{len(auto)} paths traced")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
