#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A traced program enters namespaces as it does untraced (namespaces.c): setns into a mount
namespace and unshare(CLONE_NEWUSER) give the same results (the tracer's writer thread made
them fail with EINVAL), refused the same way with a second thread of the program's own;
made by a clone() or vfork child (whose inherited state names the parent's writer), they
succeed and leave the parent's writer alone; and the capture holds every event before and
after (its leaks exact), and none of the tracer's heap calls counted as the program's;
util-linux's `unshare -Ur id` prints the same.

Usage: check_namespaces.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, finish, fresh_dir, traced  # noqa: E402

SKIP = 77  # ctest's SKIP_RETURN_CODE (tests/README.md)


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    native = subprocess.run([prog], capture_output=True, text=True, env=clean_env())
    if "unshare user: 0 ok" not in native.stdout or "setns mnt: 0 ok" not in native.stdout:
        print(f"SKIP: this machine refuses the namespaces untraced: {native.stdout!r}")
        sys.exit(SKIP)
    for args in ([], ["threaded"], ["children"]):
        name = "_".join(["run"] + args)
        native = subprocess.run([prog, *args], capture_output=True, text=True, env=clean_env())
        cap = os.path.join(work, name + ".db")
        r = traced(launcher, cap, [prog, *args])
        check(r.returncode == native.returncode == 0,
              f"{name}: exit {r.returncode} traced, {native.returncode} untraced ({r.stderr})")
        check(r.stdout == native.stdout,
              f"{name}: the same results traced:\n{r.stdout}untraced:\n{native.stdout}")
        s = subprocess.run([memreport, "summary", cap, "--json"], capture_output=True,
                           text=True)
        if not check(s.returncode == 0, f"{name}: memreport reads the capture ({s.stderr})"):
            continue
        summary = json.loads(s.stdout)
        check(summary["status"] == "complete", f"{name}: capture complete ({summary['status']})")
        leaked = (summary["leaked_bytes"], summary["leaked_allocations"])
        check(leaked == (6000, 30), f"{name}: the program leaked 6000 bytes in 30 blocks "
              f"({leaked}, besides the C runtime's)")
    # The tracer's own work in the call (a new writer thread) is not counted as the program's
    # heap calls: 0 and 50 calls to setns count the same.
    calls = []
    for n in (0, 50):
        cap = os.path.join(work, f"setns_{n}.db")
        r = traced(launcher, cap, [prog, "setns", str(n)])
        s = subprocess.run([memreport, "summary", cap, "--json"], capture_output=True,
                           text=True)
        check(r.returncode == 0 and s.returncode == 0, f"setns x{n}: runs and is read "
              f"({r.stderr}{s.stderr})")
        calls.append(json.loads(s.stdout)["calls"] if s.returncode == 0 else None)
    check(calls[0] == calls[1], f"the heap calls of 0 and 50 setns the same ({calls})")
    native = subprocess.run(["unshare", "-Ur", "id"], capture_output=True, text=True)
    r = traced(launcher, os.path.join(work, "unshare.db"), ["unshare", "-Ur", "id"])
    check((r.returncode, r.stdout) == (native.returncode, native.stdout),
          f"unshare -Ur id: {r.returncode} {r.stdout!r} traced, {native.returncode} "
          f"{native.stdout!r} untraced ({r.stderr})")
    finish()


if __name__ == "__main__":
    main()
