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
second, as tracemalloc's snapshot sums them and as the capture does, within 1 %; and line
by line at a script's peak, its ten largest lines and their bytes (1 %).

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
from checks import check, failures, finish, fresh_dir  # noqa: E402

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

# Lines each holding a different amount at the end (4 % apart at least, so that the order
# is the same in every version), of small objects from pymalloc and larger ones from malloc;
# a marker last. tracemalloc (when tracing) prints its ten largest lines there.
LINES_SCRIPT = """\
import sys, tracemalloc
tracing = "--tracemalloc" in sys.argv
if tracing:
    tracemalloc.start()
words = [str(i) * 3 for i in range(60000)]
floats = {i: i * 2.5 for i in range(40000)}
blocks = [bytearray(1000 + i % 7) for i in range(2500)]
pairs = [(i, -i) for i in range(26000)]
big = b"x" * 1_900_000
ints = list(range(100000, 160000))
texts = ["%d-%d" % (i, i) for i in range(25000)]
lists = [[i] for i in range(12500)]
numbers = set(range(300000, 330000))
raw = bytes(1_100_000)
table = {str(i): None for i in range(9000)}
marker = bytearray(7654321)
if tracing:
    for st in tracemalloc.take_snapshot().statistics("lineno")[:10]:
        print(st.traceback[0].filename, st.traceback[0].lineno, st.size)
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


def tracemalloc_lines_case(tag):
    """tracemalloc as a second opinion, line by line: its snapshot at the script's peak
    (statistics by line: the innermost Python frame of each block) against the capture's
    python and libc heaps live then, by each block's innermost Python frame: the same ten
    largest lines, in the same order, bytes within 1 % each."""
    def case(a, w):
        py = interpreter(tag)
        s = script(w, "lines.py", LINES_SCRIPT)
        t = subprocess.run([py, s, "--tracemalloc"], capture_output=True, text=True, cwd=w)
        if not check(t.returncode == 0, f"tracemalloc run ({t.stderr.strip()})"):
            return
        want = [(f, int(n), int(b)) for f, n, b in (ln.rsplit(" ", 2)
                                                    for ln in t.stdout.splitlines())]
        r, cap = run(a, w, "lines", [py, s])
        check(r.returncode == 0, f"traced run exits 0 ({r.stderr.strip()})")

        def rows(query):
            r = subprocess.run([a.memreport, "sql", "--json", cap, query], capture_output=True,
                               text=True)
            check(r.returncode == 0, f"memreport sql ({r.stderr.strip()})")
            return json.loads(r.stdout) if r.returncode == 0 else []

        marker = rows("SELECT ts FROM allocations WHERE heap = 4 AND size = 7654322")
        if not check(len(marker) == 1, f"the marker in the python heap ({marker})"):
            return
        at = marker[0]["ts"]
        got = rows(
            "WITH live AS (SELECT callsite, sum(size) AS bytes FROM allocations"
            f" WHERE heap IN (1, 4) AND ts <= {at} AND (freed_ts IS NULL OR freed_ts > {at})"
            " GROUP BY callsite),"
            " py AS (SELECT callsite, depth, file, line FROM stacks WHERE module = '[python]'"
            " AND callsite IN (SELECT callsite FROM live)),"
            " leaf AS (SELECT callsite, min(depth) AS d FROM py GROUP BY callsite)"
            " SELECT py.file AS file, py.line AS line, sum(live.bytes) AS bytes FROM live"
            " JOIN leaf ON leaf.callsite = live.callsite"
            " JOIN py ON py.callsite = leaf.callsite AND py.depth = leaf.d"
            " GROUP BY py.file, py.line ORDER BY bytes DESC LIMIT 10")
        got = [(g["file"], g["line"], g["bytes"]) for g in got]
        def names(lines):
            return [f"{os.path.basename(f)}:{n}" for f, n, _b in lines]
        check(len(want) == 10 and [w_[:2] for w_ in want] == [g[:2] for g in got],
              f"the ten largest lines, in order: tracemalloc {names(want)}, memtrace "
              f"{names(got)}")
        for (f, n, b), (_f, _n, g) in zip(want, got):
            check(within(g, b, 0.01), f"{os.path.basename(f)}:{n}: memtrace {g} B, "
                  f"tracemalloc {b} B (1 %)")
    case.__doc__ = tracemalloc_lines_case.__doc__ + f" ({tag})"
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


# Strings built on line 5 of build(), kept: its bytes at the peak are what the script says
# its objects take (sys.getsizeof is what CPython asks its allocator for; the list's own
# object comes from a free list, its array of items is allocated as it grows).
FRAMES_SCRIPT = """\
import sys
def build(n):
    out = []
    for i in range(n):
        out.append(str(i) * 3)
    return out
