#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The flame graph page's Functions tab, and memreport view's, on a C++ program
# (cxx_names_prog.cpp), in headless chromium: with non-relevant frames hidden (the default)
# the C++ standard library's allocation plumbing is passed as memreport top passes it, so
# each row's self and total are top's, also where the page merged a narrow stack; with them
# shown (the checkbox, or --all-frames), the library's functions have rows of their own, as
# in top --all-frames.
# Usage: cxx_page_test.py MEMREPORT MEMTRACE_LAUNCHER PROG WORKDIR (exit 77: no browser)
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reports"))
import webdriver  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, finish, fresh_dir, runner  # noqa: E402

TABLE_JS = """
return Array.from(document.querySelectorAll('#ftable tbody tr')).map(function (tr) {
  return {name: tr.dataset.name, self: +tr.dataset.self, total: +tr.dataset.total};
});
"""


def top_rows(run, cap, *args):
    """name -> (self, total) of top --json, rows of one name (two files) summed."""
    out = {}
    for f in json.loads(run("top", cap, "--json", "--top", "0", *args))["functions"]:
        s, t = out.get(f["function"], (0, 0))
        out[f["function"]] = (s + f["self"], t + f["total"])
    return out


def table(b):
    b.js("window.memreport.showTab('table')")
    return {r["name"]: (r["self"], r["total"]) for r in b.js(TABLE_JS)}


def compare(what, got, want, merged=()):
    """Every row agrees, its self and total, but for `merged`: the functions below the
    page's width limit, whose frames between the kept ones are not kept."""
    g = {n: v for n, v in got.items() if v[0] and n not in merged}
    w = {n: v for n, v in want.items() if v[0] and n not in merged}
    check({n: v[0] for n, v in g.items()} == {n: v[0] for n, v in w.items()},
          f"{what}: each function's self is top's: "
          f"{sorted(set(g.items()) ^ set(w.items()))[:8]}")
    bad = {n: (got.get(n, (0, 0))[1], v[1]) for n, v in want.items()
           if got.get(n, (0, 0))[1] != v[1] and n not in merged}
    check(not bad, f"{what}: each function's total is top's: {list(bad.items())[:6]}")


def main():
    memreport, launcher, prog, work = sys.argv[1:5]
    if why := webdriver.missing():
        print("SKIP:", why)
        return 77
    fresh_dir(work)
    run = runner(memreport)
    cap = os.path.join(work, "cxx.db")
    subprocess.run([launcher, "-o", cap, "--", prog, "1"], check=True, capture_output=True)
    passed, every = top_rows(run, cap), top_rows(run, cap, "--all-frames")
    check(any(n.startswith("std::") for n in every) and
          not any(n.startswith("std::") for n in passed),
          "top passes the standard library; --all-frames lists it")

    # memreport view merges frames under 0.01% of the total into their callers (flamegraph
    # too, but for --min-width 0): make_record's 24 B, through std::make_unique, stay its.
    fg = os.path.join(work, "fg.html")
    run("flamegraph", cap, "-o", fg, "--min-width", "0")
    view = os.path.join(work, "view.html")
    run("view", cap, "-o", view)
    whole = sum(v[0] for v in every.values())
    small = {n for n, v in every.items() if v[1] * 10000 < whole}
    check("app::make_record()" in small, f"the functions below the view's limit: {small}")
    with webdriver.Browser(width=1280, height=900) as b:
        for name, page in (("flamegraph", fg), ("view", view)):
            b.get("file://" + page)
            rows = table(b)
            check(not any(n.startswith("std::") for n in rows),
                  f"{name}: no standard library row in the Functions tab")
            compare(f"{name}: Functions tab", rows, passed)
            b.click(b.find("#hide"))  # show non-relevant frames
            rows = table(b)
            check(any(n.startswith("std::") for n in rows),
                  f"{name}: shown again, the library's functions have rows")
            compare(f"{name}: Functions tab, every frame", rows, every, small)
            check(b.js("return window.__errors") == [], f"{name}: no script errors")
        fa = os.path.join(work, "fg-all.html")
        run("flamegraph", cap, "-o", fa, "--all-frames", "--min-width", "0")
        b.get("file://" + fa)
        compare("flamegraph --all-frames: Functions tab", table(b), every)
    finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
