#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The flame graph page's views in headless chromium, on reports_phases_fixture (known truth
# in tests/reports/mkphases.c): the inverted (bottom-up) mode shows each allocating function
# as a root with its exact bytes and its callers above it; the Functions tab lists exact self
# and total bytes, sorts, and a click on a row shows the function's callers and callees;
# --inverted and --orientation open the page that way and the toggle flips the y order; a
# sampled capture's note stays after the subtitle when a time range replaces it.
# Usage: page_views_test.py MEMREPORT PHASES_FIXTURE WORKDIR (exit 77 = skipped: no browser)
import os
import shutil
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webdriver  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402


# Frames as drawn in a chart: name, bytes, depth and position.
FRAMES_JS = """
var sel = arguments[0];
return Array.from(document.querySelectorAll(sel + ' .fr')).map(function (d) {
  var r = d.getBoundingClientRect();
  return {name: d.dataset.name, bytes: +d.dataset.bytes, depth: +d.dataset.depth,
          x: r.left, y: r.top, w: r.width, cls: d.className};
});
"""

# Each drawn frame's path from its chart's root, so the tests name frames unambiguously.
PATHS_JS = """
var sel = arguments[0];
var out = {};
Array.from(document.querySelectorAll(sel + ' .fr')).forEach(function (d) {
  var names = [];
  for (var n = d._node; n; n = n.parent) names.unshift(n.name);
  out[names.join('>')] = {bytes: +d.dataset.bytes, y: d.getBoundingClientRect().top,
                          ancestor: d.className.indexOf('ancestor') >= 0};
});
return out;
"""

TABLE_JS = """
return Array.from(document.querySelectorAll('#ftable tbody tr')).map(function (tr) {
  return {name: tr.dataset.name, self: +tr.dataset.self, total: +tr.dataset.total,
          cells: Array.from(tr.cells).map(function (c) { return c.textContent; }),
          focused: tr.className === 'focused'};
});
"""


def paths(b, sel="#chart"):
    return {k: v for k, v in b.js(PATHS_JS, sel).items() if not v["ancestor"]}


def no_errors(b, what):
    check(b.js("return window.__errors") == [], "%s: no script errors" % what)


def inverted_mode(b):
    check(not b.js("return window.memreport.state.inverted"), "opens top-down by default")
    top = paths(b)
    check(top.get("all>main>build>xalloc", {}).get("bytes") == 3000,
          "top-down: main>build>xalloc holds 3000 bytes")
    b.click(b.find("#inverted"))
    inv = paths(b)
    # Roots of the bottom-up tree: every function that allocates, with its own bytes.
    roots = {k.split(">")[1]: v["bytes"] for k, v in inv.items() if k.count(">") == 1}
    check(roots == {"xalloc": 4750, "parse": 200, "build": 100, "walk": 50},
          "inverted: allocating functions are the roots with their self bytes: %r" % roots)
    want = {"all>xalloc>build": 3000, "all>xalloc>parse": 1500, "all>xalloc>parse>main": 1000,
            "all>xalloc>parse>build": 500, "all>xalloc>parse>build>main": 500,
            "all>xalloc>walk": 250, "all>xalloc>walk>walk": 250,
            "all>xalloc>walk>walk>main": 250, "all>walk>main": 50, "all": 5100}
    for k, v in want.items():
        check(inv.get(k, {}).get("bytes") == v, "inverted: %s holds %d bytes (%r)"
              % (k, v, inv.get(k)))
    check(inv["all"]["y"] < inv["all>xalloc"]["y"] < inv["all>xalloc>build"]["y"],
          "inverted icicle: the allocating function below the root, its caller below it")
    b.click(b.find("#inverted"))
    check(paths(b).keys() == top.keys(), "unchecking inverted restores the top-down graph")