kept = build(30000)
print(sys.getsizeof(kept) - sys.getsizeof([]) + sum(sys.getsizeof(s) for s in kept))
"""


def tool(a, argv):
    r = subprocess.run([a.memreport, *argv], capture_output=True, text=True)
    check(r.returncode == 0, f"memreport {' '.join(argv[:2])} ({r.stderr.strip()})")
    return r.stdout


def frames_case(tag):
    """Python frames on the python heap's events: build()'s objects under build, with the
    bytes the script itself counts (the strings and the list, live at the peak)."""
    return lambda a, w: frames_check(a, w, interpreter(tag))


def frames_check(a, w, py):
    s = script(w, "frames.py", FRAMES_SCRIPT)
    r, cap = run(a, w, "frames", [py, s])
    check(r.returncode == 0, f"traced run exits 0 ({r.stderr.strip()})")
    want = int(r.stdout.split()[-1]) if r.stdout.strip() else -1
    top = json.loads(tool(a, ["top", "--json", "--top", "0", cap]) or "{}")
    build = [f["total"] for f in top.get("functions", [])
             if f["function"] == "build" and f.get("file") == s]
    # At the peak one temporary of the loop may still be live (str(i), an int: < 200 B).
    check(len(build) == 1 and 0 <= build[0] - want <= 200,
          f"build ({s}) holds {build} B at the peak; the script counts {want}")


def case_views_debian(a, w):
    """With a python heap, every view answers each question with one number: the peak (the
    libc and python heaps together, the default) in summary, top, stats, diff, live, the
    flame graph and the exports; what is left at the end in summary, leaks and diff; and
    --heap python selects the python heap in summary, flamegraph and plot."""
    py = interpreter("debian")
    s = script(w, "json_rt.py", JSON_SCRIPT.replace("20000", "4000"))
    r, cap = run(a, w, "views", [py, s])
    check(r.returncode == 3, f"traced ({r.returncode}: {r.stderr.strip()})")
    sm = summary(a, cap)
    peak = sm.get("peak_bytes", -1)
    total, libc, pyh = sm.get("total", {}), sm.get("libc", {}), sm.get("python", {})
    check(total.get("peak_bytes") == peak and peak > 0,
          f"summary: peak {peak} is the total's ({total.get('peak_bytes')})")
    live_end = sm.get("leaked_bytes", 0) + sm.get("runtime_held_bytes", 0)
    check(total.get("live_bytes") == live_end == libc.get("live_bytes", -1) +
          pyh.get("live_bytes", -1),
          f"summary: live at the end {live_end} = total's {total.get('live_bytes')} = libc's "
          f"{libc.get('live_bytes')} + python's {pyh.get('live_bytes')}")
    check(0 < libc.get("peak_bytes", 0) < peak and 0 < pyh.get("peak_bytes", 0) <= peak,
          f"summary: each heap's peak (libc {libc.get('peak_bytes')}, python "
          f"{pyh.get('peak_bytes')}) within the total's {peak}")
    # The view names the same heaps (view_heaps.py): one name for the one total.
    check(total.get("heaps") == "libc and python",
          f"summary: the total's heaps named 'libc and python' ({total.get('heaps')!r})")
    text = tool(a, ["summary", cap]) or ""
    check("(libc and python)" in text.split("total:")[-1].split("\n")[0],
          "summary's total line names 'libc and python'")
    seen = {}
    seen["top"] = json.loads(tool(a, ["top", "--json", cap]) or "{}").get("total")
    seen["stats"] = json.loads(tool(a, ["stats", "--json", cap]) or "{}").get("peak_bytes")
    diff = json.loads(tool(a, ["diff", "--json", cap, cap]) or "{}").get("totals", {})
    seen["diff"] = diff.get("peak_bytes", {}).get("new")
    folded = tool(a, ["export", cap, "--format", "folded"])
    seen["folded"] = sum(int(ln.rsplit(" ", 1)[1]) for ln in folded.splitlines() if ln)
    massif = os.path.join(w, "massif.out")
    tool(a, ["export", cap, "--format", "massif", "-o", massif])
    with open(massif) as f:
        seen["massif"] = max(int(ln.split("=")[1]) for ln in f if ln.startswith("mem_heap_B="))
    page = os.path.join(w, "flame.html")
    tool(a, ["flamegraph", cap, "-o", page])
    with open(page) as f:
        html = f.read()
    at = html.find('"total_bytes":')
    seen["flamegraph"] = int(html[at + 14:].split(",")[0].split("}")[0]) if at >= 0 else None
    live = tool(a, ["live", "--once", cap])
    seen["live"] = int(live.split("), peak ")[1].split("(")[1].split()[0]) \
        if "), peak " in live else None
    check(all(v == peak for v in seen.values()), f"the peak {peak} everywhere: {seen}")
    leaks = json.loads(tool(a, ["leaks", "--json", cap]) or "{}").get("bytes")
    check(leaks == sm.get("leaked_bytes") == diff.get("leaked_bytes", {}).get("new"),
          f"leaked: leaks {leaks}, summary {sm.get('leaked_bytes')}, diff "
          f"{diff.get('leaked_bytes', {}).get('new')}")
    only = summary(a, cap, "--heap", "python")
    tool(a, ["flamegraph", "--heap", "python", cap, "-o", page, "-f"])
    with open(page) as f:
        html = f.read()
    at = html.find('"total_bytes":')
    fg = int(html[at + 14:].split(",")[0].split("}")[0]) if at >= 0 else None
    check(only.get("peak_bytes") == fg == pyh.get("peak_bytes"),
          f"--heap python: summary {only.get('peak_bytes')}, flamegraph {fg}, the python line "
          f"{pyh.get('peak_bytes')}")
    tool(a, ["plot", "--heap", "python", cap, "-o", os.path.join(w, "py.png")])


# Sub-interpreters (3.12: each with its own GIL and obmalloc state), a signal handler that
# allocates, daemon threads still allocating at exit: the output is the untraced run's.
HARM_SCRIPT = """\
import signal, sys, threading, time
try:
    import _xxsubinterpreters as interpreters
