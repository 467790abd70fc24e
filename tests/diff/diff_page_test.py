#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport diff --html, the differential flame graph, in headless chromium against known
# truth: diff_prog.c traced as `diff_prog 1` (base) and `diff_prog 2` (new). In the new
# run's shape grow_site (+1 MiB), leak_site (+4 KiB) and new_site (+5000, new) are red
# with their exact deltas in their data and tooltips, same_site grey; old_site (-3000,
# gone) is not drawn there, and is blue when the page's shape is switched to the base run.
# Each frame's delta equals `memreport diff --json`'s stack delta. The inverted mode and
# the Functions tab carry base, new and change; a name that is HTML stays text; --html with
# --json, an existing -o without -f, and --fail-if behave as for the text report.
# Usage: diff_page_test.py MEMTRACE MEMREPORT DIFF_PROG WORKDIR (exit 77: no browser)
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reports"))
import webdriver  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402

KIB, MIB = 1024, 1024 * 1024
# Bytes live at each run's peak (diff_prog.c): base, new.
TRUTH = {"grow_site": (MIB, 2 * MIB), "leak_site": (4 * KIB, 8 * KIB),
         "same_site": (1000, 1000), "old_site": (3000, 0), "new_site": (0, 5000)}
HOSTILE = "</script><img src=x onerror=window.__pwned=1><!--<script>&amp;\"'"


# Each drawn frame by its path from the root: its data, class and background colour.
FRAMES_JS = """
var out = {};
Array.from(document.querySelectorAll('#chart .fr')).forEach(function (d) {
  if (d.className.indexOf('ancestor') >= 0) return;
  var names = [];
  for (var n = d._node; n; n = n.parent) names.unshift(n.name);
  var rgb = getComputedStyle(d).backgroundColor.match(/\\d+/g).map(Number);
  out[names.join('>')] = {name: d.dataset.name, bytes: +d.dataset.bytes,
    base: +d.dataset.base, new: +d.dataset.new, delta: +d.dataset.delta,
    cls: d.className, rgb: rgb, w: d.getBoundingClientRect().width};
});
return out;
"""

TABLE_JS = """
var out = {};
Array.from(document.querySelectorAll('#ftable tbody tr')).forEach(function (tr) {
  out[tr.dataset.name] = {base: +tr.dataset.base, new: +tr.dataset.new,
    delta: +tr.dataset.delta, cells: Array.from(tr.cells).map(function (c) {
      return c.textContent; })};
});
return out;
"""


def frames(b):
    return b.js(FRAMES_JS)


def tooltip(b, path):
    """The tooltip's text for the frame at path (names joined by >). The pointer moves
    over the frame itself: frames a few bytes wide are drawn 10 px wide and overlap, so a
    real pointer could land on a neighbour."""
    return b.js("""
var want = arguments[0];
var d = Array.from(document.querySelectorAll('#chart .fr')).find(function (d) {
  var names = [];
  for (var n = d._node; n; n = n.parent) names.unshift(n.name);
  return names.join('>') === want && d.className.indexOf('ancestor') < 0;
});
if (!d) return '';
var r = d.getBoundingClientRect();
d.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: r.left + 1,
                                             clientY: r.top + 1}));
return document.getElementById('tip').textContent;""", path)


def red(rgb):
    return rgb[0] > rgb[2] + 60 and rgb[0] > rgb[1] + 40


def blue(rgb):
    return rgb[2] > rgb[0] + 60


def grey(rgb):
    return max(rgb[:3]) - min(rgb[:3]) < 25


def no_errors(b, what):
    check(b.js("return window.__errors") == [], "%s: no script errors" % what)