def function_table(b):
    b.click(b.find("#tab-table"))
    check(b.js("return document.getElementById('graph-view').hidden") and
          not b.js("return document.getElementById('table-view').hidden"),
          "the Functions tab replaces the graph with the table")
    rows = b.js(TABLE_JS)
    got = {r["name"]: (r["self"], r["total"]) for r in rows}
    want = {"main": (0, 5100), "xalloc": (4750, 4750), "build": (100, 3600),
            "parse": (200, 1700), "walk": (50, 300)}
    check(got == want, "table: exact self and total bytes per function: %r" % got)
    check([r["name"] for r in rows] == ["main", "xalloc", "build", "parse", "walk"],
          "table sorted by total, largest first")
    parse = [r for r in rows if r["name"] == "parse"][0]
    check(parse["cells"][1:] == ["200 B", "3.92%", "1.66 KiB", "33.33%"],
          "parse's cells: self, self %%, total, total %%: %r" % parse["cells"])
    # Sorting: Self, largest first; again, smallest first; Function by name.
    b.click(b.find('#ftable th:nth-child(2)'))
    check([r["name"] for r in b.js(TABLE_JS)] == ["xalloc", "parse", "build", "walk", "main"],
          "a click on Self sorts by self bytes, largest first")
    b.click(b.find('#ftable th:nth-child(2)'))
    check([r["name"] for r in b.js(TABLE_JS)][0] == "main",
          "a second click reverses the order")
    b.click(b.find('#ftable th:nth-child(1)'))
    check([r["name"] for r in b.js(TABLE_JS)] == ["build", "main", "parse", "walk", "xalloc"],
          "a click on Function sorts by name")

    # The sandwich of parse: callers above (main direct, and through build), callees below.
    b.click(b.find('#ftable tr[data-name="parse"]'))
    check(not b.js("return document.getElementById('sandwich').hidden"),
          "a click on a row shows the sandwich")
    check([r["name"] for r in b.js(TABLE_JS) if r["focused"]] == ["parse"],
          "the clicked row is marked")
    callers, callees = paths(b, "#callers-chart"), paths(b, "#callees-chart")
    want_callers = {"parse": 1700, "parse>main": 1200, "parse>build": 500,
                    "parse>build>main": 500}
    want_callees = {"parse": 1700, "parse>xalloc": 1500}
    check({k: v["bytes"] for k, v in callers.items()} == want_callers,
          "callers of parse: %r" % {k: v["bytes"] for k, v in callers.items()})
    check({k: v["bytes"] for k, v in callees.items()} == want_callees,
          "callees of parse: %r" % {k: v["bytes"] for k, v in callees.items()})
    check(callers["parse>main"]["y"] < callers["parse"]["y"],
          "the callers grow upwards from the function")
    check(callees["parse"]["y"] < callees["parse>xalloc"]["y"],
          "the callees grow downwards from the function")
    check(callers["parse"]["y"] < callees["parse"]["y"], "callers above, callees below")
    # A recursive function: its total counts its bytes once.
    b.click(b.find('#ftable tr[data-name="walk"]'))
    callees = {k: v["bytes"] for k, v in paths(b, "#callees-chart").items()}
    check(callees == {"walk": 300, "walk>walk": 250, "walk>walk>xalloc": 250},
          "callees of the recursive walk: %r" % callees)
    callers = {k: v["bytes"] for k, v in paths(b, "#callers-chart").items()}
    check(callers == {"walk": 300, "walk>main": 300}, "callers of walk: %r" % callers)
    # A click on a frame of the sandwich focuses that function.
    b.click(b.js("return Array.from(document.querySelectorAll('#callees-chart .fr'))"
                 ".find(function (d) { return d.dataset.name === 'xalloc'; })")[webdriver.ELEMENT])
    check(b.js("return window.memreport.state.focus") == "xalloc",
          "a click on a callee focuses it")
    callers = {k: v["bytes"] for k, v in paths(b, "#callers-chart").items()}
    check(callers.get("xalloc") == 4750 and callers.get("xalloc>build") == 3000,
          "callers of xalloc: %r" % callers)
    b.click(b.find("#tab-graph"))
    check(not b.js("return document.getElementById('graph-view').hidden"),
          "the Flame graph tab shows the graph again")


def orientation(b, what, root_on_top):
    f = paths(b)
    if root_on_top:
        ok = f["all"]["y"] < f["all>main"]["y"] < f["all>main>parse"]["y"]
    else:
        ok = f["all"]["y"] > f["all>main"]["y"] > f["all>main>parse"]["y"]
    check(ok, "%s: root %s (y all %.0f, main %.0f, parse %.0f)"
          % (what, "on top" if root_on_top else "at the bottom", f["all"]["y"],
             f["all>main"]["y"], f["all>main>parse"]["y"]))


