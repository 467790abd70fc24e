#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Python programs traced: every allocation's stack holds its Python frames (function, file,
line as CPython gives them) where the interpreter runs them; Pythons without readable frames
and programs that are not Python keep their native stacks, and the capture says why.

Usage: check_python_frames.py --launcher MEMTRACE --memreport MEMREPORT --workdir DIR CASE
       check_python_frames.py --list     (the cases, one a line)
A case whose Python is not installed exits 77 and says so.
"""
import argparse
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from checks import check, failures  # noqa: E402

SCENARIOS = os.path.join(HERE, "scenarios.py")


def pyenv_python(version):
    """pyenv's build of VERSION (a prefix: "3.12"), or None."""
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
    except OSError:
        root = os.path.expanduser("~/.pyenv")
    found = sorted(glob.glob(os.path.join(root or "", "versions", version + ".*", "bin",
                                          "python3")))
    return found[-1] if found else None


PYTHONS = {
    "debian_3_11": lambda: "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11")
    else None,
    "3_11": lambda: pyenv_python("3.11"),
    "3_12": lambda: pyenv_python("3.12"),
    "3_13": lambda: pyenv_python("3.13"),
    "3_10": lambda: pyenv_python("3.10"),
}


def need(python_id):
    py = PYTHONS[python_id]()
    if not py:
        print(f"skipped: no Python {python_id.replace('_', '.')} here")
        sys.exit(77)
    return py


def trace(a, w, argv, name):
    cap = os.path.join(w, name + ".db")
    r = subprocess.run([a.launcher, "-o", cap, "--"] + argv, capture_output=True, text=True)
    return r, cap


def captures_by_pid(d):
    """The captures of a directory (memtrace -o DIR/), by the pid each says."""
    out = {}
    for cap in glob.glob(os.path.join(d, "*.db")):
        out[int(meta(cap, "pid"))] = cap
    return out


def meta(cap, key):
    with sqlite3.connect(cap) as db:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def python_mappings(cap):
    with sqlite3.connect(cap) as db:
        return db.execute("SELECT count(*) FROM mapping WHERE path = '[python]'").fetchone()[0]


def python_stacks_by_size(a, cap, sizes):
    """For each allocation of one of `sizes` bytes: its Python frames, leaf first, as
    (function, file, line) lists; a dict size -> list of stacks."""
    want = ",".join(str(s) for s in sizes)
    q = (f"SELECT a.seq, s.depth, s.function, s.file, s.line, s.module, a.size "
         f"FROM allocations a JOIN stacks s ON s.callsite = a.callsite "
         f"WHERE a.size IN ({want}) ORDER BY a.seq, s.depth")
    r = subprocess.run([a.memreport, "sql", cap, q, "--json"], capture_output=True, text=True)
    if not check(r.returncode == 0, f"memreport sql reads the capture ({r.stderr.strip()})"):
        return {}
    rows = json.loads(r.stdout)
    rows = rows[0] if rows and isinstance(rows[0], list) else rows
    by_seq = {}
    for row in rows:
        e = by_seq.setdefault(row["seq"], (row["size"], []))
        if row["module"] == "[python]":
            e[1].append([row["function"], row["file"], row["line"]])
    out = {}
    for size, frames in by_seq.values():
        out.setdefault(size, []).append(frames)
    return out


def check_stacks(a, cap, expected, marks=None):
    """Each expected allocation (a size no other has) carries exactly its Python stack."""
    status = meta(cap, "python") or ""
    check(status.startswith("CPython 3.") and status.endswith(": Python frames"),
          f"the capture names the Python and its frames ({status!r})")
    check(meta(cap, "python_walks_failed") is None,
          f"no walk failed ({meta(cap, 'python_walks_failed')})")
    sizes = [50_000_001] + [e["bytes"] for e in expected.values()]
    got = python_stacks_by_size(a, cap, sizes)
    if marks:
        # The peak: make_big's 50 MB, under outer, with the lines marked in the script.
        big = got.get(50_000_001, [])
        top = big[0][:2] if len(big) == 1 else big
        want = [["make_big", SCENARIOS, marks["make_big"]], ["outer", SCENARIOS, marks["outer"]]]
        check(top == want, f"the 50 MB bytearray: make_big / outer at their lines ({top})")
    for label, e in sorted(expected.items()):
        found = got.get(e["bytes"], [])
        one = found[0] if len(found) == 1 else found
        check(one == e["stack"], f"{label}: its Python stack, {len(e['stack'])} frames, lines "
              f"as CPython gives them" + ("" if one == e["stack"] else
                                          f"\n    got  {one}\n    want {e['stack']}"))