def new_shape(b, stacks):
    f = frames(b)
    for name, (base, new) in TRUTH.items():
        path = "all>main>" + name
        if new == 0:
            check(path not in f, "new shape: %s (gone from the new run) is not drawn" % name)
            continue
        fr = f.get(path)
        check(fr is not None, "new shape: %s drawn" % path)
        if not fr:
            continue
        want = "grew" if new > base else "same"
        check((fr["base"], fr["new"], fr["delta"], fr["bytes"]) == (base, new, new - base, new),
              "%s: base %d, new %d, delta %d, width = new bytes: %r" % (name, base, new,
                                                                       new - base, fr))
        check(want in fr["cls"].split(), "%s: class %s (%s)" % (name, want, fr["cls"]))
        check((red if want == "grew" else grey)(fr["rgb"]),
              "%s: %s colour %r" % (name, "red" if want == "grew" else "grey", fr["rgb"]))
        check(fr["delta"] == stacks[("main", name)], "%s: the delta is diff --json's (%d)"
              % (name, stacks[("main", name)]))
    # Widths follow the new run: grow_site is 2 MiB of the new run's total.
    total = f["all"]["bytes"]
    g = f.get("all>main>grow_site", {"w": 0})
    check(abs(g["w"] / f["all"]["w"] - 2 * MIB / total) < 0.01,
          "grow_site's width is its share of the new run: %.4f" % (g["w"] / f["all"]["w"]))
    main = f.get("all>main", {})
    want = sum(n - b for b, n in TRUTH.values())
    check(main.get("delta") == want and "grew" in main.get("cls", ""),
          "main: the sum of its callees' changes, %d: %r" % (want, main.get("delta")))
    tip = tooltip(b, "all>main>grow_site")
    check("base 1.00 MiB (1048576 bytes), new 2.00 MiB (2097152 bytes)" in tip and
          "change +1.00 MiB (+1048576 bytes) (+100.0%)" in tip,
          "grow_site's tooltip: base, new, change: %r" % tip)
    tip = tooltip(b, "all>main>new_site")
    check("change +4.88 KiB (+5000 bytes) (new in this run)" in tip,
          "new_site's tooltip says it is new: %r" % tip)
    tip = tooltip(b, "all>main>same_site")
    check("change 0 B (0 bytes)" in tip, "same_site's tooltip: no change: %r" % tip)


def base_shape(b):
    # Through the page's own control, as a viewer switches it.
    b.js("var s = document.getElementById('shape'); s.value = 'base';"
         "s.dispatchEvent(new Event('change'));")
    f = frames(b)
    old = f.get("all>main>old_site")
    check(old is not None and (old["base"], old["new"], old["delta"], old["bytes"]) ==
          (3000, 0, -3000, 3000), "base shape: old_site drawn, 3000 -> 0: %r" % old)
    if old:
        check("shrank" in old["cls"].split() and blue(old["rgb"]),
              "old_site: shrank, blue %r" % old["rgb"])
    check("all>main>new_site" not in f, "base shape: new_site (not in base) is not drawn")
    g = f.get("all>main>grow_site", {})
    check(g.get("bytes") == MIB and g.get("delta") == MIB and red(g.get("rgb", [0, 0, 0])),
          "base shape: grow_site 1 MiB wide, still red +1 MiB: %r" % g)
    tip = tooltip(b, "all>main>old_site")
    check("change -2.93 KiB (-3000 bytes) (gone from the new run)" in tip,
          "old_site's tooltip: gone: %r" % tip)
    check("base run" in b.js("return document.getElementById('footer').textContent"),
          "the footer names the base shape")
    b.js("window.memreport.setShape('new')")


def views(b):
    # Inverted: the allocating functions are the roots, with their own changes.
    b.click(b.find("#inverted"))
    f = frames(b)
    g = f.get("all>grow_site", {})
    check(g.get("delta") == MIB and "grew" in g.get("cls", ""),
          "inverted: grow_site a root, +1 MiB, red: %r" % g.get("delta"))
    check(f.get("all>grow_site>main", {}).get("delta") == MIB,
          "inverted: its caller main carries grow_site's change")
    b.click(b.find("#inverted"))
    # Functions tab: base, new and change per function.
    b.click(b.find("#tab-table"))
    t = b.js(TABLE_JS)
    for name, (base, new) in TRUTH.items():
        if new == 0:
            check(name not in t, "table (new shape): %s not listed" % name)
            continue
        r = t.get(name, {})
        check((r.get("base"), r.get("new"), r.get("delta")) == (base, new, new - base),
              "table: %s base %d new %d change %d: %r" % (name, base, new, new - base, r))
    check(t.get("grow_site", {}).get("cells", [""])[-1] == "+1.00 MiB",
          "table: grow_site's change cell +1.00 MiB")
    b.js("window.memreport.setShape('base')")
    t = b.js(TABLE_JS)
    check(t.get("old_site", {}).get("delta") == -3000, "table (base shape): old_site -3000")
    b.js("window.memreport.setShape('new')")
    b.click(b.find("#tab-graph"))
    # Zoom: a click on grow_site makes it the full width.
    el = b.js("return Array.from(document.querySelectorAll('#chart .fr'))"
              ".find(function (d) { return d.dataset.name === 'grow_site'; })")
    b.click(el[webdriver.ELEMENT])
    f = frames(b)
    check(abs(f.get("all>main>grow_site", {}).get("w", 0) - f["all>main>grow_site"]["w"]) < 1
          and f["all>main>grow_site"]["w"] > 1000, "zoom: grow_site fills the width")
    b.js("document.getElementById('reset').click()")


