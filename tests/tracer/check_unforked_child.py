#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A child made without fork() (clone() without CLONE_VM, clone3, a raw fork system call:
unforked_child.c) runs none of the tracer's fork handlers. It makes 1,000,000 malloc/free
pairs: it must end with its output and status, and the parent's capture hold the parent's
calls exactly. Before, such a child recorded into buffers no writer drained and hung after
about 512 K events.

Usage: check_unforked_child.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import signal
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, failures, fresh_dir  # noqa: E402

TIMEOUT = 120  # a run takes well under a second; a hung child is killed then


def run(argv):
    # Its own process group: the launcher, the program and its child killed together.
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=clean_env(), start_new_session=True)
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None
    return p.returncode, out, err


def case(launcher, memreport, prog, work, how):
    plain = run([prog, how])
    if plain[0] == 3 and plain[1] == "unsupported\n":
        print(f"skip: {how}: the kernel lacks the call")
        return
    db = os.path.join(work, f"{how}.db")
    traced = run([launcher, "-o", db, "--", prog, how])
    if not check(traced is not None, f"{how}: the traced run ended (not after {TIMEOUT} s)"):
        return
    check(traced[:2] == plain[:2] == (0, "child done\nchild exited 7\n"),
          f"{how}: status and output as untraced ({traced[:2]}, untraced {plain[:2]})")
    check("not traced" in traced[2], f"{how}: the launcher says the child is not traced "
          f"({traced[2]!r})")
    s = json.loads(subprocess.run([memreport, "stats", "--json", db], capture_output=True,
                                  text=True, check=True).stdout)
    check(s["status"] == "complete", f"{how}: the parent's capture complete ({s['status']})")
    # The parent's own sites (stdio's buffer for its output is glibc's).
    sites = sorted((x["site"], x["allocations"], x["bytes_allocated"]) for x in s["by_count"]
                   if x["site"].startswith(("parent_", "child_")))
    want = [("parent_after", 501, 500 * 200 + 999), ("parent_before", 1001, 1000 * 300 + 4321)]
    check(sites == want, f"{how}: the parent's calls exactly ({sites})")
    leaks = json.loads(subprocess.run([memreport, "leaks", "--json", db], capture_output=True,
                                      text=True, check=True).stdout)
    check((leaks["bytes"], leaks["blocks"]) == (4321 + 999, 2),
          f"{how}: the parent's two blocks leaked ({leaks['bytes']} B, {leaks['blocks']})")


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    for how in ("clone", "clone3", "sysfork"):
        case(launcher, memreport, prog, work, how)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
