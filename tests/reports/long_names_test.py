#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A function name of over 3,000 characters (a C++ template's, as deep instantiations give)
# is never cut silently: the text views that print whole names (top, stats, stacks, leaks,
# live, diff's function rows) print it whole, short form included; JSON and the flame graph
# page's data keep it whole; a view that cuts by design (a diff stack row, past its
# innermost function; top's list of the functions a name could mean) says so ("< ...",
# "…").
# The standard report fixture (reports_fixture) with make_node renamed.
# Usage: long_names_test.py MEMREPORT REPORTS_FIXTURE WORKDIR
import json
import os
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, finish, fresh_dir, page_data, runner  # noqa: E402

# 3,021 characters as demangled; shown, its template arguments read <...> (3,023).
SPACE = "app::" + "n" * 3000
LONG = SPACE + "::make_node<int>(int)"
SHORT = SPACE + "::make_node<...>(int)"


def main():
    memreport, fixture, work = sys.argv[1:4]
    fresh_dir(work)
    run = runner(memreport)
    caps = []
    for name in ("a.db", "b.db"):  # b keeps make_node: for diff, the long one went
        cap = os.path.join(work, name)
        subprocess.run([fixture, cap], check=True)
        if not caps:
            with sqlite3.connect(cap) as db:
                db.execute("UPDATE frame SET function = ? WHERE function = 'make_node'", (LONG,))
        caps.append(cap)
    cap = caps[0]
    check(len(LONG) > 3000, f"the name is {len(LONG)} characters")

    for view, args in (("top", ["--top", "0"]), ("stats", ["--top", "0"]),
                       ("stacks", ["--top", "0"]), ("leaks", []), ("live", ["--once"])):
        text = run(view, cap, *args)
        check(SHORT in text and "\u2026" not in text,
              f"{view}: the name whole in text ({max(map(len, text.splitlines()))} chars "
              "in its longest line)")
    for view, args in (("top", ["--top", "0"]), ("stacks", ["--top", "0"]), ("leaks", [])):
        check(LONG in run(view, cap, "--json", *args) and
              SHORT not in run(view, cap, "--json", *args), f"{view} --json: the name whole")
    check(f"{LONG} (" in run("top", cap, "--full-names", "--top", "0"),
          "top --full-names: the name whole as demangled")

    diff = run("diff", cap, caps[1], "--top", "0")
    check(SHORT in diff, "diff: the function row's name whole")
    rows = [r for r in diff.split("stacks, largest change first:")[-1].splitlines()
            if "nnnn" in r]
    check(rows and all(SPACE + "::make_node<...> < ..." in r for r in rows),
          "diff: a stack row shows its innermost function whole, then cuts the rest by "
          "design, visibly")

    # top's "ambiguous" line lists its candidates, each cut visibly so that all show.
    r = subprocess.run([memreport, "top", cap, "--callers", "a"], capture_output=True, text=True)
    line = r.stderr.splitlines()[0] if r.stderr else ""
    check(r.returncode == 1 and "5 functions match: app::nnnn" in line and
          "n\u2026 (tree.c), cache_put (cache.c), load_config (config.c), main (prog.c), "
          "parse_file (parse.c)" in line and len(line) < 500,
          f"top --callers: every candidate listed, the long one cut visibly: {line[-150:]!r}")

    page = os.path.join(work, "page.html")
    run("flamegraph", cap, "-o", page)
    d = page_data(page)
    short = {d["strings"][int(k)]: v for k, v in d["short_names"].items()}
    check(short.get(LONG) == SHORT, "flame graph: the drawn short name whole in the data")
    finish()


if __name__ == "__main__":
    main()