def hostile(memreport, base, new, work):
    """The same runs with same_site renamed to HTML: its name stays text."""
    caps = []
    for src in (base, new):
        dst = os.path.join(work, "hostile-" + os.path.basename(src))
        shutil.copy(src, dst)
        with sqlite3.connect(dst) as db:
            n = db.execute("UPDATE frame SET function = ? WHERE function = 'same_site'",
                           (HOSTILE,)).rowcount
        check(n >= 1, "hostile: same_site renamed in %s" % os.path.basename(dst))
        caps.append(dst)
    page = os.path.join(work, "hostile.html")
    subprocess.run([memreport, "diff", *caps, "--html", "-o", page, "-f"], check=True,
                   capture_output=True)
    with open(page, encoding="utf-8") as fp:
        html = fp.read()
    check(HOSTILE not in html and "<img src=x" not in html, "hostile: the raw name is not in "
          "the page")
    with webdriver.Browser(width=1280, height=900) as b:
        b.get("file://" + page)
        no_errors(b, "hostile page")
        f = frames(b)
        fr = f.get("all>main>" + HOSTILE)
        check(fr is not None and fr["name"] == HOSTILE and fr["delta"] == 0,
              "hostile: the frame is named exactly, unchanged: %r" % (fr and fr["name"]))
        check(b.js("return window.__pwned === undefined && "
                   "document.querySelectorAll('img').length === 0"), "hostile: no markup ran")
        tip = tooltip(b, "all>main>" + HOSTILE)
        check(tip.startswith(HOSTILE), "hostile: the tooltip shows the name as text")


def cli(memreport, base, new, work):
    page = os.path.join(work, "cli.html")
    p = subprocess.run([memreport, "diff", base, new, "--html", "--json", "-o", page],
                       capture_output=True, text=True)
    check(p.returncode == 1 and "exclude each other" in p.stderr and not os.path.exists(page),
          "--html --json: usage error, no page (%d)" % p.returncode)
    with open(page, "w") as fp:
        fp.write("keep")
    p = subprocess.run([memreport, "diff", base, new, "--html", "-o", page],
                       capture_output=True, text=True)
    with open(page) as fp:
        check(p.returncode != 0 and fp.read() == "keep", "--html -o existing: refused, kept")
    p = subprocess.run([memreport, "diff", base, new, "--html", "-o", page, "-f",
                        "--fail-if", "peak_bytes>+5%"], capture_output=True, text=True)
    with open(page) as fp:
        check(p.returncode == 4 and "peak_bytes grew" in p.stderr and
              "fg-data" in fp.read(), "--html --fail-if: exit 4, the page written")


def main():
    memtrace, memreport, prog, work = sys.argv[1:5]
    if why := webdriver.missing():
        print("SKIP:", why)
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    caps = []
    for run in ("1", "2"):
        cap = os.path.join(work, ("base" if run == "1" else "new") + ".db")
        subprocess.run([memtrace, "-f", "-o", cap, "--", prog, run], check=True,
                       capture_output=True)
        caps.append(cap)
    base, new = caps
    rep = json.loads(subprocess.run([memreport, "diff", base, new, "--json"], check=True,
                                    capture_output=True, text=True).stdout)
    stacks = {tuple(s["stack"]): s["peak_bytes"]["delta"] for s in rep["stacks"]}
    page = os.path.join(work, "diff.html")
    subprocess.run([memreport, "diff", base, new, "--html", "-o", page], check=True,
                   capture_output=True)
    with webdriver.Browser(width=1280, height=900) as b:
        b.get("file://" + page)
        no_errors(b, "the page")
        check("differential" in b.js("return document.title"), "the title says differential")
        sub = b.js("return document.getElementById('subtitle').textContent")
        check(sub.startswith("Peak of each run: base ") and "+" in sub, "subtitle: %r" % sub)
        new_shape(b, stacks)
        base_shape(b)
        views(b)
        no_errors(b, "the page, after every view")
    hostile(memreport, base, new, work)
    cli(memreport, base, new, work)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
