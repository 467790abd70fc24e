#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CPython's own allocators as heap "python" (preload/python_heap.c), on the interpreters
installed here: Debian's python3.11 and pyenv's builds (`pyenv root`). A case whose
interpreter is missing exits 77.

Truth: the same script run with PYTHONMALLOC=malloc (memtrace --python-malloc), where every
object is a malloc of the size asked for, recorded in the libc heap. With the wrappers, the
peak of all heaps together must be that peak (nothing missed, nothing counted twice: the
arenas and the blocks pymalloc takes from malloc are not in the libc heap). And tracemalloc
as a second opinion: the bytes a script allocated between two points and holds at the
second, as tracemalloc's snapshot sums them and as the capture does, within 1 %.

Usage: check_python_heap.py --launcher MEMTRACE --memreport MEMREPORT --prog NATIVE_PROG
                            --workdir DIR CASE
       check_python_heap.py --list     (the cases, one a line: tests/python.cmake makes a
                                        test of each)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402

JSON_SCRIPT = """\
import json, sys
d = {"key%d" % i: [i, str(i), {"v": i * 1.5}] for i in range(20000)}
s = json.dumps(d)
e = json.loads(s)
assert e == d
print("round trip", len(s))
sys.exit(3)
"""

# Two markers of sizes nothing else asks for bracket the work; tracemalloc (when tracing)
# starts right after the first and takes its snapshot right after the second.
MARKED_SCRIPT = """\
import json, sys, tracemalloc
first = bytearray(1234567)
tracing = "--tracemalloc" in sys.argv
if tracing:
    tracemalloc.start()
d = {"key%d" % i: [i, str(i), {"v": i * 1.5}] for i in range(20000)}
text = json.dumps(d)
back = json.loads(text)
words = [str(i) * (i % 13) for i in range(30000)]
second = bytearray(7654321)
if tracing:
    snap = tracemalloc.take_snapshot()
    print(sum(st.size for st in snap.statistics("lineno")))
"""

PYENV = {"3.8": "3.8.18", "3.9": "3.9.18", "3.10": "3.10.13", "3.11": "3.11.7",
         "3.12": "3.12.1", "3.13": "3.13.0", "3.7": "3.7.16", "2.7": "2.7.18"}


class Skip(Exception):
    pass


def interpreter(tag):
    """The python of a case: 'debian' is /usr/bin/python3.11, else pyenv's build of tag."""
    if tag == "debian":
        path = "/usr/bin/python3.11"
    else:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip() \
            if shutil.which("pyenv") else os.path.expanduser("~/.pyenv")
        path = os.path.join(root, "versions", PYENV[tag], "bin", "python" + tag)
    if not os.access(path, os.X_OK):
        raise Skip(f"{path} is not installed")
    return path


def run(a, w, name, argv, extra_opts=(), env=None):
    """Runs argv under the launcher into w/name.db; returns (completed process, capture)."""
    cap = os.path.join(w, name + ".db")
    e = dict(os.environ, **(env or {}))
    e.pop("PYTHONMALLOC", None) if not (env and "PYTHONMALLOC" in env) else None
    r = subprocess.run([a.memtrace, "-o", cap, *extra_opts, "--", *argv], capture_output=True,
                       text=True, env=e, cwd=w)
    return r, cap


def summary(a, cap, *opts):
    r = subprocess.run([a.memreport, "summary", "--json", *opts, cap], capture_output=True,
                       text=True)
    if not check(r.returncode == 0, f"memreport summary {' '.join(opts)} reads "
                 f"{os.path.basename(cap)} ({r.stderr.strip()})"):
        return {}
    return json.loads(r.stdout)