def drag(b, element, x0, x1):
    """A mouse drag across element from x0 to x1 (px from its left edge, at mid-height)."""
    r = b.js("var r = arguments[0].getBoundingClientRect();"
             "return {x: r.left, y: r.top, w: r.width, h: r.height};",
             {webdriver.ELEMENT: element})
    y = int(r["y"] + r["h"] / 2)
    b._s("POST", "/actions", {"actions": [{
        "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
        "actions": [{"type": "pointerMove", "duration": 0, "x": int(r["x"] + x0), "y": y},
                    {"type": "pointerDown", "button": 0},
                    {"type": "pointerMove", "duration": 0, "x": int(r["x"] + x1), "y": y},
                    {"type": "pointerUp", "button": 0}]}]})
    return r


def temporal(memreport, cap, work):
    """--temporal on the phases fixture (ts = seq us): the page opens at the run's peak
    (5100 bytes at 7 us); a range shows the blocks live at its highest point."""
    page = os.path.join(work, "temporal.html")
    subprocess.run([memreport, "flamegraph", cap, "--temporal", "-o", page], check=True)
    with webdriver.Browser(width=1280, height=900) as b:
        b.get("file://" + page)
        no_errors(b, "--temporal")
        check(b.js("return document.getElementById('timeline').offsetHeight") > 0,
              "--temporal: the heap over time is shown")
        m = b.js("return window.memreport.moment()")
        check(m == {"ts": 7000, "bytes": 5100}, "--temporal opens at the peak: %r" % m)
        f = paths(b)
        check(f.get("all", {}).get("bytes") == 5100 and
              f.get("all>main>build>xalloc", {}).get("bytes") == 3000,
              "--temporal at the peak: all 5100, main>build>xalloc 3000")
        # Phase 2 (10-13 us): its top is 4100 bytes at 11 us, render holding 3000.
        b.js("window.memreport.setRange(9500, 13500)")
        m = b.js("return window.memreport.moment()")
        check(m == {"ts": 11000, "bytes": 4100}, "range 9.5-13.5 us: top at 11 us: %r" % m)
        f = paths(b)
        want = {"all": 4100, "all>main>render": 3000, "all>main>parse": 200,
                "all>main>build>parse>xalloc": 500, "all>main>walk>walk>xalloc": 250}
        for k, v in want.items():
            check(f.get(k, {}).get("bytes") == v, "range 9.5-13.5 us: %s holds %d (%r)"
                  % (k, v, f.get(k)))
        check("all>main>build>xalloc" not in f, "range 9.5-13.5 us: the freed block is gone")
        check("4.00 KiB live at 11 us" in b.js(
            "return document.getElementById('subtitle').textContent"),
            "the subtitle names the range's highest point")
        # A range starting between events: the state carried into it counts (after seq 8).
        b.js("window.memreport.setRange(8500, 9800)")
        m = b.js("return window.memreport.moment()")
        check(m == {"ts": 8000, "bytes": 2100}, "range 8.5-9.8 us: the state at 8.5 us: %r" % m)
        f = paths(b)
        check(f.get("all>main>parse>xalloc", {}).get("bytes") == 1000 and
              "all>main>build>xalloc" not in f and "all>main>render" not in f,
              "range 8.5-9.8 us: parse>xalloc's 1000 bytes, no build>xalloc, no render")
        # The function table follows the range.
        b.js("window.memreport.setRange(9500, 13500)")
        got = {r["name"]: r["total"] for r in b.js(
            "return window.memreport.functions()")}
        check(got.get("render") == 3000 and got.get("main") == 4100,
              "the function table follows the range: %r" % got)
        # A real drag across the timeline: from 10.5 us to 12.5 us of the run's width.
        svg = b.find("#tl-svg")
        d = b.js("return window.memreport.data.temporal")
        span = len(d["buckets"]) * d["width"]
        r = b.js("return arguments[0].getBoundingClientRect().width", {webdriver.ELEMENT: svg})
        drag(b, svg, r * 10500 / span, r * 12500 / span)
        m = b.js("return window.memreport.moment()")
        check(m == {"ts": 11000, "bytes": 4100}, "a drag over 10.5-12.5 us selects 11 us: %r" % m)
        check(paths(b).get("all>main>render", {}).get("bytes") == 3000,
              "after the drag: render holds 3000")
        no_errors(b, "--temporal, after the ranges")
    bad = subprocess.run([memreport, "flamegraph", cap, "--temporal", "--leaks", "-o",
                          os.path.join(work, "bad2.html")], capture_output=True, text=True)
    check(bad.returncode == 1 and "--temporal" in bad.stderr,
          "--temporal --leaks: usage error (%d %r)" % (bad.returncode, bad.stderr))


