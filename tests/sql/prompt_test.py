#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport sql's interactive prompt, driven through a pseudo-terminal as a person would: on a
# capture of python3 traced (or the report fixture without the tracer), a query typed at the
# prompt prints summary's numbers, a query split over two lines waits for its ';', an error
# is shown and the prompt goes on, and Ctrl-D at the prompt quits with exit status 0.
# Usage: prompt_test.py MEMREPORT REPORTS_FIXTURE WORKDIR [MEMTRACE_LAUNCHER]
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402

memreport, fixture, work = sys.argv[1:4]
launcher = sys.argv[4] if len(sys.argv) > 4 else None
PROMPT = b"memreport> "
CONTINUATION = b"   ...> "
WAIT_S = 60  # only a bound for a hung prompt: a slow machine just takes longer to answer


class Terminal:
    """memreport sql CAP with its stdin, stdout and stderr on one pseudo-terminal."""

    def __init__(self, cap):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([memreport, "sql", cap], stdin=slave, stdout=slave,
                                     stderr=slave, close_fds=True)
        os.close(slave)
        self.seen = b""

    def read_until(self, marker):
        """Everything written up to and including marker (the terminal's \r\n as \n)."""
        deadline = time.monotonic() + WAIT_S
        while marker not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.master], [], [], left)[0]:
                sys.exit(f"no {marker!r} within {WAIT_S} s; the terminal shows {self.seen!r}")
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: the program closed the terminal
                chunk = b""
            if not chunk:
                sys.exit(f"the terminal closed before {marker!r}: {self.seen!r}")
            self.seen += chunk.replace(b"\r\n", b"\n")
        text, _, self.seen = self.seen.partition(marker)
        return text

    def type(self, line):
        os.write(self.master, line)

    def close(self):
        rc = self.proc.wait(timeout=WAIT_S)
        os.close(self.master)
        return rc


def answer(term, line):
    """Types line at the prompt; returns what was printed before the next prompt, without
    the echo of the line itself."""
    term.type(line + b"\n")
    text = term.read_until(PROMPT)
    return text.split(line + b"\n", 1)[-1].decode()


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
cap = os.path.join(work, "prompt.db")
if launcher:
    subprocess.run([launcher, "-o", cap, "--", sys.executable, "-c",
                    "d = {i: str(i) * (i % 9) for i in range(20000)}; print(len(d))"],
                   check=True, stdout=subprocess.DEVNULL)
else:
    subprocess.run([fixture, cap], check=True)
summary = json.loads(subprocess.run([memreport, "summary", cap, "--json"], check=True,
                                    capture_output=True, text=True).stdout)

term = Terminal(cap)
term.read_until(PROMPT)

# The table format of a terminal: a header, a rule, the values.
text = answer(term, b"select count(*), sum(size) from events where kind in "
                    b"('malloc', 'calloc', 'realloc', 'posix_memalign', 'aligned_alloc', "
                    b"'memalign', 'valloc', 'pvalloc', 'reallocarray');")
values = re.findall(r"^\s*(\d+)\s+(\d+)\s*$", text, re.M)
check(values == [(str(summary["allocations"]), str(summary["bytes_allocated"]))],
      f"allocations and bytes at the prompt {text!r} = summary's {summary['allocations']}, "
      f"{summary['bytes_allocated']}")
if launcher:
    text = answer(term, b"select count(*) from events where kind = 'malloc';")
    # CPython's PyMem_Malloc and PyObject_Malloc are malloc events of heap python.
    mallocs = summary["calls"]["malloc"] + summary["calls"].get("python_malloc", 0)
    check(re.findall(r"^\s*(\d+)\s*$", text, re.M) == [str(mallocs)],
          f"malloc events {text!r} = summary's malloc calls {mallocs} (python's included)")

# A statement over two lines: the continuation prompt, then the answer.
term.type(b"select count(*)\n")
term.read_until(CONTINUATION)
text = answer(term, b"from events;")
check(re.findall(r"^\s*(\d+)\s*$", text, re.M) == [str(summary["events"])],
      f"a two-line query {text!r} counts summary's {summary['events']} events")

# An error is shown, and the prompt answers the next query.
text = answer(term, b"select no_such_column from events;")
check("no such column: no_such_column" in text, f"the error is shown: {text!r}")
text = answer(term, b"select 6 * 7;")
check(re.findall(r"^\s*(\d+)\s*$", text, re.M) == ["42"], f"the prompt goes on: {text!r}")

# Ctrl-D (the terminal's end of file) at an empty prompt quits with 0.
term.type(b"\x04")
rc = term.close()
check(rc == 0, f"Ctrl-D quits with exit status {rc}")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
if not launcher:
    print("SKIP: the tracer is not built: checked on the fixture only")
    sys.exit(77)
