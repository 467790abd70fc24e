#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memtrace --pid on a running python3 (Debian's 3.11, pyenv's 3.11, 3.12, 3.13): CPython's
# own allocators are wrapped at the attach too (a pending call run by its main thread, the
# GIL held), so what the script allocates after the attach is in the python heap with its
# Python stack: a 1234567-byte bytearray (1234568 bytes asked of PyObject_Malloc) and 20,000
# small tuples held (from pymalloc, which before this reached no hook at all). The script's
# output and exit status are those of an untraced run; it then runs on after the detach.
# Usage: python_attach_test.py MEMTRACE MEMREPORT WORKDIR CASE | --list
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import bail, check, children, finish, wait_readable  # noqa: E402

# Debian's python3.11 died at the detach ("double free or corruption"): the tracer's own
# frees in ending the capture went to glibc once the patched slots were restored first.
PYTHONS = {"debian_3_11": "/usr/bin/python3.11",
           "3_11": os.path.expanduser("~/.pyenv/versions/3.11.7/bin/python3.11"),
           "3_12": os.path.expanduser("~/.pyenv/versions/3.12.1/bin/python3.12"),
           "3_13": os.path.expanduser("~/.pyenv/versions/3.13.0/bin/python3.13")}
TIMEOUT = 120

# Lines on stdin say when to go on; between them the main thread runs Python code (the
# pending call needs that), reading stdin with the GIL released.
SCRIPT = """\
import sys
def work():
    kept = [(i, -i) for i in range(20000)]
    big = bytearray(1234567)
    return kept, big
print("ready", flush=True)
sys.stdin.readline()
held = work()
print("worked", len(held[0]), len(held[1]), flush=True)
sys.stdin.readline()
held = None
print("done", flush=True)
"""


def line(p, what):
    wait_readable(p.stdout.fileno(), what, TIMEOUT)
    return p.stdout.readline().decode()


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(PYTHONS))
        return
    memtrace, memreport, work, case = sys.argv[1:5]
    python = PYTHONS[case]
    if not shutil.which("gdb"):
        print("SKIP: gdb is not installed (scripts/install-deps.sh --test installs it)")
        sys.exit(77)
    if not os.access(python, os.X_OK):
        print(f"SKIP: {python} is not installed")
        sys.exit(77)
    work = os.path.join(work, case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    script = os.path.join(work, "attached.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    plain = subprocess.run([python, script], input="\n\n", capture_output=True, text=True,
                           timeout=TIMEOUT)
    p = subprocess.Popen([python, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    children.append(p)
    out = line(p, "the script's 'ready'")
    cap = os.path.join(work, "cap.db")
    launcher = subprocess.Popen([memtrace, "--pid", str(p.pid), "-o", cap],
                                stderr=subprocess.PIPE)
    children.append(launcher)
    err = b""
    while b"attached to process" not in err:
        wait_readable(launcher.stderr.fileno(), "the launcher's 'attached'", TIMEOUT)
        chunk = os.read(launcher.stderr.fileno(), 4096)
        if not chunk:
            bail(f"the launcher ended without attaching: {err.decode()}")
        err += chunk
    p.stdin.write(b"\n")
    p.stdin.flush()
    out += line(p, "the script's 'worked'")
    d = subprocess.run([memtrace, "--detach", str(p.pid)], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(d.returncode == 0, f"memtrace --detach exits 0 ({d.returncode}: {d.stderr.strip()})")
    p.stdin.write(b"\n")
    p.stdin.flush()
    try:
        rest, _ = p.communicate(timeout=TIMEOUT)
        launcher.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        bail("the script or the launcher did not end")
    out += rest.decode()
    check(out == plain.stdout and p.returncode == plain.returncode == 0,
          f"output and exit status as untraced ({p.returncode}, {out!r})")
    with sqlite3.connect(cap) as db:
        meta = dict(db.execute("SELECT key, value FROM meta"))
        heaps = dict(db.execute("SELECT name, id FROM heap"))
    check("python" in heaps and "recorded as heap python" in meta.get("python_allocators", ""),
          f"a python heap ({sorted(heaps)}, {meta.get('python_allocators')!r})")
    q = subprocess.run([memreport, "sql", cap, "--json",
                        "SELECT s.function AS function FROM allocations a JOIN stacks s"
                        " ON s.callsite = a.callsite JOIN heap h ON h.id = a.heap"
                        " WHERE h.name = 'python' AND a.size = 1234568"
                        " AND s.module = '[python]' ORDER BY s.depth"],
                       capture_output=True, text=True)
    check(q.returncode == 0, f"memreport sql ({q.stderr.strip()})")
    rows = [r["function"] for r in (json.loads(q.stdout) if q.returncode == 0 else [])]
    check(rows == ["work", "<module>"],
          f"the bytearray in the python heap, made in work called from <module> ({rows})")
    n = subprocess.run([memreport, "sql", cap, "--json",
                        "SELECT count(DISTINCT a.seq) AS n FROM allocations a JOIN stacks s"
                        " ON s.callsite = a.callsite JOIN heap h ON h.id = a.heap"
                        " WHERE h.name = 'python' AND s.function = 'work'"
                        " AND s.module = '[python]'"], capture_output=True, text=True)
    counted = json.loads(n.stdout)[0]["n"] if n.returncode == 0 else 0
    check(counted >= 20000, f"the 20,000 tuples, from pymalloc, in the python heap under work "
          f"({counted})")
    finish()


if __name__ == "__main__":
    main()