def check_scenarios(a, w, python):
    out = os.path.join(w, "expected.json")
    d = os.path.join(w, "caps")
    r = subprocess.run([a.launcher, "-o", d + "/", "--", python, SCENARIOS, out],
                       capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout == "scenarios done\n",
          f"the program's output and exit unchanged ({r.returncode}: {r.stdout!r})")
    caps = captures_by_pid(d)
    with open(out) as f:
        main_run = json.load(f)
    if not check(main_run["pid"] in caps, "a capture of the program"):
        return
    marks = {}
    with open(SCENARIOS) as f:
        for n, text in enumerate(f, 1):
            if "# line: " in text:
                marks[text.split("# line: ")[1].strip()] = n
    check_stacks(a, caps.pop(main_run["pid"]), main_run["expected"], marks)
    with open(out + ".child.json") as f:
        child = json.load(f)
    if check(child["pid"] in caps, "a capture of the forked child"):
        check_stacks(a, caps.pop(child["pid"]), child["expected"])
    # multiprocessing's workers (fork and spawn): each a complete capture with Python frames.
    check(len(caps) >= 3, f"multiprocessing's workers have captures ({len(caps)})")
    for pid, cap in sorted(caps.items()):
        check(meta(cap, "capture_status") == "complete" and
              (meta(cap, "python") or "").endswith(": Python frames") and
              python_mappings(cap) == 1, f"worker {pid}: complete, with Python frames")


def make_case(python_id):
    def case(a, w):
        check_scenarios(a, w, need(python_id))
    case.__doc__ = f"Python {python_id}: every scenario's Python stack, exactly."
    return case


CASES = {f"frames_{p}": make_case(p) for p in PYTHONS if p != "3_10"}


def case_native_only_3_10(a, w):
    """CPython 3.10 keeps its native stacks, and the capture says why."""
    python = need("3_10")
    r, cap = trace(a, w, [python, "-c", "x = bytearray(1000000); print('done')"], "py310")
    check(r.returncode == 0 and r.stdout == "done\n" and "memtrace:" not in r.stderr.replace(
        "memtrace: capture written", ""), f"program unchanged, nothing said ({r.stderr!r})")
    status = meta(cap, "python") or ""
    check(status.startswith("CPython 3.10.") and "native stacks only" in status,
          f"the capture says which Python and why no frames ({status!r})")
    check(python_mappings(cap) == 0, "no [python] frames")


def case_not_python(a, w):
    """A program that is not Python: no [python] mapping, no python meta."""
    r, cap = trace(a, w, ["/bin/sh", "-c", "echo done"], "sh")
    check(r.returncode == 0 and r.stdout == "done\n", "program unchanged")
    check(meta(cap, "python") is None and python_mappings(cap) == 0,
          "nothing about Python in the capture")


def make_shutdown_case(python_id):
    def case(a, w):
        python = need(python_id)
        script = os.path.join(HERE, "shutdown.py")
        for run in range(10):
            r, cap = trace(a, w, [python, script], f"shutdown{run}")
            if not check(r.returncode == 0 and r.stdout == "done\n",
                         f"run {run}: exits as untraced ({r.returncode}: {r.stderr[-300:]!r})"):
                break
    case.__doc__ = f"Python {python_id}: shutdown while daemon threads allocate, 10 runs."
    return case


for p in ("debian_3_11", "3_12", "3_13"):
    CASES[f"shutdown_{p}"] = make_shutdown_case(p)
