#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program started with its stderr closed (`prog 2>&-`) and whose first file got
descriptor 2 (stderr_closed.c) never finds the tracer's words in that file: what the tracer
says on stderr when it stops recording (MEMTRACE_MAX_MB reached, the file size limit) goes
to the stderr the program was started with, or nowhere. With stderr open it is still said
there. Under LD_PRELOAD alone: under the launcher these go to its list of captures. Said on
a stderr that is a pipe nobody reads, or a file at the size limit, it never kills the program
(SIGPIPE, SIGXFSZ).

Usage: check_stderr_closed.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import os
import resource
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import capture_meta, check, clean_env, finish, fresh_dir  # noqa: E402

EVENTS = 2000000  # megabytes of capture
FSIZE = 256 * 1024  # bytes: the empty capture takes 68 KiB

# name: (settings, file size limit, what the tracer says when stderr is open)
CASES = {
    "max_mb": ({"MAX_MB": 1}, None, "events stopped at 1 MiB"),
    "file_limit": ({}, FSIZE, "the file size limit, ulimit -f"),
}


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    lib = os.path.join(os.path.dirname(launcher), "libmemtrace.so")
    fresh_dir(work)
    for name, (settings, fsize, said) in CASES.items():
        for stderr_open in (False, True):
            label = f"{name}, stderr {'open' if stderr_open else 'closed'}"
            tag = f"{name}_{'open' if stderr_open else 'closed'}"
            data = os.path.join(work, tag + ".txt")
            cap = os.path.join(work, tag + ".db")

            def start():
                if fsize:
                    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
                if not stderr_open:
                    os.close(2)
            env = clean_env(OUTPUT=cap, SYMBOLIZE=0, **settings)
            env["LD_PRELOAD"] = lib
            r = subprocess.run([prog, data, str(EVENTS)], env=env, capture_output=True,
                               text=True, preexec_fn=start, timeout=120)
            check(r.returncode == 0, f"{label}: exit 0 ({r.returncode})")
            fd = 3 if stderr_open else 2
            with open(data) as f:
                got = f.read()
            check(got == f"data on descriptor {fd}\nend\n",
                  f"{label}: the data file holds the program's two lines only: {got!r}")
            if stderr_open:
                check(said in r.stderr, f"{label}: the tracer says why on stderr: "
                      f"{r.stderr.strip()!r}")
            meta = capture_meta(cap)
            stopped = ("events_stopped_reason" in meta if name == "max_mb"
                       else meta.get("capture_status") == "recording")
            check(stopped, f"{label}: the capture stopped recording events, as meant")
    # stderr a pipe nobody reads: what the tracer says there at start (a capture it cannot
    # create, a setting it refuses) raised SIGPIPE, which killed the program before main.
    for label, settings in (("no capture", {"OUTPUT": "/nonexistent/x.db"}),
                            ("refused setting", {"OUTPUT": os.path.join(work, "pipe.db"),
                                                 "DEPTH": 0})):
        data = os.path.join(work, "pipe.txt")
        read_end, write_end = os.pipe()
        os.close(read_end)
        env = clean_env(SYMBOLIZE=0, **settings)
        env["LD_PRELOAD"] = lib
        r = subprocess.run([prog, data, "10"], env=env, stderr=write_end, timeout=120)
        os.close(write_end)
        got = None  # the program died before it made the file
        if os.path.exists(data):
            with open(data) as f:
                got = f.read()
            os.unlink(data)
        check(r.returncode == 0 and got == "data on descriptor 3\nend\n",
              f"stderr a pipe without reader, {label}: exit 0 and its file written "
              f"({r.returncode}, {got!r})")
    # stderr a file at the file size limit: the refused setting's warning raised SIGXFSZ.
    log = os.path.join(work, "full.log")
    with open(log, "w") as f:
        f.write("x" * 8192)

    def at_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
    env = clean_env(SYMBOLIZE=0, OUTPUT=os.path.join(work, "full.db"), DEPTH=0)
    env["LD_PRELOAD"] = lib
    data = os.path.join(work, "full.txt")
    with open(log, "a") as f:
        r = subprocess.run([prog, data, "10"], env=env, stderr=f, preexec_fn=at_limit,
                           timeout=120)
    check(r.returncode == 0, f"stderr a file at the size limit: exit 0 ({r.returncode})")
    finish()


if __name__ == "__main__":
    main()
