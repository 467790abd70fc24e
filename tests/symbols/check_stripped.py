#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A fully stripped program (tests/symbols/stripped_prog.c, strip --strip-all) against its
unstripped twin: `top` has the same number of rows with the same counts, each of the
program's functions one row named PROGRAM!0xSTART, however many return addresses it has.

Usage: check_stripped.py MEMTRACE MEMREPORT PROG STRIPPED_PROG WORKDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402


def top_rows(memtrace, memreport, prog, work):
    cap = os.path.join(work, os.path.basename(prog) + ".db")
    # A symbol cache of its own: both copies have one build-id, and the cache would give
    # the stripped copy the names read from the other.
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache-" + os.path.basename(prog)))
    r = subprocess.run([memtrace, "-o", cap, prog], capture_output=True, text=True, env=env)
    check(r.returncode == 0, f"{prog} ran: {r.returncode} {r.stderr.strip()!r}")
    t = subprocess.run([memreport, "top", "--json", "--metric", "count", "--top", "0", cap],
                       capture_output=True, text=True, env=env)
    if not check(t.returncode == 0, f"top {cap}: {t.stderr.strip()!r}"):
        return []
    return [(f["function"], f["self"]) for f in json.loads(t.stdout)["functions"] if f["self"]]


def main():
    memtrace, memreport, prog, stripped, work = sys.argv[1:6]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    plain = top_rows(memtrace, memreport, prog, work)
    bare = top_rows(memtrace, memreport, stripped, work)
    want = {"small": 14, "medium": 33, "large": 13}
    got = {f: n for f, n in plain if f in want}
    check(got == want, f"unstripped: each function's allocations {got} = {want}")
    check(len(bare) == len(plain) and sorted(n for _, n in bare) == sorted(n for _, n in plain),
          f"stripped: the same rows and counts: {bare} vs {plain}")
    name = re.escape(os.path.basename(stripped))
    ours = [f for f, n in bare if re.fullmatch(name + r"!0x[0-9a-f]+", f)]
    check(len(ours) == 3 and not any(re.fullmatch(name + r"\+0x[0-9a-f]+", f) for f, _ in bare),
          f"stripped: the three functions named PROGRAM!0xSTART, no PROGRAM+0xOFFSET: {bare}")
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
