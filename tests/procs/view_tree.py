#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport view of a process tree, in a real browser (headless chromium over WebDriver):
# `memtrace -o DIR/` on procs/joint_peak.c, a parent and a child whose heaps overlap (each
# one's own peak 2,500,000 B and 2,000,000 B, the most they held at one moment 3,000,000 B).
# The page's process list and the tree's joint peak against `memreport summary DIR`; each
# process's page (its header and its flame graph at its peak) against its line there; the
# other process and the stacked sum drawn on each page; a click on a process reopens the
# page on it.
# Usage: view_tree.py MEMTRACE MEMREPORT JOINT_PEAK WORKDIR   (exit 77 = skipped: no browser)
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

STACKED = "all processes (stacked)"


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    if why := webdriver.missing():
        print("SKIP:", why)
        return 77
    fresh_dir(work)
    tree = os.path.join(work, "tree") + "/"
    subprocess.run([launcher, "-o", tree, prog], check=True, capture_output=True, env=clean_env())
    page = os.path.join(work, "tree.html")
    subprocess.run([memreport, "view", tree, "-o", page], check=True, capture_output=True)
    subprocess.run([memreport, "view", tree], check=True, capture_output=True, cwd=work)
    check(os.path.exists(os.path.join(work, "memreport-view-tree.html")),
          "DIR/'s page is named after DIR by default")
    s = json.loads(subprocess.run([memreport, "summary", tree, "--json"], check=True,
                                  capture_output=True, text=True).stdout)
    procs = s["processes"]
    check(len(procs) == 2 and s["total"]["peak_bytes"] == 3000000,
          "summary: two processes, together at most 3,000,000 B")

    with webdriver.Browser(width=1366, height=768) as b:
        b.get("file://" + page)
        check(b.js("return window.__errors") == [], "no script errors")
        tree_peak = b.js("return memreport.data.proc_tree")
        check([tree_peak["peak_bytes"], tree_peak["peak_ns"]] ==
              [s["total"]["peak_bytes"], s["total"]["peak_time_ns"]],
              "the tree's joint peak is summary's: %r" % tree_peak)
        listed = b.js("return memreport.heaps")
        check([(h["pid"], h["ppid"], h["depth"]) for h in listed] ==
              [(p["pid"], p["ppid"], p["depth"]) for p in procs],
              "the processes in summary's tree order: %r" % listed)
        facts = b.js("return document.getElementById('facts').textContent")
        check("together2.86 MiB" in facts, "the header says the joint peak: %r" % facts)
        for h, p in zip(listed, procs):
            check(h["peak_bytes"] == p["peak_bytes"] and h["allocations"] == p["allocations"],
                  "pid %d: peak and allocations as summary's" % p["pid"])
        for i, (h, p) in enumerate(zip(listed, procs)):
            b.get("about:blank")
            b.get("file://" + page + ("#heap=" + h["name"].replace(" ", "%20") if i else ""))
            check(b.js("return memreport.heap") == h["name"], "%s: its page opens" % h["name"])
            header = b.js("return memreport.data.view.header")
            root = b.js("return +document.querySelector('#chart .fr[data-name=\"all\"]')"
                        ".dataset.bytes")
            check([header["peak_bytes"], header["peak_ns"], root] ==
                  [p["peak_bytes"], p["peak_time_ns"], p["peak_bytes"]],
                  "%s: header and graph at its peak = summary's %d" % (h["name"], p["peak_bytes"]))
            lines = b.js("return memreport.data.view.series.filter(function (s) {"
                         " return s.kind === 'other'; }).map(function (s) {"
                         " return [s.name, Math.max.apply(null, s.points.map(function (q) {"
                         " return q[1]; }))]; })")
            names = sorted(n for n, _ in lines)
            other = [o["name"] for o in listed if o["name"] != h["name"]]
            check(names == sorted([STACKED] + other), "%s: lines %r" % (h["name"], names))
            stacked = dict(lines)[STACKED]
            check(max(o["peak_bytes"] for o in listed) <= stacked <= 3000000,
                  "%s: the stacked sum reaches %d, at most the joint peak" % (h["name"], stacked))
        b.get("about:blank")
        b.get("file://" + page)
        b.js("document.querySelectorAll('#heap-list button')[1].click()")
        check(b.until("return document.readyState === 'complete' && !!window.memreport && "
                      "memreport.heap === arguments[0]", listed[1]["name"]),
              "a click reopens the page on the child")
        open(os.path.join(work, "view-tree.png"), "wb").write(b.screenshot())
    finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