def sampled_range(memreport, cap, work):
    """A sampled capture's note stays after the subtitle when a range replaces it (the
    fixture marked sampled in its meta: the note, not the figures, is what is checked)."""
    sampled = os.path.join(work, "sampled.db")
    shutil.copyfile(cap, sampled)
    db = sqlite3.connect(sampled)
    db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                   [("sample_bytes", 4096), ("sample_method", "poisson-bytes")])
    db.commit()
    db.close()
    page = os.path.join(work, "sampled.html")
    subprocess.run([memreport, "flamegraph", sampled, "--temporal", "-o", page], check=True)
    note = "sampled: Poisson by bytes, mean interval 4.00 KiB"
    subtitle = "return document.getElementById('subtitle').textContent"
    with webdriver.Browser(width=1280, height=900) as b:
        b.get("file://" + page)
        check(note in b.js(subtitle), "sampled: the note after the subtitle: %r" % b.js(subtitle))
        b.js("window.memreport.setRange(9500, 13500)")
        text = b.js(subtitle)
        check(text.startswith("Range ") and note in text,
              "sampled: a range's subtitle keeps the note: %r" % text)
        no_errors(b, "sampled --temporal, after a range")


def main():
    memreport, fixture, work = sys.argv[1:4]
    if why := webdriver.missing():
        print("SKIP:", why)
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = os.path.join(work, "phases.db")
    subprocess.run([fixture, cap], check=True)
    page = os.path.join(work, "phases.html")
    subprocess.run([memreport, "flamegraph", cap, "-o", page], check=True)
    with webdriver.Browser(width=1280, height=900) as b:
        b.get("file://" + page)
        no_errors(b, "default page")
        orientation(b, "default page", True)
        inverted_mode(b)
        function_table(b)
        b.click(b.find("#orient"))
        orientation(b, "after the toggle", False)
        b.click(b.find("#orient"))
        orientation(b, "toggled back", True)
        no_errors(b, "default page, after every view")

    # The options open the page that way, whatever the viewer chose last (localStorage).
    inv = os.path.join(work, "inverted.html")
    subprocess.run([memreport, "flamegraph", cap, "--inverted", "--orientation", "bottom",
                    "-o", inv], check=True)
    with webdriver.Browser(width=1280, height=900) as b:
        b.get("file://" + inv)
        no_errors(b, "--inverted --orientation bottom")
        check(b.js("return document.getElementById('inverted').checked"),
              "--inverted: the box is checked")
        f = paths(b)
        check(f.get("all>xalloc", {}).get("bytes") == 4750,
              "--inverted: xalloc is a root with 4750 bytes")
        check(f["all"]["y"] > f["all>xalloc"]["y"] > f["all>xalloc>build"]["y"],
              "--orientation bottom: the root at the bottom, callers above")
        b.js("window.memreport.setInverted(false)")
        orientation(b, "--orientation bottom, top-down", False)
        b.click(b.find("#orient"))  # the viewer's choice is now "top" in localStorage
        orientation(b, "--orientation bottom, toggled", True)
    top = os.path.join(work, "top.html")
    subprocess.run([memreport, "flamegraph", cap, "--orientation", "top", "-o", top], check=True)
    bottom = os.path.join(work, "bottom.html")
    subprocess.run([memreport, "flamegraph", cap, "--orientation", "bottom", "-o", bottom],
                   check=True)
    with webdriver.Browser(width=1280, height=900) as b:
        b.get("file://" + bottom)
        orientation(b, "--orientation bottom", False)
        b.get("file://" + top)
        orientation(b, "--orientation top", True)
        b.get("file://" + top + "#flame")
        orientation(b, "--orientation top opened with #flame (a link's hash wins)", False)
        no_errors(b, "--orientation pages")

    bad = subprocess.run([memreport, "flamegraph", cap, "--orientation", "left", "-o",
                          os.path.join(work, "bad.html")], capture_output=True, text=True)
    check(bad.returncode == 1 and "--orientation" in bad.stderr and
          not os.path.exists(os.path.join(work, "bad.html")),
          "--orientation left: usage error, no page (%d %r)" % (bad.returncode, bad.stderr))
    temporal(memreport, cap, work)
    sampled_range(memreport, cap, work)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
