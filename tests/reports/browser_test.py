#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The flame graph page in a real browser (headless chromium over WebDriver): loads without
# script errors, shows the expected frames with widths proportional to bytes and the root on
# top (icicle, the default), tooltips, click-to-zoom and reset, the non-relevant-frames
# checkbox, the thread filter, search highlighting, and a screenshot with frames drawn in
# flame colours. Then a page of hostile names (HTML, "<!--<script>", terminal escapes) that
# must show them as text, and a deep graph that must open showing frames in either
# orientation (the toggle, remembered in the URL hash and localStorage).
# Usage: browser_test.py MEMREPORT FIXTURE_TOOL DEEP_FIXTURE_TOOL WORKDIR
#        (exit 77 = skipped: no browser)
import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import webdriver  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402


FRAMES_JS = """
return Array.from(document.querySelectorAll('#chart .fr')).map(function (d) {
  var r = d.getBoundingClientRect();
  return {name: d.dataset.name, bytes: +d.dataset.bytes, count: +d.dataset.count,
          x: r.left, y: r.top, w: r.width, cls: d.className};
});
"""


def frames(b):
    return {f["name"]: f for f in b.js(FRAMES_JS)}


def main():
    memreport, fixture, deep_fixture, work = sys.argv[1:5]
    if why := webdriver.missing():
        print("SKIP:", why)
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = os.path.join(work, "std.db")
    subprocess.run([fixture, cap], check=True)
    # Default output name, in the current directory.
    subprocess.run([memreport, "flamegraph", cap, "--split-threads"], check=True, cwd=work)
    page = os.path.join(work, "memreport-flamegraph-std.html")
    check(os.path.exists(page), "default output name memreport-flamegraph-std.html")
    html = open(page, encoding="utf-8").read()
    check("http://" not in html.replace("http://www.w3.org", "") and "https://" not in html,
          "the page references no network resource")

    with webdriver.Browser(width=1280, height=800) as b:
        b.get("file://" + page)
        check(b.js("return window.__errors") == [], "no script errors")
        f = frames(b)
        # Non-relevant frames are hidden by default; their callees move to their caller.
        for name in ("all", "main", "worker", "make_node", "load_config", "parse_file",
                     "cache_put", "prog+0x1234"):
            check(name in f, "frame %s is drawn" % name)
        check("operator new" not in f and "__libc_start_call_main" not in f,
              "non-relevant frames hidden by default")
        want = {"all": 10364, "main": 5364, "worker": 5000, "make_node": 4000,
                "load_config": 1000, "parse_file": 1000, "cache_put": 300, "prog+0x1234": 64}
        for name, v in want.items():
            check(f.get(name, {}).get("bytes") == v, "%s holds %d bytes" % (name, v))
        total_w = f["all"]["w"]
        for name in ("main", "worker", "make_node", "cache_put"):
            expect = total_w * want[name] / want["all"]
            check(abs(f[name]["w"] - expect) <= 1.5,
                  "%s width %.1f ~ %.1f px (proportional to bytes)" % (name, f[name]["w"], expect))
        check(f["all"]["y"] < f["main"]["y"] < f["make_node"]["y"] < f["parse_file"]["y"] + 19,
              "icicle by default: root on top, callees below")
        check(f["parse_file"]["y"] > f["load_config"]["y"], "parse_file below load_config")

        # Tooltip.
        b.hover(b.find('#chart .fr[data-name="worker"]'))
        tip = b.js("return document.getElementById('tip').innerText")
        check("worker" in tip and "5000 bytes" in tip and "48.24%" in tip and
              "1 allocation" in tip, "tooltip shows bytes, percentage and count: %r" % tip)

        # Click to zoom into make_node; its callers stay below at full width.
        b.click(b.find('#chart .fr[data-name="make_node"]'))
        z = frames(b)
        check(abs(z["make_node"]["w"] - total_w) <= 1.5, "zoomed frame spans the width")
        check("parse_file" not in z and "worker" not in z, "frames outside the zoom are gone")
        check("ancestor" in z.get("main", {}).get("cls", ""), "callers drawn as ancestors")
        b.click(b.find("#reset"))
        check(abs(frames(b)["main"]["w"] - f["main"]["w"]) <= 0.5, "reset zoom restores the view")

        # Showing non-relevant frames.
        b.click(b.find("#hide"))
        f2 = frames(b)
        check("operator new" in f2 and "__libc_start_call_main" in f2,
              "unchecking the box shows non-relevant frames")
        check(f2.get("operator new", {}).get("bytes") == 4000 and
              f2.get("make_node", {}).get("bytes") == 4000, "operator new holds make_node's bytes")
        check(abs(f2["__libc_start_call_main"]["w"] - total_w) <= 1.5,
              "__libc_start_call_main spans all")
        b.click(b.find("#hide"))
        check("operator new" not in frames(b), "checking the box hides them again")

        # Thread filter: thread 200 (worker-1) only, then the Reset entry.
        opts = b.js("return Array.from(document.querySelectorAll('#thread option'))"
                    ".map(function (o) { return o.textContent; })")
        check(b.js("return document.getElementById('thread').offsetWidth > 0"),
              "thread filter visible with --split-threads")
        check(len(opts) == 3 and "Reset" in opts[0] and "worker-1" in opts[2],
              "thread dropdown: Reset entry and one entry per thread: %r" % opts)
        b.click(b.find("#thread option:nth-child(3)"))
        t = frames(b)
        check("main" not in t and t.get("worker", {}).get("bytes") == 5000 and
              t.get("all", {}).get("bytes") == 5000, "thread filter shows worker-1's bytes only")
        b.click(b.find("#thread option:nth-child(1)"))
        check(frames(b).get("all", {}).get("bytes") == 10364, "Reset entry shows all threads")

        # Search highlighting.
        b.type(b.find("#search"), "make")
        matched = [x["name"] for x in b.js(FRAMES_JS) if " match" in x["cls"]]
        check(matched == ["make_node"], "search highlights make_node only: %r" % matched)
        check("3.91 KiB" in b.js("return document.getElementById('match').textContent"),
              "search reports the matched bytes")

        png = b.screenshot()
        open(os.path.join(work, "screenshot.png"), "wb").write(png)
        w, h, rows = webdriver.decode_png(png)
        check(w >= 1000 and h >= 600, "screenshot size %dx%d" % (w, h))
        colours, flame, magenta = set(), 0, 0
        for row in rows:
            for i in range(0, len(row), 16):  # every 4th pixel
                r, g, bl = row[i], row[i + 1], row[i + 2]
                colours.add((r >> 3, g >> 3, bl >> 3))
                if r > 200 and g > 80 and bl < 120 and r > g > bl:
                    flame += 1
                if r > 190 and bl > 190 and g < 120:
                    magenta += 1
        check(len(colours) > 20, "screenshot is not blank (%d colours)" % len(colours))
        check(flame > 2000, "flame-coloured frames drawn (%d sampled pixels)" % flame)
        check(magenta > 100, "search match drawn in magenta (%d sampled pixels)" % magenta)
        check(b.js("return window.__errors") == [], "still no script errors")

    # Without --split-threads there is no thread filter.
    plain = os.path.join(work, "plain.html")
    subprocess.run([memreport, "flamegraph", cap, "-o", plain], check=True)
    with webdriver.Browser(width=1024, height=600) as b:
        b.get("file://" + plain)
        check(b.js("return document.getElementById('thread').offsetWidth") == 0,
              "no thread filter without --split-threads")
        check(b.js("return window.__errors") == [], "no script errors (plain page)")
    hostile(memreport, fixture, work)
    deep(memreport, deep_fixture, work)
    print("%d failures" % len(failures))
    return 1 if failures else 0


