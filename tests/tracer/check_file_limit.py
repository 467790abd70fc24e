#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A capture that reaches the process's file size limit (RLIMIT_FSIZE) stops; the program
runs on as untraced (file_limit.c): the same output and exit code (not killed by SIGXFSZ,
the signal a write past the limit raises, also when the write is the program thread's at
exit), the reason said with its cause (the limit, not SQLite's bare "disk I/O error"), and
memreport reads what was committed as truncated. Under a limit of 0 (`ulimit -f 0`: no file
may grow) no capture can be made, and the program, which writes no file, still runs as
untraced (the line its thread appends to the launcher's list of captures raised SIGXFSZ).

Usage: check_file_limit.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import os
import resource
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, finish, fresh_dir  # noqa: E402

# (events, file size limit, settings): the limit reached by the writer thread while the
# program runs (2 M events need megabytes), and by the program's own thread, which writes the
# last events at exit (nothing committed before: a commit period longer than the run; the
# empty capture takes 68 KiB).
CASES = {
    "during the run": (2000000, 256 * 1024, {}),
    "at exit": (5000, 72 * 1024, {"COMMIT_MS": 60000}),
}


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    for name, (events, limit, settings) in CASES.items():
        def limited():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        argv = [prog, str(events)]
        native = subprocess.run(argv, capture_output=True, text=True, preexec_fn=limited)
        cap = os.path.join(work, name.replace(" ", "_") + ".db")
        r = subprocess.run([launcher, "-o", cap, "--", *argv], capture_output=True, text=True,
                           env=clean_env(**settings), preexec_fn=limited)
        check(native.returncode == 3, f"{name}: untraced: exit 3 ({native.returncode})")
        check(r.returncode == native.returncode,
              f"{name}: traced: exit {r.returncode}, as untraced ({r.stderr.strip()})")
        check(r.stdout == native.stdout,
              f"{name}: the same output ({r.stdout!r}, {native.stdout!r})")
        check(f"the file size limit, ulimit -f, is {limit} bytes" in r.stderr,
              f"{name}: the cause said ({r.stderr.strip()})")
        check(os.path.getsize(cap) <= limit,
              f"{name}: the capture within the limit ({os.path.getsize(cap)})")
        s = subprocess.run([memreport, "summary", cap], capture_output=True, text=True)
        check(s.returncode == 0 and "(truncated)" in s.stdout,
              f"{name}: memreport reads it as truncated ({s.returncode}: {s.stdout}{s.stderr})")

    def no_file_may_grow():
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    argv = [prog, "5000"]
    native = subprocess.run(argv, capture_output=True, text=True, preexec_fn=no_file_may_grow)
    r = subprocess.run([launcher, "-o", os.path.join(work, "zero.db"), "--", *argv],
                       capture_output=True, text=True, env=clean_env(),
                       preexec_fn=no_file_may_grow)
    check((r.returncode, r.stdout) == (native.returncode, native.stdout) and native.returncode == 3,
          f"limit 0: traced: exit {r.returncode} {r.stdout!r}, as untraced: "
          f"{native.returncode} {native.stdout!r} ({r.stderr.strip()})")
    finish()


if __name__ == "__main__":
    main()
