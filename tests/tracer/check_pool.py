#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A pool annotated with memtrace_report_alloc/free (tests/tracer/pool_arena.c): its blocks
are a heap of their own (heap 5, "pool" or the name the program gives), end no malloc'ed
block (the first lies at the arena's base), the program's peak is 1,148,576 B (the arena's
1,048,576 in heap libc, the blocks' 100,000 in the pool's), the blocks are attributed to the
pool's function, not to memtrace.h, and the leak scan classifies the arena as memcheck does
whatever blocks were reported in it.

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

ARENA, BLOCKS = 1 << 20, 10 * 10000
PEAK = ARENA + BLOCKS


def report(memreport, *args):
    r = subprocess.run([memreport, *args], capture_output=True, text=True)
    if check(r.returncode == 0, f"{' '.join(args)}: {r.stderr.strip()!r}"):
        return json.loads(r.stdout) if "--json" in args else r.stdout
    return None


def main():
    memtrace, memreport, prog, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = os.path.join(work, "pool.db")
    r = subprocess.run([memtrace, "-o", cap, prog], capture_output=True, text=True)
    check(r.returncode == 0, f"the program ran: {r.returncode} {r.stderr.strip()!r}")
    d = report(memreport, "summary", "--json", cap)
    if d:
        got = {k: d.get(k) for k in ("peak_bytes", "allocations", "frees", "leaked_bytes",
                                     "unmatched_frees")}
        check(got["peak_bytes"] == PEAK, f"peak {got['peak_bytes']} = {PEAK}")
        check((got["allocations"], got["frees"], got["leaked_bytes"]) == (11, 11, 0),
              f"11 allocations, 11 frees, nothing leaked: {got}")
        check(not got["unmatched_frees"], f"every free ends its own block: {got}")
        heaps = {k: (d.get(k) or {}).get("peak_bytes") for k in ("libc", "pool")}
        check(heaps == {"libc": ARENA, "pool": BLOCKS} and
              (d.get("pool") or {}).get("name") == "pool" and
              (d.get("pool") or {}).get("allocations") == 10,
              f"the arena in heap libc, the blocks in heap pool: {heaps} {d.get('pool')}")
    for heap, want in (("libc", (ARENA, 1)), ("pool", (BLOCKS, 10))):
        h = report(memreport, "summary", "--json", "--heap", heap, cap)
        if h:
            check((h["peak_bytes"], h["allocations"]) == want,
                  f"summary --heap {heap}: {(h['peak_bytes'], h['allocations'])} = {want}")
    t = report(memreport, "top", "--json", "--metric", "allocated", "--top", "0", cap)
    if t:
        selves = {f["function"]: f["self"] for f in t["functions"]}
        check(selves.get("pool_alloc") == BLOCKS and
              not any("memtrace_report" in f for f in selves),
              f"the blocks are pool_alloc's, none memtrace.h's: {selves}")

    # Named by the program, and kept to the end: the pool's blocks apart from the leak
    # scan, the arena (held by a global) still reachable, all of its 1 MiB.
    named = os.path.join(work, "named.db")
    r = subprocess.run([memtrace, "-o", named, prog, "arena", "keep"], capture_output=True,
                       text=True)
    check(r.returncode == 0, f"the named pool ran: {r.returncode} {r.stderr.strip()!r}")
    d = report(memreport, "summary", "--json", named)
    if d:
        pool = d.get("pool") or {}
        check(pool.get("name") == "arena" and pool.get("live_bytes") == BLOCKS,
              f"the pool's heap is named arena, its blocks live at the end: {pool}")
        # The scan judges malloc'ed blocks: the pool's read unclassified (docs/annotations.md).
        kinds = {k: v["bytes"] for k, v in d.get("leak_kinds", {}).items() if v["bytes"]}
        check(kinds == {"still_reachable": ARENA, "unclassified": BLOCKS},
              f"the arena is still reachable, all of it; the pool's blocks unjudged: {kinds}")
    text = report(memreport, "summary", "--heap", "arena", named)
    if text is not None:
        check("peak:         97.66 KiB" in text, f"summary --heap arena: {text!r}")
    text = report(memreport, "summary", named)
    if text is not None:
        check(any(l.startswith("arena:") and "--heap arena" in l for l in text.splitlines()),
              f"summary names the pool's heap: {text!r}")
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