# Frame names of the hostile fixture (reports_fixture --hostile, tests/reports/fixture.c).
HOSTILE_FRAMES = ["caf\\xe9_alloc", "esc\x1b]0;pwned\x07\x1b[2J<!--<script>",
                  "</script><script>window.__pwned=1</script>",
                  "<img src=x onerror=window.__pwned=2>", "<svg onload=window.__pwned=3>"]


def hostile(memreport, fixture, work):
    """Names that are HTML: the page shows them as text and runs none of them. "<!--<script>"
    in argv (the page title) once left the page blank: with only "/" escaped in the data,
    the HTML parser took the rest of the page for an escaped script."""
    cap = os.path.join(work, "hostile.db")
    subprocess.run([fixture, "--hostile", cap], check=True)
    page = os.path.join(work, "hostile.html")
    subprocess.run([memreport, "flamegraph", cap, "--split-threads", "-o", page], check=True)
    with webdriver.Browser(width=1280, height=800) as b:
        b.get("file://" + page)
        check(b.js("return window.__errors") == [], "hostile names: no script errors")
        f = frames(b)
        for name in HOSTILE_FRAMES:
            check(name in f, "hostile frame drawn with its name as text: %r" % name)
        check(f.get("all", {}).get("bytes") == 2700, "hostile page: all frames counted")
        title = b.js("return document.getElementById('title').textContent")
        check(title == "./prog caf\\xe9 \x1b]0;pwned\x07 <!--<script>",
              "argv shown as text in the title: %r" % title)
        # The tooltip and the zoom line are built as HTML from the names.
        for name in HOSTILE_FRAMES:
            el = b.js("var want = arguments[0];"
                      "return Array.from(document.querySelectorAll('#chart .fr'))"
                      ".find(function (d) { return d.dataset.name === want; })", name)
            if not el:
                continue
            el = el[webdriver.ELEMENT]
            b.hover(el)
            tip = b.js("return document.getElementById('tip').textContent")
            check(name in tip, "tooltip shows %r as text" % name)
            b.click(el)
            details = b.js("return document.getElementById('details').textContent")
            check(name in details, "zoom line shows %r as text" % name)
            b.click(b.find("#reset"))
        opts = b.js("return Array.from(document.querySelectorAll('#thread option'))"
                    ".map(function (o) { return o.textContent; })")
        check(any("<img src=x onerror=window.__pwned=4>" in o for o in opts),
              "thread name shown as text: %r" % opts)
        check(b.js("return document.querySelectorAll("
                   "'img, svg:not(#tl-svg):not(#vtl-svg), #chart script').length") == 0,
              "no element made from a name")
        check(b.js("return window.__pwned === undefined"), "no injected script ran")
        check(b.js("return window.__errors") == [], "hostile names: still no script errors")


