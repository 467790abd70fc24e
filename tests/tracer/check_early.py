#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every heap call from the process's first to its last is recorded: those of libraries'
constructors that run before libmemtrace.so's, and of destructors that run after it.

Usage: check_early.py MEMTRACE MEMREPORT EARLY_PROG EARLY_CXX WORKDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, finish, fresh_dir  # noqa: E402


def capture(launcher, memreport, prog, work, name):
    cap = os.path.join(work, name + ".db")
    r = subprocess.run([launcher, "-o", cap, prog], capture_output=True, text=True,
                       env=clean_env(), timeout=120)
    check(r.returncode == 0, f"{name}: exits 0 traced ({r.returncode}: {r.stderr.strip()})")
    s = subprocess.run([memreport, "summary", "--json", cap], capture_output=True, text=True)
    check(s.returncode == 0, f"{name}: memreport reads the capture ({s.stderr.strip()})")
    return json.loads(s.stdout) if s.returncode == 0 else {}


def main():
    launcher, memreport, prog, cxx, work = sys.argv[1:6]
    fresh_dir(work)
    # Known in advance: the library's constructor keeps 12345 B, main allocates and frees
    # 100 B, the library's destructor 777 B then 888 B, each freed at once.
    s = capture(launcher, memreport, prog, work, "early")
    got = {k: s.get(k) for k in ("allocations", "frees", "peak_bytes", "bytes_allocated",
                                 "leaked_bytes")}
    want = {"allocations": 4, "frees": 3, "peak_bytes": 12345 + 888,
            "bytes_allocated": 12345 + 100 + 777 + 888, "leaked_bytes": 12345}
    check(got == want, f"the library's constructor and destructor calls recorded: {got}, "
          f"want {want}")
    check(s.get("status") == "complete", f"the capture is complete ({s.get('status')})")

    # glibc's memusage sees the C++ runtime's start-up allocations: the same counts.
    if not shutil.which("memusage"):
        print("SKIP: memusage (libc-devtools) is not installed: the C++ comparison")
        finish()
        sys.exit(77)
    s = capture(launcher, memreport, cxx, work, "cxx")
    m = subprocess.run(["memusage", cxx], capture_output=True, text=True, timeout=120)
    peak = re.search(r"heap peak: (\d+)", m.stderr)
    calls = re.search(r"malloc\|\S*\s+(\d+)\s+(\d+)", re.sub(r"\x1b\[[0-9;]*m", "", m.stderr))
    check(peak and calls, f"memusage reports its figures ({m.stderr[:200]!r})")
    if peak and calls:
        check(s.get("peak_bytes") == int(peak.group(1)),
              f"C++ peak {s.get('peak_bytes')} B, memusage's {peak.group(1)} B")
        check(s.get("allocations") == int(calls.group(1)) and
              s.get("bytes_allocated") == int(calls.group(2)),
              f"C++ allocations {s.get('allocations')} of {s.get('bytes_allocated')} B, "
              f"memusage's {calls.group(1)} of {calls.group(2)} B")
    finish()


if __name__ == "__main__":
    main()
