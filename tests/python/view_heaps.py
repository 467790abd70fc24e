#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport view of a capture with several heaps, in a real browser (headless chromium over
# WebDriver): a python script (heap python, its libc heap) that maps 48 MiB of anonymous
# memory (heap mmap, MEMTRACE_MMAP=1). The page's list of heaps against `memreport summary`'s
# lines for libc, python, mmap and the total; each heap's page (its header, its flame graph
# at the peak, its leaks) against `summary --heap NAME`; the other heaps drawn as lines; a
# click on a heap reopens the page on it.
# Usage: view_heaps.py --launcher MEMTRACE --memreport MEMREPORT --workdir DIR
#        (exit 77 = skipped: no browser, or no /usr/bin/python3.11)
import argparse
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "reports"))
import webdriver  # noqa: E402
from checks import check, clean_env, finish, fresh_dir  # noqa: E402

PYTHON = "/usr/bin/python3.11"
SCRIPT = """
import mmap
m = mmap.mmap(-1, 48 << 20)
m.write(b'x' * 4096)
names = [str(i) * 3 for i in range(20000)]
m.close()
kept = names[:100]
del names
"""


def summary(memreport, db, *args):
    out = subprocess.run([memreport, "summary", db, "--json", *args], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def open_heap(b, page, heap):
    b.get("about:blank")
    b.get("file://" + page + ("#heap=" + heap if heap else ""))
    check(b.js("return window.__errors") == [], "%s: no script errors" % (heap or "default"))


def page_totals(b):
    """The page's header, its leak classes summed, its graph's root and its leaks tab."""
    view = b.js("return memreport.data.view")
    live = [sum(c["bytes"] for c in view["leaks"]["classes"]),
            sum(c["blocks"] for c in view["leaks"]["classes"])]
    program = [sum(c["bytes"] for c in view["leaks"]["classes"][:5]),
               sum(c["blocks"] for c in view["leaks"]["classes"][:5])]
    root = b.js("var r = document.querySelector('#chart .fr[data-name=\"all\"]');"
                "return r ? +r.dataset.bytes : 0")
    return view["header"], live, program, root


def main():
    ap = argparse.ArgumentParser()
    for o in ("launcher", "memreport", "workdir"):
        ap.add_argument("--" + o, required=True)
    a = ap.parse_args()
    if why := webdriver.missing():
        print("SKIP:", why)
        return 77
    if not os.access(PYTHON, os.X_OK):
        print("SKIP: no %s" % PYTHON)
        return 77
    fresh_dir(a.workdir)
    db = os.path.join(a.workdir, "py.db")
    subprocess.run([a.launcher, "-o", db, "--", PYTHON, "-c", SCRIPT], check=True,
                   capture_output=True, env=clean_env(MMAP=1))
    page = os.path.join(a.workdir, "py.html")
    subprocess.run([a.memreport, "view", db, "-o", page], check=True, capture_output=True)
    s = summary(a.memreport, db)
    check(all(k in s for k in ("libc", "python", "mmap", "total")),
          "summary has the libc, python, mmap and total lines")
    mm = s["mmap"]
    check(mm["peak_bytes"] >= 48 << 20, "the mmap heap holds the mapping: %d" % mm["peak_bytes"])

    with webdriver.Browser(width=1366, height=768) as b:
        open_heap(b, page, None)
        heaps = {h["name"]: h for h in b.js("return memreport.data.heap_list")}
        check(list(heaps) == ["libc and python", "libc", "python", "mmap"],
              "the page offers the heaps, both python ones first: %r" % list(heaps))
        t = heaps["libc and python"]
        check([t["peak_bytes"], t["peak_ns"], t["live_bytes"]] ==
              [s["total"]["peak_bytes"], s["total"]["peak_time_ns"], s["total"]["live_bytes"]],
              "libc and python: summary's total line")
        for name in ("libc", "python"):
            h, want = heaps[name], s[name]
            check([h["allocations"], h["alloc_bytes"], h["peak_bytes"], h["peak_ns"],
                   h["live_bytes"], h["live_blocks"]] ==
                  [want["allocations"], want["bytes_allocated"], want["peak_bytes"],
                   want["peak_time_ns"], want["live_bytes"], want["live_blocks"]],
                  "%s: summary's %s line: %r" % (name, name, h))
        h = heaps["mmap"]
        check([h["allocations"], h["peak_bytes"], h["peak_ns"], h["live_bytes"],
               h["live_blocks"]] == [mm["allocations"], mm["peak_bytes"], mm["peak_time_ns"],
                                     mm["live_bytes"], mm["live_mappings"]],
              "mmap: summary's mmap line: %r" % h)

        # Each heap's own page: its numbers are summary --heap's (the default: summary's).
        for name, flag in (("libc and python", None), ("libc", "libc"), ("python", "python"),
                           ("mmap", "mmap")):
            open_heap(b, page, flag)
            want = summary(a.memreport, db, *(["--heap", flag] if flag else []))
            header, live, program, root = page_totals(b)
            check(b.js("return document.querySelector('#heap-list .current').dataset.heap") ==
                  name, "%s: its button is the current one" % name)
            check([header["peak_bytes"], header["peak_ns"], header["allocations"],
                   header["alloc_bytes"]] == [want["peak_bytes"], want["peak_time_ns"],
                                              want["allocations"], want["bytes_allocated"]],
                  "%s: header = summary --heap %s" % (name, flag))
            check(program == [want["leaked_bytes"], want["leaked_allocations"]],
                  "%s: leaked %r = summary's" % (name, program))
            check(root == want["peak_bytes"], "%s: the graph at the run's peak %d = summary's %d"
                  % (name, root, want["peak_bytes"]))
            lines = b.js("return memreport.data.view.series.filter(function (s) {"
                         " return s.kind === 'other'; }).map(function (s) { return s.name; })")
            check(sorted(lines) == sorted(n + " heap" for n in heaps if n != name),
                  "%s: the other heaps as lines: %r" % (name, lines))
            leaked = b.js("memreport.showTab('leaks'); return Array.from(document.querySelectorAll("
                          "'#leaks-table tbody tr')).reduce(function (t, r) {"
                          " return t + +r.dataset.bytes; }, 0)")
            check(leaked == want["leaked_bytes"], "%s: the leaks tab %d = summary's %d" %
                  (name, leaked, want["leaked_bytes"]))

        # A click on a heap reopens the page on it.
        open_heap(b, page, None)
        b.js("document.querySelector('#heap-list button[data-heap=\"python\"]').click()")
        check(b.until("return document.readyState === 'complete' && !!window.memreport && "
                      "memreport.heap === 'python'"), "the click reopens the page on python")
        check("heap=python" in b.js("return location.hash"), "the heap is kept in the URL")
        open(os.path.join(a.workdir, "view-heaps.png"), "wb").write(b.screenshot())
    finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