except ImportError:
    import _interpreters as interpreters
got = []
def on_alarm(sig, frame):
    got.append([str(i) for i in range(100)])
signal.signal(signal.SIGALRM, on_alarm)
signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
def spin():
    while True:
        [str(i) * 2 for i in range(100)]
        time.sleep(0.0005)
for _ in range(4):
    threading.Thread(target=spin, daemon=True).start()
for _ in range(3):
    sub = interpreters.create()
    interpreters.run_string(sub, "x = [str(i) for i in range(20000)]; del x")
    interpreters.destroy(sub)
data = [str(i) * 3 for i in range(200000)]
while not got:
    time.sleep(0.01)
signal.setitimer(signal.ITIMER_REAL, 0)
print(len(data), sum(map(len, data)))
"""


def case_harm_312(a, w):
    """Sub-interpreters, a signal handler that allocates, daemon threads allocating at exit:
    output and exit status as untraced, the objects recorded."""
    py = interpreter("3.12")
    s = script(w, "harm.py", HARM_SCRIPT)
    plain = subprocess.run([py, s], capture_output=True, text=True)
    r, cap = run(a, w, "harm", [py, s])
    check(r.returncode == plain.returncode == 0 and r.stdout == plain.stdout,
          f"output and exit status unchanged ({r.returncode}, {r.stdout!r}, {plain.stdout!r})")
    sm = summary(a, cap)
    check(sm.get("python", {}).get("allocations", 0) > 200000,
          f"the objects recorded ({sm.get('python', {}).get('allocations')})")


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
for _tag in ("debian", "3.12", "3.13"):
    CASES["frames_" + _tag.replace(".", "")] = frames_case(_tag)
for _tag in ("debian", "3.12", "3.13"):
    CASES["tracemalloc_lines_" + _tag.replace(".", "")] = tracemalloc_lines_case(_tag)
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
    fresh_dir(a.workdir)
    try:
        CASES[a.case](a, a.workdir)
    except Skip as e:
        if not failures:
            print(f"SKIP: {e}")
            sys.exit(77)
    finish()


if __name__ == "__main__":
    main()
