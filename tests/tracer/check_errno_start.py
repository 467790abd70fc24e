#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""errno is 0 as main starts and as a forked child returns from fork, traced as untraced
(errno_start.c): the tracer's start-up left ENOENT (as root) or EEXIST there, which a program
that tests errno without clearing it first (after strtol, say) takes for its own failure.
Under LD_PRELOAD and the launcher; as root, also as user nobody.

Usage: check_errno_start.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, finish, fresh_dir, public_copies  # noqa: E402


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    lib = os.path.join(os.path.dirname(launcher), "libmemtrace.so")
    fresh_dir(work)
    native = subprocess.run([prog], capture_output=True, text=True, timeout=120)
    check(native.returncode == 0 and native.stdout == "child 0\nmain 0\n",
          f"untraced: {native.stdout!r}")
    runs = [("LD_PRELOAD", [prog], dict(clean_env(OUTPUT=os.path.join(work, "pre.%p.db")),
                                        LD_PRELOAD=lib)),
            ("launcher", [launcher, "-o", os.path.join(work, "l.%p.db"), prog], clean_env())]
    if os.geteuid() == 0:
        public, public_lib, public_prog = public_copies(lib, prog, mode=0o1777)
        runs.append(("nobody", ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                "env", "LD_PRELOAD=" + public_lib, public_prog],
                     clean_env(OUTPUT=os.path.join(public, "nobody.%p.db"))))
    for label, argv, env in runs:
        env = dict(env, MEMTRACE_SYMBOLIZE="0")
        r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
        check(r.returncode == 0 and r.stdout == native.stdout,
              f"{label}: {r.stdout!r}, as untraced ({r.returncode}: {r.stderr.strip()!r})")
    finish()


if __name__ == "__main__":
    main()