def case_reports(a, w):
    """Reports of a Python program: text stacks read function (file.py:line), the
    interpreter's own frames hidden (kept with --all-frames) and their bytes the Python
    function's in top, Python frames green in the flame graph page."""
    python = need("3_12")
    script = os.path.join(w, "big.py")
    with open(script, "w") as f:
        f.write("def make_big():\n    return bytearray(50_000_000)\n\n\n"
                "def outer():\n    return make_big()\n\n\nx = outer()\n")
    r, cap = trace(a, w, [python, script], "big")
    check(r.returncode == 0, "traced")
    text = subprocess.run([a.memreport, "stacks", "--top", "1", cap], capture_output=True,
                          text=True).stdout
    lines = [ln.strip() for ln in text.splitlines()]
    i = lines.index(f"make_big ({script}:2)") if f"make_big ({script}:2)" in lines else -1
    check(i > 0 and lines[i + 1:i + 3] == [f"outer ({script}:6)", f"<module> ({script}:9)"],
          f"stacks: make_big / outer / <module> as function (file.py:line)\n{text}")
    check("libpython" not in text,
          f"the interpreter's frames hidden by default (its loop, bytearray's code)\n{text}")
    everything = subprocess.run([a.memreport, "stacks", "--top", "1", "--all-frames", cap],
                                capture_output=True, text=True).stdout
    check("_PyEval_EvalFrameDefault" in everything and "PyByteArray_Resize" in everything,
          "... and shown with --all-frames")
    top = subprocess.run([a.memreport, "top", "--top", "1", cap], capture_output=True,
                         text=True).stdout
    check(f"make_big ({script})" in top,
          f"top: the Python function holds the bytes the interpreter allocated for it\n{top}")
    sys.path.insert(0, os.path.join(HERE, "..", "reports"))
    import webdriver
    if why := webdriver.missing():
        print("skipped the flame graph page:", why)
        return
    page = os.path.join(w, "flame.html")
    subprocess.run([a.memreport, "flamegraph", cap, "-o", page], check=True)
    with webdriver.Browser(width=1280, height=800) as b:
        b.get("file://" + page)
        check(b.js("return window.__errors") == [], "no script errors")
        b.js("var h = document.getElementById('hide'); h.checked = false;"
             "h.dispatchEvent(new Event('change'));")  # the interpreter's frames drawn too
        colours = b.js("""var out = {};
            document.querySelectorAll('#chart .fr').forEach(function (d) {
              out[d.dataset.name] = getComputedStyle(d).backgroundColor; });
            return out;""")

        def green(rgb):
            r_, g_, b_ = (int(v) for v in rgb[rgb.index("(") + 1:-1].split(",")[:3])
            return g_ > r_ and g_ > b_

        for name in ("make_big", "outer", "<module>"):
            check(name in colours and green(colours[name]),
                  f"flame graph: {name} drawn in green ({colours.get(name)})")
        native = [n for n in colours if n.startswith("PyByteArray")]
        check(native and not green(colours[native[0]]),
              f"flame graph: native frames keep warm colours ({native})")


def case_setting_off(a, w):
    """MEMTRACE_PYTHON=0: a Python that has frames keeps native stacks, the capture says so."""
    python = need("3_12")
    cap = os.path.join(w, "off.db")
    r = subprocess.run([a.launcher, "-o", cap, "--", python, "-c", "x = bytearray(10**6)"],
                       capture_output=True, text=True, env=dict(os.environ, MEMTRACE_PYTHON="0"))
    check(r.returncode == 0, "traced")
    status = meta(cap, "python") or ""
    check(status.startswith("CPython 3.12.") and status.endswith("(MEMTRACE_PYTHON=0)"),
          f"the capture says frames were turned off ({status!r})")
    check(python_mappings(cap) == 0, "no [python] frames")


CASES["reports"] = case_reports
CASES["setting_off"] = case_setting_off
CASES["native_only_3_10"] = case_native_only_3_10
CASES["not_python"] = case_not_python


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--launcher")
    p.add_argument("--memreport")
    p.add_argument("--workdir")
    p.add_argument("--list", action="store_true")
    p.add_argument("case", nargs="?")
    a = p.parse_args()
    if a.list:
        print("\n".join(CASES))
        return 0
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    CASES[a.case](a, a.workdir)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
