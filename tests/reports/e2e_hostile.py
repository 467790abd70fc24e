#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Every report on a real traced program whose function names, file name, thread name and
# arguments are not text (progs/hostile_names.c): each report exits 0; text output carries
# no raw control character and only UTF-8, with bytes that are not UTF-8 written \xNN and
# control characters \x1b, \u009b; JSON is valid and keeps every name; the flame graph
# data holds no < > &.
# Usage: e2e_hostile.py MEMTRACE_LAUNCHER MEMREPORT PROG WORKDIR
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402


# The functions of progs/hostile_names.c, as JSON (exact strings, invalid bytes as \xNN)
# and as text (control characters escaped too), with the bytes each leaks.
FUNCTIONS = [
    ("caf\\xe9_alloc", "caf\\xe9_alloc", 100),
    ("esc\x1b]0;pwned\x07\x1b[2J<!--<script>", "esc\\x1b]0;pwned\\x07\\x1b[2J<!--<script>", 200),
    ("csi\u009b31m_alloc", "csi\\u009b31m_alloc", 300),
    ("</script><img src=x onerror=alert(1)>", "</script><img src=x onerror=alert(1)>", 400),
    ("file_alloc", "file_alloc", 500),
]
ARGS = [b"\x1b]0;pwned\x07", b"caf\xe9", b"<!--<script>"]
RAW_CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def text_ok(name, out):
    check(RAW_CONTROL.search(out) is None, "%s: no raw control character in text" % name)
    try:
        out.decode("utf-8")
        check(True, "%s: text is UTF-8" % name)
    except UnicodeDecodeError as e:
        check(False, "%s: text is UTF-8 (%s)" % (name, e))
    return out.decode("utf-8", "replace")


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = os.path.join(work, "hostile.db")
    subprocess.run([launcher, "-o", cap, "--", prog] + ARGS, check=True)

    def run(*args):
        p = subprocess.run([memreport] + list(args), capture_output=True)
        check(p.returncode == 0, "memreport %s exits 0 (%d: %r)" %
              (" ".join(args[:1] + args[2:]), p.returncode, p.stderr[-300:]))
        return p.stdout

    def report_json(cmd, *extra):
        out = run(cmd, cap, "--json", *extra)
        try:
            return json.loads(out)
        except ValueError as e:
            check(False, "%s --json is valid JSON (%s)" % (cmd, e))
            return {}

    for cmd in ("leaks", "stats", "stacks"):
        text = text_ok(cmd, run(cmd, cap))
        for _, shown, _ in FUNCTIONS:
            check(shown in text, "%s text names %s" % (cmd, shown))
        check("evil\\x1b[2J.c:" in text, "%s text shows the file evil\\x1b[2J.c" % cmd)

    leaks = report_json("leaks")
    for exact, _, size in FUNCTIONS:
        g = [g for g in leaks.get("groups", []) if exact in [f.get("function") for f in g["stack"]]]
        check(len(g) == 1 and g[0]["bytes"] == size, "leaks --json: %r leaks %d bytes" %
              (exact, size))
    files = [f.get("file") for g in leaks.get("groups", []) for f in g["stack"]]
    check(any((f or "").endswith("/evil\x1b[2J.c") for f in files),
          "leaks --json keeps the file name: %r" % files)
    # A suppression pattern matches the escaped name (docs/reports.md).
    supp = os.path.join(work, "supp.txt")
    with open(supp, "w") as f:
        f.write("caf\\\\xe9*\n")
    s = report_json("leaks", "--suppressions", supp)
    check(s.get("suppressed_bytes") == 100,
          "suppression caf\\\\xe9* hides caf\\xe9_alloc's 100 bytes")
    stacks = report_json("stacks")
    names = [f.get("function") for s in stacks.get("stacks", []) for f in s["frames"]]
    check(all(exact in names for exact, _, _ in FUNCTIONS), "stacks --json keeps every name")
    stats = report_json("stats", "--top", "50")
    sites = [s.get("site") for s in stats.get("by_bytes", [])]
    check(all(exact in sites for exact, _, _ in FUNCTIONS), "stats --json names every site")
    check("t\x1b[2J" in [t.get("name") for t in stats.get("threads", [])],
          "stats --json keeps the thread name")
    check("t\\x1b[2J" in run("stats", cap).decode(), "stats text shows the thread name escaped")

    summary = text_ok("summary", run("summary", cap))
    check("\\x1b]0;pwned\\x07 caf\\xe9 <!--<script>" in summary,
          "summary text shows the arguments escaped")
    command = report_json("summary").get("command", [])
    check(command[1:] == ["\x1b]0;pwned\x07", "caf\\xe9", "<!--<script>"],
          "summary --json keeps the arguments: %r" % command)

    page = os.path.join(work, "fg.html")
    run("flamegraph", cap, "-o", page)
    html = open(page, "rb").read().decode("utf-8")
    m = re.search(r'id="fg-data">(.*?)</script>', html, re.S)
    check(m is not None and not re.search(r"[<>&]", m.group(1)),
          "flame graph data holds no < > &")
    data = json.loads(m.group(1)) if m else {}
    strings = data.get("strings", [])
    check(all(exact in strings for exact, _, _ in FUNCTIONS), "flame graph keeps every name")
    check("\x1b]0;pwned\x07 caf\\xe9 <!--<script>" in data.get("title", ""),
          "flame graph title holds the arguments: %r" % data.get("title"))
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