# Frames inside the window below the sticky header, with their rectangles.
VISIBLE_JS = """
var top = document.querySelector('header').getBoundingClientRect().bottom;
var bottom = window.innerHeight;
return Array.from(document.querySelectorAll('#chart .fr')).map(function (d) {
  var r = d.getBoundingClientRect();
  return {name: d.dataset.name, depth: +d.dataset.depth, y: r.top, h: r.height, w: r.width,
          visible: r.bottom > top && r.top < bottom};
});
"""


def deep_view(b, what):
    """Checks that the window shows the graph, not empty space: the root frame is in view
    and the frames in view add up to many full rows; and a screenshot is mostly frames."""
    fr = b.js(VISIBLE_JS)
    vis = [x for x in fr if x["visible"]]
    width = b.js("return document.getElementById('chart').clientWidth")
    rows = sum(x["w"] for x in vis) / width
    root = [x for x in fr if x["name"] == "all"]
    check(root and root[0]["visible"], "%s: the root frame is in the window" % what)
    check(rows >= 10, "%s: the frames in the window fill %.1f rows (>= 10)" % (what, rows))
    w, h, px = webdriver.decode_png(b.screenshot())
    flame = total = 0
    for row in px[::4]:
        for i in range(0, len(row), 16):
            r, g, bl = row[i], row[i + 1], row[i + 2]
            total += 1
            flame += r - bl > 60  # frames are warm colours; page and text are grey
    check(flame > total * 0.3, "%s: the screenshot is %.0f%% frames (> 30%%)"
          % (what, 100.0 * flame / max(total, 1)))
    return {x["name"]: x for x in fr}


