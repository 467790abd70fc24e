# SPDX-License-Identifier: MIT
# A capture of a real program nobody here wrote, for the export drivers: python3 under the
# tracer (memtrace, the launcher), building and dropping containers in two phases marked with
# memtrace's API (called through ctypes), so the capture has thousands of real stacks, a peak
# in the middle, leaks at the end, a mark and a closed range.
import os
import sqlite3
import subprocess
import sys

SCRIPT = r"""
import ctypes
mark = getattr(ctypes.CDLL(None), "memtrace_impl_mark", None)  # libmemtrace.so, preloaded
def note(name, what):
    if mark:
        mark(name.encode(), what)
note("start", 0)
note("build", 1)
table = {i: [str(j) * (i % 7) for j in range(i % 50)] for i in range(300)}
blob = [bytearray(1000 + i) for i in range(200)]
note("build", 2)
del table
keep = [b"x" * 5000 for _ in range(10)]
print(len(blob), len(keep))
"""


def trace_python(launcher, work, name="python3.db"):
    """Runs python3 under the tracer; returns the capture's path and its number of marks
    as CSV's MSTX rows count them: a point one row, a closed range two (the tracer stores a
    point's ts_end as its ts_begin)."""
    cap = os.path.join(work, name)
    # -I -S: no site start-up, whose objects (heap python) would be most of the capture.
    subprocess.run([launcher, "-f", "-o", cap, "--", sys.executable, "-I", "-S", "-c", SCRIPT],
                   check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, LC_ALL="C"))
    db = sqlite3.connect(cap)
    (mstx,) = db.execute("SELECT count(*) + sum(kind = 'range' AND ts_end IS NOT NULL)"
                         " FROM mark WHERE heap = 1").fetchone()
    db.close()
    if mstx != 3:
        sys.exit(f"{cap}: {mstx} MSTX rows from the marks, not 3: did memtrace_impl_mark run?")
    return cap, mstx
