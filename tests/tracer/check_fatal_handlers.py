#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tracer's fatal-signal handlers do not show (fatal_handlers.c): traced, sigaction and
signal() report SIG_DFL for each fatal signal, as untraced; a SIGSEGV handler on a small
alternate stack that calls abort() ends the process with SIGABRT, as untraced (SIGSEGV
before: the tracer's SIGABRT handler overflowed that stack), and the capture is saved
(meta terminated_by_signal 6).

Usage: check_fatal_handlers.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import os
import signal
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import capture_meta, check, clean_env, finish, fresh_dir  # noqa: E402

TIMEOUT = 120


def main():
    launcher, _memreport, prog, work = sys.argv[1:5]
    lib = os.path.join(os.path.dirname(launcher), "libmemtrace.so")
    fresh_dir(work)
    for mode in ("query", "altstack"):
        native = subprocess.run([prog, mode], capture_output=True, text=True, timeout=TIMEOUT,
                                env=clean_env())
        db = os.path.join(work, f"{mode}.db")
        traced = subprocess.run([prog, mode], capture_output=True, text=True, timeout=TIMEOUT,
                                env=dict(clean_env(OUTPUT=db), LD_PRELOAD=lib))
        check(traced.returncode == native.returncode and traced.stdout == native.stdout and
              traced.stderr == native.stderr,
              f"{mode}: traced as untraced ({traced.returncode}, {traced.stdout!r}, "
              f"{traced.stderr!r}; untraced {native.returncode}, {native.stdout!r}, "
              f"{native.stderr!r})")
        if mode == "query":
            check(native.stdout.count("sigaction SIG_DFL, signal SIG_DFL") == 5,
                  f"query: every fatal signal at SIG_DFL untraced ({native.stdout!r})")
        else:
            check(native.returncode == -signal.SIGABRT,
                  f"altstack: untraced, SIGABRT ends it ({native.returncode})")
            meta = capture_meta(db) if os.path.exists(db) else {}
            check(meta.get("terminated_by_signal") == str(int(signal.SIGABRT)),
                  f"altstack: the capture saved before SIGABRT "
                  f"({meta.get('capture_status')}, {meta.get('terminated_by_signal')})")
    finish()


if __name__ == "__main__":
    main()
