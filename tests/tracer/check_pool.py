#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A pool annotated with memtrace_report_alloc/free (tests/tracer/pool_arena.c): its blocks
end no malloc'ed block (the first lies at the arena's base), the peak is 1,148,576 B, and
the blocks are attributed to the pool's function, not to memtrace.h.

Usage: check_pool.py MEMTRACE MEMREPORT POOL_ARENA WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402

PEAK = (1 << 20) + 10 * 10000


def main():
    memtrace, memreport, prog, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = os.path.join(work, "pool.db")
    r = subprocess.run([memtrace, "-o", cap, prog], capture_output=True, text=True)
    check(r.returncode == 0, f"the program ran: {r.returncode} {r.stderr.strip()!r}")
    s = subprocess.run([memreport, "summary", "--json", cap], capture_output=True, text=True)
    if check(s.returncode == 0, f"summary: {s.stderr.strip()!r}"):
        d = json.loads(s.stdout)
        got = {k: d.get(k) for k in ("peak_bytes", "allocations", "frees", "leaked_bytes",
                                     "unmatched_frees")}
        check(got["peak_bytes"] == PEAK, f"peak {got['peak_bytes']} = {PEAK}")
        check((got["allocations"], got["frees"], got["leaked_bytes"]) == (11, 11, 0),
              f"11 allocations, 11 frees, nothing leaked: {got}")
        check(not got["unmatched_frees"], f"every free ends its own block: {got}")
    t = subprocess.run([memreport, "top", "--json", "--metric", "allocated", "--top", "0", cap],
                       capture_output=True, text=True)
    if check(t.returncode == 0, f"top: {t.stderr.strip()!r}"):
        selves = {f["function"]: f["self"] for f in json.loads(t.stdout)["functions"]}
        check(selves.get("pool_alloc") == 10 * 10000 and
              not any("memtrace_report" in f for f in selves),
              f"the blocks are pool_alloc's, none memtrace.h's: {selves}")
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