def script(w, name, text):
    path = os.path.join(w, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def within(x, want, rel):
    return want > 0 and abs(x - want) <= rel * want


def heap_case(tag, env=None):
    """The json round trip: the sum of the heaps peaks where PYTHONMALLOC=malloc's does."""
    def case(a, w):
        py = interpreter(tag)
        s = script(w, "json_rt.py", JSON_SCRIPT)
        plain = subprocess.run([py, s], capture_output=True, text=True, env=dict(
            os.environ, **(env or {})))
        r, cap = run(a, w, "hooks", [py, s], env=env)
        check(r.returncode == plain.returncode == 3 and r.stdout == plain.stdout,
              f"output and exit status unchanged ({r.returncode}, {r.stdout!r})")
        check("memtrace:" not in r.stderr.replace("memtrace: capture written", ""),
              f"nothing said but the capture ({r.stderr.strip()!r})")
        m, mcap = run(a, w, "malloc", [py, s], ["--python-malloc"], env=env)
        check(m.returncode == 3, f"--python-malloc: exit status 3 ({m.returncode})")
        s_h, s_m = summary(a, cap, "--heap", "libc"), summary(a, mcap)
        want = s_m.get("peak_bytes", 0)
        total = s_h.get("total", {}).get("peak_bytes", 0)
        py_heap = summary(a, cap, "--heap", "python")
        both = summary(a, cap)
        check(both.get("peak_bytes") == total,
              f"the default view is libc's and python's heaps together ({both.get('peak_bytes')})")
        check("recorded as heap python" in s_h.get("python_allocators", ""),
              f"the capture says which Python and that it was recorded "
              f"({s_h.get('python_allocators')!r})")
        check(within(total, want, 0.005),
              f"peak of every heap {total} = PYTHONMALLOC=malloc's libc peak {want} (0.5 %)")
        check(py_heap.get("peak_bytes", 0) > 0.9 * want,
              f"--heap python: its peak {py_heap.get('peak_bytes')} holds the objects")
        check(s_h.get("peak_bytes", want) < 0.05 * want,
              f"libc heap {s_h.get('peak_bytes')}: pymalloc's arenas and large blocks are "
              f"not in it again")
        check(py_heap.get("unmatched_frees") == 0,
              f"no free in the python heap of a block it did not see "
              f"({py_heap.get('unmatched_frees')})")
        check("python seen" not in json.dumps(s_m) and
              "left as they are" in s_m.get("python_allocators", ""),
              f"--python-malloc: no python heap ({s_m.get('python_allocators')!r})")
        check("python" not in s_m, "--python-malloc: no python line")
    case.__doc__ = heap_case.__doc__ + f" ({tag})"
    return case


def tracemalloc_case(tag):
    """tracemalloc as a second opinion: bytes allocated between two markers and still held at
    the second, tracemalloc's snapshot against the capture's python and libc heaps (1 %)."""
    def case(a, w):
        py = interpreter(tag)
        s = script(w, "marked.py", MARKED_SCRIPT)
        t = subprocess.run([py, s, "--tracemalloc"], capture_output=True, text=True)
        if not check(t.returncode == 0, f"tracemalloc run ({t.stderr.strip()})"):
            return
        traced = int(t.stdout.split()[-1])
        r, cap = run(a, w, "marked", [py, s])
        check(r.returncode == 0, f"traced run exits 0 ({r.stderr.strip()})")
        def one(query):
            r = subprocess.run([a.memreport, "sql", "--json", cap, query], capture_output=True,
                               text=True)
            rows = json.loads(r.stdout) if r.returncode == 0 else []
            return list(rows[0].values())[0] if rows else None

        # PyObject_Malloc is asked for the bytes and one byte more (the bytearray's NUL).
        at = [one(f"SELECT ts FROM allocations WHERE heap = 4 AND size = {n + 1}")
              for n in (1234567, 7654321)]
        if not check(all(t is not None for t in at), f"both markers in the python heap ({at})"):
            return
        got = one("SELECT sum(size) FROM allocations WHERE heap IN (1, 4) AND ts > "
                  f"{at[0]} AND ts <= {at[1]} AND (freed_ts IS NULL OR freed_ts > {at[1]})") or 0
        check(within(got, traced, 0.01),
              f"held at the second marker: memtrace {got}, tracemalloc {traced} (1 %)")
    case.__doc__ = tracemalloc_case.__doc__ + f" ({tag})"
    return case


def refused_case(tag):
    """A Python whose allocators are not wrapped (2.7: no PyMem_SetAllocator; 3.7: not a
    version known) runs as before, with one memtrace: line and the capture saying why."""
    def case(a, w):
        py = interpreter(tag)
        s = script(w, "json_rt.py", JSON_SCRIPT)
        r, cap = run(a, w, "refused", [py, s])
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("memtrace:") and
                 "capture written" not in ln]
        check(r.returncode == 3, f"exit status 3 ({r.returncode})")
        check(len(lines) == 1 and "not recorded" in lines[0],
              f"one memtrace: line says why ({lines})")
        s_h = summary(a, cap)
        check("not recorded" in s_h.get("python_allocators", ""),
              f"the capture says why ({s_h.get('python_allocators')!r})")
        check("total" not in s_h and "python" not in s_h, "no python heap")
    case.__doc__ = refused_case.__doc__ + f" ({tag})"
    return case


def case_debug_hooks(a, w):
    """PYTHONMALLOC=debug: the debug hooks' padding and their malloc calls are not counted;
    the blocks are, once."""
    heap_case("3.12", env={"PYTHONMALLOC": "pymalloc_debug"})(a, w)


def case_non_python(a, w):
    """A program that is no Python: no python heap, nothing said, as before."""
    r, cap = run(a, w, "native", [a.prog])
    check(r.returncode == 0, f"exit 0 ({r.returncode}: {r.stderr.strip()})")
    s_h = summary(a, cap)
    check("python_allocators" not in s_h and "python" not in s_h and "total" not in s_h,
          f"no python heap, no python line ({sorted(s_h)})")
    sql = subprocess.run([a.memreport, "sql", cap, "SELECT count(*) FROM heap"],
                         capture_output=True, text=True)
    check(sql.stdout.split()[-1:] == ["1"], f"one heap, libc ({sql.stdout.strip()})")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}
for _tag in ("debian", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13"):
    CASES["heap_" + _tag.replace(".", "")] = heap_case(_tag)
for _tag in ("debian", "3.12", "3.13"):
    CASES["tracemalloc_" + _tag.replace(".", "")] = tracemalloc_case(_tag)
for _tag in ("2.7", "3.7"):
    CASES["refused_" + _tag.replace(".", "")] = refused_case(_tag)


def main():
    if sys.argv[1:] == ["--list"]:  # tests/python.cmake makes a test of each
        print("\n".join(sorted(CASES)))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for opt, dest in (("--launcher", "memtrace"), ("--memreport", "memreport"),
                      ("--prog", "prog"), ("--workdir", "workdir")):
        ap.add_argument(opt, dest=dest, required=True)
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    w = a.workdir
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    try:
        CASES[a.case](a, w)
    except Skip as e:
        if not failures:
            print(f"SKIP: {e}")
            sys.exit(77)
    print(f"{'0' if failures else '1'} passed, {len(failures) and 1} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
