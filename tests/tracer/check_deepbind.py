#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Libraries dlopen'ed with RTLD_DEEPBIND (deepbind.c) bind their heap calls to libc's
functions, past the tracer's hooks: traced, none of deepbind_lib.c's and deepbind_dep.c's
calls were recorded. Under LD_PRELOAD, with RTLD_NOW and RTLD_LAZY: every one of their
blocks is in the capture, of its size, freed or kept as they are; a library with an
allocator of its own keeps it (its blocks in none of the capture's events) and the program
ends as untraced.

Usage: check_deepbind.py MEMTRACE MEMREPORT PROGRAM LIB OWN_LIB WORKDIR
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, finish, fresh_dir  # noqa: E402

TIMEOUT = 120
# size: (blocks, of them live at the end)
WANT = {222: (1000, 0), 333: (1000, 0), 444: (1000, 0), 4444: (1000, 0), 555: (10, 10),
        2222: (5, 5), 666: (0, 0)}


def main():
    launcher, memreport, prog, lib, own, work = sys.argv[1:7]
    preload = os.path.join(os.path.dirname(launcher), "libmemtrace.so")
    fresh_dir(work)
    for mode in ("now", "lazy"):
        argv = [prog, mode, lib, own]
        native = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT,
                                env=clean_env())
        check(native.returncode == 0 and native.stdout == "own allocator: 100 blocks\n",
              f"{mode}: untraced ({native.returncode}, {native.stdout!r}, {native.stderr!r})")
        db = os.path.join(work, f"{mode}.db")
        r = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT,
                           env=dict(clean_env(OUTPUT=db), LD_PRELOAD=preload))
        check((r.returncode, r.stdout, r.stderr) == (native.returncode, native.stdout,
                                                     native.stderr),
              f"{mode}: traced as untraced ({r.returncode}, {r.stdout!r}, {r.stderr!r})")
        # The test's own blocks: made by its program and libraries (ld.so's own, such as a
        # copy of an RPATH, have sizes that follow the build directory's name).
        ours = os.path.dirname(os.path.abspath(lib)).replace("'", "''") + "/%"
        q = subprocess.run([memreport, "sql", "--json", db,
                            "SELECT a.size, count(*) AS n, sum(a.freed_ts IS NULL) AS live "
                            "FROM allocations a JOIN callsite c ON c.id = a.callsite "
                            "JOIN frame f ON f.id = c.frame_id "
                            "JOIN mapping m ON m.id = f.mapping_id "
                            f"WHERE m.path LIKE '{ours}' GROUP BY a.size"],
                           capture_output=True, text=True, timeout=TIMEOUT)
        if not check(q.returncode == 0, f"{mode}: memreport sql ({q.stderr.strip()})"):
            continue
        got = {row["size"]: (row["n"], row["live"]) for row in json.loads(q.stdout)}
        for size, want in WANT.items():
            check(got.get(size, (0, 0)) == want,
                  f"{mode}: {want[0]} blocks of {size} bytes, {want[1]} of them live "
                  f"({got.get(size, (0, 0))})")
        s = json.loads(subprocess.run([memreport, "summary", "--json", db],
                                      capture_output=True, text=True, timeout=TIMEOUT,
                                      check=True).stdout)
        check(s["unmatched_frees"] == 0, f"{mode}: no free without its allocation "
              f"({s['unmatched_frees']})")
    finish()


if __name__ == "__main__":
    main()