def deep(memreport, deep_fixture, work):
    """A graph 152 frames deep (2,736 px: python3's is 2,600) in an 800 px window. It opens
    as an icicle with the root on top; the toggle flips it to a flame graph scrolled to its
    root at the bottom; the choice is kept in the hash and in localStorage."""
    cap = os.path.join(work, "deep.db")
    subprocess.run([deep_fixture, cap], check=True)
    page = os.path.join(work, "deep.html")
    subprocess.run([memreport, "flamegraph", cap, "-o", page], check=True)
    url = "file://" + page
    with webdriver.Browser(width=1280, height=800) as b:
        b.get(url)
        check(b.js("return window.__errors") == [], "deep: no script errors")
        check(b.js("return document.getElementById('chart').offsetHeight") >= 152 * 18,
              "deep: the graph is taller than the window")
        f = deep_view(b, "deep, at load")
        check(f["all"]["y"] < f["main"]["y"] < f["step_1"]["y"] < f["recurse_150"]["y"],
              "deep: icicle at load, root on top")
        check("root is on top" in b.js("return document.getElementById('footer').textContent"),
              "deep: the footer says where the root is")

        b.click(b.find("#orient"))
        f = deep_view(b, "deep, flame")
        check(f["all"]["y"] > f["main"]["y"] > f["step_1"]["y"] > f["recurse_150"]["y"],
              "deep: the toggle puts the root at the bottom")
        check(b.js("return window.scrollY") > 1000, "deep: the flame view is scrolled down")
        check(b.js("return location.hash") == "#flame", "deep: the hash says #flame")
        check("root is at the bottom" in
              b.js("return document.getElementById('footer').textContent"),
              "deep: the footer follows the orientation")

        # Remembered: a new load without a hash opens as a flame graph, at its root. Chromium
        # hands a page's localStorage writes to its storage service asynchronously, and a new
        # load may run in another renderer: reopen until it sees the write (bounded).
        deadline = time.time() + 30
        while True:
            b.get("about:blank")
            b.get(url)
            if b.js("return window.memreport.state.icicle") is False or time.time() > deadline:
                break
            time.sleep(0.5)
        check(b.js("return window.memreport.state.icicle") is False,
              "deep: reopened as a flame graph (localStorage)")
        deep_view(b, "deep, reopened as flame")
        # The hash wins over localStorage, at load and when it changes.
        b.get("about:blank")
        b.get(url + "#icicle")
        f = deep_view(b, "deep, opened with #icicle")
        check(f["all"]["y"] < f["main"]["y"], "deep: #icicle opens with the root on top")
        b.js("location.hash = '#flame'")
        # hashchange is an event: wait for it (bounded), then look.
        deadline = time.time() + 30
        while b.js("return window.memreport.state.icicle") and time.time() < deadline:
            time.sleep(0.05)
        f = frames(b)
        check(f["all"]["y"] > f["main"]["y"], "deep: changing the hash to #flame flips it")
        b.click(b.find("#orient"))
        f = deep_view(b, "deep, toggled back")
        check(f["all"]["y"] < f["main"]["y"] and b.js("return window.scrollY") == 0,
              "deep: toggled back to icicle, at the top")
        check(b.js("return window.__errors") == [], "deep: still no script errors")


if __name__ == "__main__":
    sys.exit(main())
