#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport view in a real browser (headless chromium over WebDriver), on the standard
# fixture capture: the header against `memreport summary`; a click on the timeline and a
# drag across it, the flame graph's root, the functions table and the top stacks against
# `memreport top --at` and `--range` at the times the page says it shows; the selection
# kept in the URL and reopened from it; the keys (an arrow moves a cursor, Enter selects
# it); the layout (legend, plot, marks'
# labels and the graph never overlapping, both axes labelled); hostile names as text.
# Usage: view_test.py MEMREPORT FIXTURE_TOOL WORKDIR   (exit 77 = skipped: no browser)
import json
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

MEMREPORT = None


def report(*args):
    out = subprocess.run([MEMREPORT] + list(args), check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def top(cap, *args):
    """Per function (self, total) and the total, from memreport top."""
    d = report("top", cap, "--json", "--top", "0", *args)
    return {f["function"]: (f["self"], f["total"]) for f in d["functions"]}, d["total"]


PAGE_TABLE = """memreport.showTab('table');
return memreport.functions().map(function (f) { return [f.name, f.self, f.total]; });"""


def page_numbers(b):
    """The functions table's rows, the graph's root and the top stacks' sum, as shown."""
    rows = b.js(PAGE_TABLE)
    table = {r[0]: (r[1], r[2]) for r in rows}
    dom = b.js("return Array.from(document.querySelectorAll('#ftable tbody tr'))"
               ".map(function (t) { return [t.dataset.name, +t.dataset.self, +t.dataset.total]; })")
    b.js("memreport.showTab('stacks')")
    stacks = b.js("return Array.from(document.querySelectorAll('#stacks-table tbody tr'))"
                  ".reduce(function (s, t) { return s + +t.dataset.bytes; }, 0)")
    b.js("memreport.showTab('graph')")
    root = b.js("var r = document.querySelector('#chart .fr[data-name=\"all\"]');"
                "return r ? +r.dataset.bytes : null")
    return table, {d[0]: (d[1], d[2]) for d in dom}, root, stacks


def compare(b, cap, what, args):
    want, total = top(cap, *args)
    table, dom, root, stacks = page_numbers(b)
    check(table == want, "%s: functions table = memreport top %s: %r vs %r" %
          (what, " ".join(args), table, want))
    check(dom == want, "%s: the table's rows as drawn = memreport top" % what)
    check(root == total or (not root and total == 0),  # an empty graph draws no root
          "%s: flame graph root %r = top's total %d" % (what, root, total))
    check(stacks == total, "%s: the top stacks add up to the total (%r)" % (what, stacks))
    return total


def plot_box(b):
    return b.js("var r = document.getElementById('vtl-svg').getBoundingClientRect();"
                "return [r.left, r.top, r.width, r.height];")


def x_of(b, t):
    """The viewport x of time t on the plot (its axis spans 0..xmax past the left margin)."""
    return b.js("var v = memreport.view, s = document.getElementById('vtl-svg');"
                "var r = s.getBoundingClientRect(), g = v.geometry();"
                "return r.left + g.x(arguments[0]) * r.width / g.W;", t)


def overlaps(a, b):
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def texts_inside(b, what="layout"):
    """As drawn (rotated titles too), against the timeline's own box: nothing cut at its edges."""
    out = b.js("""var s = document.getElementById('vtl-svg').getBoundingClientRect();
      return Array.from(document.querySelectorAll('#vtl-svg text')).filter(function (t) {
        var r = t.getBoundingClientRect();
        return r.left < s.left - 0.5 || r.right > s.right + 0.5; }).map(function (t) {
        return t.textContent; });""")
    check(not out, "%s: every text inside the timeline: %r" % (what, out))


def ends_on_a_tick(cap, work):
    """A run of 2.5 s has a tick at its end, labelled "2500 ms" at the plot's right edge."""
    round_cap = os.path.join(work, "round.db")
    shutil.copy(cap, round_cap)
    db = sqlite3.connect(round_cap)
    db.execute("UPDATE meta SET value = 2500000000 WHERE key = 'duration_ns'")
    db.commit()
    db.close()
    page = os.path.join(work, "round.html")
    subprocess.run([MEMREPORT, "view", round_cap, "-o", page], check=True)
    with webdriver.Browser(width=1366, height=768) as b:
        b.get("file://" + page)
        words = b.js("return Array.from(document.querySelectorAll('#vtl-svg text'))"
                     ".map(function (t) { return t.textContent; })")
        check("2500 ms" in words, "a run of 2.5 s has a tick at its end: %r" % words)
        texts_inside(b, "a run that ends on a tick")


def layout(b):
    boxes = b.js("""return ['vtl-legend', 'vtl-svg', 'vtl-bar', 'viewbar', 'chart', 'facts']
      .map(function (id) { var r = document.getElementById(id).getBoundingClientRect();
                           return [id, r.left, r.top, r.width, r.height]; });""")
    for i in range(len(boxes)):
        for k in range(i + 1, len(boxes)):
            check(not overlaps(boxes[i][1:], boxes[k][1:]),
                  "layout: %s and %s do not overlap" % (boxes[i][0], boxes[k][0]))
    texts = b.js("""return Array.from(document.querySelectorAll('#vtl-svg text')).map(
      function (t) { var r = t.getBBox(); return [t.textContent, r.x, r.y, r.width, r.height,
                     t.closest('g.mark') ? 1 : 0]; });""")
    texts_inside(b)
    labels = [t for t in texts if t[5]]
    check(len(labels) >= 4, "layout: marks and ranges labelled: %r" % [t[0] for t in labels])
    for i in range(len(labels)):
        for k in range(i + 1, len(labels)):
            check(not overlaps(labels[i][1:5], labels[k][1:5]),
                  "layout: mark labels %r and %r apart" % (labels[i][0], labels[k][0]))
    top = b.js("return memreport.view.geometry().top")
    check(all(t[2] + t[4] <= top + 0.5 for t in labels), "layout: mark labels above the data")
    words = [t[0] for t in texts]
    check(any(w.startswith("time since the start") for w in words), "layout: time axis titled")
    check(any(w.startswith("memory (") for w in words), "layout: byte axis titled")
    check(sum(1 for w in words if w.endswith(" ns") or w.endswith(" us")) >= 3,
          "layout: time ticks with units: %r" % words)
    check(sum(1 for w in words if w.endswith(" KiB") or w.endswith(" B")) >= 2,
          "layout: byte ticks in IEC units: %r" % words)


def main():
    global MEMREPORT
    MEMREPORT, fixture, work = sys.argv[1:4]
    if why := webdriver.missing():
        print("SKIP:", why)
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = os.path.join(work, "std.db")
    subprocess.run([fixture, cap], check=True)
    # Marks and a range, two close enough that their labels cannot share a row.
    db = sqlite3.connect(cap)
    db.executemany("INSERT INTO mark(heap, kind, name, ts_begin, ts_end, tid) VALUES "
                   "(1, ?, ?, ?, ?, 100)",
                   [("range", "loading the configuration files", 2000, 6000),
                    ("mark", "cache warm", 6200, 6200), ("mark", "tree built", 6400, 6400),
                    ("mark", "done", 13000, 13000)])
    db.commit()
    db.close()
    subprocess.run([MEMREPORT, "view", cap], check=True, cwd=work)
    page = os.path.join(work, "memreport-view-std.html")
    check(os.path.exists(page), "default output name memreport-view-std.html")
    html = open(page, encoding="utf-8").read()
    check("http://" not in html.replace("http://www.w3.org", "") and "https://" not in html,
          "the page references no network resource")
    summary = report("summary", cap, "--json")

    with webdriver.Browser(width=1366, height=768) as b:
        b.get("file://" + page)
        check(b.js("return window.__errors") == [], "no script errors")
        h = b.js("return memreport.data.view.header")
        check(h["peak_bytes"] == summary["peak_bytes"] and h["peak_ns"] == summary["peak_time_ns"],
              "header: peak and its time as summary's")
        lc = b.js("return memreport.data.view.leaks.classes")
        check(sum(c["bytes"] for c in lc[:5]) == summary["leaked_bytes"] and
              sum(c["blocks"] for c in lc[:5]) == summary["leaked_allocations"] and
              [lc[5]["bytes"], lc[5]["blocks"]] == [summary["runtime_held_bytes"],
                                                    summary["runtime_held_allocations"]],
              "header: leaked and held by the C runtime as summary's")
        check(h["allocations"] == summary["allocations"] and
              h["alloc_bytes"] == summary["bytes_allocated"], "header: allocations as summary's")
        check(h["threads"] == summary["threads"], "header: threads as summary's")
        facts = b.js("return document.getElementById('facts').textContent")
        check("10.12 KiB" in facts and "7 us" in facts, "header shows the peak: %r" % facts)

        # The page opens on the whole run at its highest point: the run's peak.
        compare(b, cap, "whole run", ["--metric", "live"])
        layout(b)

        # A click on the plot: the moment at the nearest edge, as top --at reads that time.
        box = plot_box(b)
        b.mouse([("move", x_of(b, 6500), box[1] + box[3] / 2), ("down",), ("up",)])
        sel = b.js("return memreport.view.selection()")
        check(sel["kind"] == "moment", "a click selects a moment: %r" % sel)
        t = b.js("return memreport.view.edgeTime(arguments[0])", sel["k"])
        check(abs(t - 6500) <= b.js("return memreport.view.width"), "the moment is near the click")
        total = compare(b, cap, "moment", ["--at", "%dns" % t])
        hash_moment = b.js("return location.hash")
        check(hash_moment == "#m=%d" % sel["k"], "the moment is kept in the URL: %r" % hash_moment)
        now = b.js("return document.getElementById('vtl-now').textContent")
        check("exact" in b.js("return document.getElementById('vtl-res').textContent"),
              "the page states the selection's resolution")
        check(("the graph holds %.2f KiB" % (total / 1024)) in now,
              "the selection line says what the graph holds: %r" % now)

        # A drag: a range of whole buckets, live at its highest point, then allocated in it.
        b.mouse([("move", x_of(b, 2500), box[1] + 60), ("down",),
                 ("move", x_of(b, 5000), box[1] + 80), ("move", x_of(b, 9200), box[1] + 80),
                 ("up",)])
        sel = b.js("return memreport.view.selection()")
        check(sel["kind"] == "range" and sel["metric"] == "live", "a drag selects a range: %r" % sel)
        a = b.js("return memreport.view.rangeFrom(arguments[0])", sel["a"])
        z = b.js("return memreport.view.edgeTime(arguments[0])", sel["b"])
        check(a <= 2500 and z >= 9200 - 1, "the range covers the drag: %d..%d" % (a, z))
        rng = "%dns..%dns" % (a, z)
        compare(b, cap, "range, live at its highest point", ["--range", rng, "--metric", "live"])
        b.js("var s = document.getElementById('vtl-metric'); s.value = 'alloc';"
             "s.dispatchEvent(new Event('change'));")
        compare(b, cap, "range, allocated", ["--range", rng, "--metric", "allocated"])
        link = b.js("return location.href")
        check("r=%d-%d" % (sel["a"], sel["b"]) in link and "w=alloc" in link,
              "the range is kept in the URL: %r" % link)
        layout(b)
        png = b.screenshot()
        open(os.path.join(work, "view.png"), "wb").write(png)

        # The link reopens the same selection in a new page.
        b.get("about:blank")
        b.get(link)
        check(b.js("return memreport.view.selection()") == dict(sel, metric="alloc"),
              "the link reopens the range")
        compare(b, cap, "reopened link", ["--range", rng, "--metric", "allocated"])

        # Keys: End is the end of the run (the leaks), arrows step one edge.
        b.js("document.getElementById('vtl-svg').focus()")
        b.keys("\ue010")  # End
        nb = b.js("return memreport.view.buckets")
        check(b.js("return memreport.view.selection()") == {"kind": "moment", "k": nb},
              "End selects the end of the run")
        leaks = report("summary", cap, "--json")["leaked_bytes"]
        root = b.js("return +document.querySelector('#chart .fr[data-name=\"all\"]').dataset.bytes")
        check(root == leaks, "at the end the graph holds the leaks: %r" % root)
        b.keys("\ue012")  # ArrowLeft: the cursor one edge back, nothing selected yet
        check(b.js("return memreport.view.selection()") == {"kind": "moment", "k": nb} and
              b.js("return +document.querySelector('#chart .fr[data-name=\"all\"]')"
                   ".dataset.bytes") == leaks,
              "ArrowLeft moves the cursor, the selection and the graph stay")
        b.keys("\ue007")  # Enter
        check(b.js("return memreport.view.selection()") == {"kind": "moment", "k": nb - 1},
              "Enter selects the cursor's moment, one edge back")
        b.js("memreport.showTab('leaks')")
        leaked = b.js("return Array.from(document.querySelectorAll('#leaks-table tbody tr'))"
                      ".reduce(function (s, t) { return s + +t.dataset.bytes; }, 0)")
        check(leaked == leaks, "the leaks tab adds up to summary's leaked bytes: %r" % leaked)
        check(b.js("return window.__errors") == [], "no script errors after all that")

    threads(cap, page)
    ends_on_a_tick(cap, work)
    hostile(fixture, work)
    refusals(cap, work)
    print("%d failures" % len(failures))
    return 1 if failures else 0


def threads(cap, page):
    """Each thread's page: the whole run, a moment and a range's allocations against
    memreport top --thread; the thread kept in the URL with the selection."""
    with webdriver.Browser(width=1366, height=768) as b:
        b.get("file://" + page)
        listed = b.js("return memreport.threads")
        check([t["tid"] for t in listed] == [100, 200] and listed[1]["name"] == "worker-1",
              "the page offers both threads: %r" % listed)
        for t in listed:
            tid = str(t["tid"])
            count = report("top", cap, "--json", "--metric", "count", "--thread", tid)["total"]
            check(t["allocations"] == count, "thread %s: %d allocations = top --thread's %d" %
                  (tid, t["allocations"], count))
            b.get("about:blank")
            b.get("file://" + page + "#r=100-400&thread=" + tid)
            check(b.js("return window.__errors") == [] and b.js("return memreport.thread") ==
                  t["tid"], "thread %s: its page opens from the URL" % tid)
            sel = b.js("return memreport.view.selection()")
            rng = "%dns..%dns" % (b.js("return memreport.view.rangeFrom(100)"),
                                  b.js("return memreport.view.edgeTime(400)"))
            check(sel["kind"] == "range" and (sel["a"], sel["b"]) == (100, 400),
                  "thread %s: the range kept: %r" % (tid, sel))
            compare(b, cap, "thread %s, range, live" % tid,
                    ["--range", rng, "--metric", "live", "--thread", tid])
            b.js("memreport.view.select({kind: 'range', a: 100, b: 400, metric: 'alloc'})")
            compare(b, cap, "thread %s, range, allocated" % tid,
                    ["--range", rng, "--metric", "allocated", "--thread", tid])
            b.js("memreport.view.select({kind: 'moment', k: 300})")
            t300 = b.js("return memreport.view.edgeTime(300)")
            compare(b, cap, "thread %s, moment" % tid, ["--at", "%dns" % t300, "--thread", tid])
            check("thread=" + tid in b.js("return location.hash"), "thread %s: in the URL" % tid)
            now = b.js("return document.getElementById('vtl-now').textContent")
            check(("thread " + tid) in now, "thread %s: the selection line says so: %r" % (tid, now))


HOSTILE_FRAMES = ["caf\\xe9_alloc", "esc\x1b]0;pwned\x07\x1b[2J<!--<script>",
                  "</script><script>window.__pwned=1</script>",
                  "<img src=x onerror=window.__pwned=2>", "<svg onload=window.__pwned=3>"]


def hostile(fixture, work):
    """The hostile fixture's names (HTML, a comment opener, terminal escapes) in the graph,
    the tables and the tooltip, as text: none of them runs."""
    cap = os.path.join(work, "hostile.db")
    subprocess.run([fixture, "--hostile", cap], check=True)
    page = os.path.join(work, "hostile.html")
    subprocess.run([MEMREPORT, "view", cap, "-o", page], check=True)
    with webdriver.Browser(width=1366, height=768) as b:
        b.get("file://" + page)
        check(b.js("return window.__errors") == [], "hostile: no script errors")
        drawn = b.js("return Array.from(document.querySelectorAll('#chart .fr'))"
                     ".map(function (d) { return d.dataset.name; })")
        rows = b.js("memreport.showTab('table'); return Array.from(document.querySelectorAll("
                    "'#ftable td.fname')).map(function (t) { return t.textContent; })")
        stacks = b.js("memreport.showTab('stacks'); return Array.from(document.querySelectorAll("
                      "'#stacks-table li')).map(function (t) { return t.textContent; })")
        for name in HOSTILE_FRAMES:
            check(name in drawn, "hostile frame drawn as text: %r" % name)
            check(name in rows, "hostile function in the table as text: %r" % name)
            check(name in stacks, "hostile frame in the top stacks as text: %r" % name)
        check(b.js("return window.__pwned === undefined"), "no hostile name ran")
        check(b.js("return document.querySelectorAll('img, #chart svg, #stacks-table svg')"
                   ".length") == 0, "no element made from a name")


def refusals(cap, work):
    """Bad input: one line naming the file, a non-zero exit, no page, nothing replaced."""
    junk = os.path.join(work, "junk.db")
    open(junk, "w").write("not a capture\n")
    out = os.path.join(work, "junk.html")
    r = subprocess.run([MEMREPORT, "view", junk, "-o", out], capture_output=True, text=True)
    check(r.returncode == 2 and r.stderr.startswith("memreport: %s: " % junk) and
          r.stderr.count("\n") == 1 and not os.path.exists(out),
          "not a capture: refused, no page (%d %r)" % (r.returncode, r.stderr))
    kept = os.path.join(work, "kept.html")
    open(kept, "w").write("mine\n")
    r = subprocess.run([MEMREPORT, "view", cap, "-o", kept], capture_output=True, text=True)
    check(r.returncode != 0 and open(kept).read() == "mine\n",
          "an existing page is kept without -f (%r)" % r.stderr)
    log = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "npu",
                       "sample.log")
    npu = os.path.join(work, "npu.db")
    subprocess.run([MEMREPORT, "import", log, "-o", npu], check=True, capture_output=True)
    out = os.path.join(work, "npu.html")
    r = subprocess.run([MEMREPORT, "view", npu, "-o", out], capture_output=True, text=True)
    check(r.returncode == 2 and "allocation steps" in r.stderr and not os.path.exists(out),
          "an NPU capture (steps, not time): refused (%d %r)" % (r.returncode, r.stderr))


if __name__ == "__main__":
    sys.exit(main())
