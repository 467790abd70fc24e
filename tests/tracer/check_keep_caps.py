#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A root program that drops to nobody keeping a capability on its own thread (keep_caps.c,
and util-linux setpriv --reuid --regid) runs traced as untraced: glibc makes every thread
take new ids and aborts the process when one thread's call fails where the caller's
succeeded, and the writer thread, without the capability, failed (SIGABRT before). Its
capture is complete and exact. Root only (exit 77 otherwise).

Usage: check_keep_caps.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, finish, fresh_dir  # noqa: E402

RUNS = 3


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    if os.geteuid() != 0:
        print("SKIP: needs root, to drop privileges")
        sys.exit(77)
    fresh_dir(work)
    # The images exec'd as nobody (setpriv's true) write their captures here too.
    os.chmod(work, 0o1777)
    native = subprocess.run([prog], capture_output=True, text=True, timeout=120)
    check(native.returncode == 0 and native.stdout == "uid 65534 gid 65534 errno kept\n",
          f"untraced: exit 0, nobody ({native.returncode}: {native.stdout!r} {native.stderr!r})")
    runs = [("keep_caps", [prog])]
    setpriv = shutil.which("setpriv")
    if setpriv:
        runs.append(("setpriv", [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                                 "--", sys.executable, "-c", "import os; print(os.getuid())"]))
    for name, argv in runs:
        want = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        for run in range(RUNS):
            label = f"{name} {run}"
            cap = os.path.join(work, f"{name}{run}.db")
            r = subprocess.run([launcher, "-o", cap, "--", *argv], capture_output=True,
                               text=True, timeout=120, env=clean_env(SYMBOLIZE=0))
            check(r.returncode == want.returncode and r.stdout == want.stdout,
                  f"{label}: exit {r.returncode}, {r.stdout!r}, as untraced ({want.returncode}, "
                  f"{want.stdout!r}; {r.stderr.strip()!r})")
            s = subprocess.run([memreport, "summary", "--json", cap], capture_output=True,
                               text=True, timeout=120)
            got = None
            if s.returncode == 0:
                d = json.loads(s.stdout)
                got = (d["status"], d["leaked_bytes"] if name == "keep_caps" else None)
            check(got == ("complete", 100 if name == "keep_caps" else None),
                  f"{label}: the capture is complete (and holds the 100 bytes leaked): {got} "
                  f"{s.stderr.strip()}")
    finish()


if __name__ == "__main__":
    main()
