#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport view's looks, in a real browser (headless chromium over WebDriver), light and
# dark (the system's scheme emulated through DevTools' Emulation.setEmulatedMedia): every
# text on the page at least 4.5:1 against what it is drawn on; a tree of ten processes
# (`memtrace -o DIR/` on procs/spawn_all.c starting nine programs with long arguments) whose
# dozen series (ten bands, RSS, VSZ) have colours at least 20 apart (CIEDE2000) and 3:1
# against the plot; a name cut with an ellipsis whole in its title, the page never wider
# than the window; the keyboard: Tab reaches the timeline and the graph, arrows move a
# cursor (drawn, the values shown as the mouse shows them) that Enter selects and Escape
# leaves, Enter without one goes to the graph, where arrows
# go from frame to frame and Enter zooms; on the tree, up and down pick a process's band
# and Enter opens it. Screenshots of each page and scheme are left in WORKDIR.
# Usage: view_looks.py MEMTRACE MEMREPORT SPAWN_ALL PROG FIXTURE_TOOL WORKDIR (77: no browser)
import itertools
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "reports"))
import webdriver  # noqa: E402
from checks import (SERIES_APART, check, clean_env, contrast, de2000, finish,  # noqa: E402
                    fresh_dir, rgb)

LONG_ARG = "--input=/srv/experiments/a-rather-long-directory-name/run-%d/measurements.dat"
LONG_PROG = "a-program-whose-file-name-is-long-enough-to-be-cut-in-the-legend"
LONG_MARK = "loading the configuration files and the plugins named in them"

# The colours each visible text is drawn in and on: its own colour over the backgrounds
# below it (each ancestor's, over the one under it), and an ancestor's opacity blending both
# into what lies under that ancestor. SVG text is drawn in its fill.
TEXTS_JS = r"""
function rgba(s) {
  var m = (s || '').match(/[\d.]+/g);
  return !m || s === 'none' ? [0, 0, 0, 0] : [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1];
}
function over(top, under) {
  var a = top[3];
  return [top[0] * a + under[0] * (1 - a), top[1] * a + under[1] * (1 - a),
          top[2] * a + under[2] * (1 - a), 1];
}
var out = [];
document.querySelectorAll('body *').forEach(function (e) {
  if (e.closest('script, style, title, [hidden]')) return;
  var text = Array.from(e.childNodes).filter(function (n) { return n.nodeType === 3; })
    .map(function (n) { return n.textContent; }).join('').trim();
  if (!text || !e.checkVisibility({ opacityProperty: true, visibilityProperty: true })) return;
  var r = e.getBoundingClientRect();
  if (r.width < 1 || r.height < 1) return;
  var chain = [];
  for (var a = e; a; a = a.parentElement) chain.unshift(a);
  var bg = [255, 255, 255, 1], faded = [];
  chain.forEach(function (a) {
    var cs = getComputedStyle(a), before = bg;
    bg = over(rgba(cs.backgroundColor), bg);
    if (+cs.opacity < 1) faded.push([+cs.opacity, before]);
  });
  var cs = getComputedStyle(e);
  var fg = over(rgba(e instanceof SVGElement ? cs.fill : cs.color), bg);
  for (var i = faded.length - 1; i >= 0; i--) {
    fg = over([fg[0], fg[1], fg[2], faded[i][0]], faded[i][1]);
    bg = over([bg[0], bg[1], bg[2], faded[i][0]], faded[i][1]);
  }
  out.push([text.slice(0, 50), e.id || e.className.baseVal || e.className || e.tagName, fg, bg]);
});
return out;
"""

# Every element whose text is cut (wider than its box, its overflow hidden): its text and
# the title nearest to it. A flame graph frame is left out: its tip names it whole.
CUT_JS = r"""
var out = [];
document.querySelectorAll('body *').forEach(function (e) {
  if (e.closest('.fr, .chart, [hidden], svg') || !e.checkVisibility()) return;
  var cs = getComputedStyle(e);
  if (e.scrollWidth <= e.clientWidth + 1 || (cs.overflowX !== 'hidden' && cs.overflowX !== 'clip'))
    return;
  var t = e.closest('[title]');
  out.push([e.id || e.tagName, e.textContent.replace(/\s+/g, ' ').trim(),
            t ? t.title.replace(/\s+/g, ' ') : null]);
});
var marks = Array.from(document.querySelectorAll('#vtl-svg g.mark')).map(function (g) {
  var t = g.querySelector('text'), title = g.querySelector('title');
  return [t ? t.textContent : null, title ? title.textContent : null];
});
return { cut: out, marks: marks, page: document.documentElement.scrollWidth,
         window: window.innerWidth };
"""

SWATCHES_JS = r"""
var svg = document.getElementById('vtl-svg');
return {
  legend: Array.from(document.querySelectorAll('#vtl-legend i')).map(function (i) {
    return [(i.closest('.proc') || i.parentElement).textContent, getComputedStyle(i).backgroundColor];
  }),
  drawn: Array.from(svg.querySelectorAll('path.band, path.series')).map(function (p) {
    return [p.dataset.proc || p.dataset.kind, getComputedStyle(p).stroke];
  }),
  panel: getComputedStyle(svg).backgroundColor
};
"""


# Each process's button (header and legend): its page's name, the texts shown whole in it
# (spans neither cut nor pushed out of the button), and its title.
NAMES_JS = r"""
return Array.from(document.querySelectorAll('#heap-list button, #vtl-legend .proc button'))
  .map(function (bt) {
    var r = bt.getBoundingClientRect();
    var whole = Array.from(bt.querySelectorAll('span')).filter(function (sp) {
      var q = sp.getBoundingClientRect(), text = document.createRange();
      text.selectNodeContents(sp);  // the text's own width, the part cut off included
      return q.width > 0 && text.getBoundingClientRect().width <= q.width + 0.01 &&
        q.right <= r.right + 0.01;
    }).map(function (sp) { return sp.textContent; });
    return [bt.dataset.heap, whole.join(' '), bt.title];
  });
"""


def told_apart(names, what):
    """names: [(pid, shown, whole command or title)] of the nine programs run-0..run-8: each
    one's shown name says its run (what tells them apart) and its pid, no two alike without
    their pid, and its whole command is given."""
    runs = [next((str(k) for k in range(9) if LONG_ARG % k in n[2]), None) for n in names]
    check(len(names) == 9 and all(runs), "%s: nine, each with its whole command" % what)
    check(all(re.findall(r"run-(\d+)", n[1]) == [r] for n, r in zip(names, runs)),
          "%s: each says its run (its only distinct argument): %r" % (what, [n[1] for n in names]))
    check(all(str(n[0]) in n[1] for n in names), "%s: each keeps its pid: %r" %
          (what, [n[1] for n in names][:3]))
    bare = set(n[1].replace(str(n[0]), "") for n in names)
    check(len(bare) == 9, "%s: no two alike but for their pid: %r" % (what, sorted(bare)[:3]))


def plot_names(memreport, tree, work):
    """The PNG plot's legend of the tree: each process by what tells it apart."""
    png, data = os.path.join(work, "tree.png"), os.path.join(work, "tree.json")
    subprocess.run([memreport, "plot", tree, "-o", png, "--data", data], check=True,
                   capture_output=True)
    with open(data) as f:
        procs = json.load(f)["processes"]
    kids = [(p["pid"], p.get("legend") or "", p["label"]) for p in procs
            if LONG_PROG in p["label"].split(" ")[0]]
    told_apart(kids, "plot DIR's legend")
    check(all(len(k[1]) <= 60 and k[1].endswith("(pid %d)" % k[0]) for k in kids),
          "plot DIR's legend: short names ending in the pid: %r" % [k[1] for k in kids][:3])


def page_names(b):
    """The page's header and legend: each process by what tells it apart, its pid and what
    tells it apart in sight, its whole command on hover."""
    rows = [r for r in b.js(NAMES_JS) if "spawn_all" not in r[0]]
    pid = lambda r: int(re.match(r"pid (\d+)", r[0]).group(1))  # noqa: E731
    for where, part in (("header", rows[:len(rows) // 2]), ("legend", rows[len(rows) // 2:])):
        told_apart([(pid(r), r[1], r[2]) for r in part], "page's " + where)


def scheme(b, dark):
    b.cdp("Emulation.setEmulatedMedia", {"features": [
        {"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]})


def open_page(b, url, dark):
    b.get("about:blank")
    scheme(b, dark)
    b.get(url)
    return b.until("return document.readyState === 'complete' && !!window.memreport")


def texts_readable(b, what):
    texts = b.js(TEXTS_JS)
    bad = [(t, cls, round(contrast(fg, bg), 2)) for t, cls, fg, bg in texts
           if contrast(fg, bg) < 4.5]
    check(len(texts) > 20 and not bad, "%s: %d texts, each at least 4.5:1 against its "
          "background: %r" % (what, len(texts), bad[:8]))


def names_whole(b, what, at_least, marks_cut=0):
    d = b.js(CUT_JS)
    wrong = [c for c in d["cut"] if not c[2] or c[1] not in c[2]]
    check(len(d["cut"]) >= at_least and not wrong,
          "%s: %d names cut with an ellipsis, each whole in its title: %r" %
          (what, len(d["cut"]), wrong[:4] or [c[0] for c in d["cut"]]))
    cut_marks = [m for m in d["marks"] if m[0] and m[0].endswith("\u2026")]
    check(len(cut_marks) >= marks_cut and all(m[1] and m[0][:-1] in m[1] for m in cut_marks),
          "%s: a mark's label cut short is whole in its title: %r" % (what, cut_marks))
    check(d["page"] <= d["window"], "%s: the page is no wider than the window (%d <= %d)" %
          (what, d["page"], d["window"]))
    return d


def colours_apart(b, what, want):
    d = b.js(SWATCHES_JS)
    panel = rgb(d["panel"])
    legend = [(n, rgb(c)) for n, c in d["legend"]]
    check(len(legend) >= want, "%s: %d series in the legend" % (what, len(legend)))
    close = [(p[0][:30], q[0][:30], round(de2000(p[1], q[1]), 1))
             for p, q in itertools.combinations(legend, 2) if de2000(p[1], q[1]) < SERIES_APART]
    check(not close, "%s: the series' colours at least %d apart (CIEDE2000): %r" %
          (what, SERIES_APART, close))
    faint = [(n[:30], round(contrast(c, panel), 2)) for n, c in legend if contrast(c, panel) < 3]
    check(not faint, "%s: each series' colour at least 3:1 against the plot: %r" % (what, faint))
    drawn = set(rgb(c) for _, c in d["drawn"])
    check(drawn and drawn <= set(c for _, c in legend),
          "%s: the plot draws the legend's colours (%d)" % (what, len(drawn)))


def tab_reaches(b, ids):
    b.js("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
    seen = []
    for _ in range(120):
        b.keys("\ue004")  # Tab
        seen.append(b.js("var e = document.activeElement; return e.id || e.tagName"))
    check(all(i in seen for i in ids), "Tab reaches %r: %r" % (ids, sorted(set(seen))))


def keyboard(b):
    """Timeline and graph by keys on a one-process page."""
    b.js("document.getElementById('vtl-svg').focus()")
    b.keys("\ue011\ue014\ue014\ue014")  # Home, ArrowRight x 3
    check(b.js("return memreport.view.selection()") == {"kind": "moment", "k": 0},
          "Home then three ArrowRight: the moment at the start, the cursor moved on")
    x3 = b.js("var g = memreport.view.geometry();"
              "return g.x(memreport.view.edgeTime(3))")
    tip = b.js("var t = document.getElementById('vtl-tip'),"
               "    c = document.querySelector('#vtl-svg line.cursor');"
               "return [getComputedStyle(t).display, t.textContent, c && +c.getAttribute('x1')]")
    check(tip[0] == "block" and "live heap" in tip[1] and "Enter selects" in tip[1] and
          tip[2] is not None and abs(tip[2] - x3) < 0.5,
          "the cursor at edge 3 drawn, its values shown as the mouse shows them: %r" % tip)
    b.keys("\ue007")  # Enter
    check(b.js("return memreport.view.selection()") == {"kind": "moment", "k": 3} and
          not b.js("return !!document.querySelector('#vtl-svg line.cursor')"),
          "Enter selects the cursor's moment, edge 3")
    b.keys("\ue014\ue00c")  # ArrowRight, Escape: the cursor left, nothing selected
    check(b.js("return memreport.view.selection()") == {"kind": "moment", "k": 3} and
          not b.js("return !!document.querySelector('#vtl-svg line.cursor')"),
          "Escape leaves the cursor, the selection stays")
    b.keys("\ue010\ue012\ue007")  # End, ArrowLeft, Enter: the edge before the end
    nb = b.js("return memreport.view.buckets")
    check(b.js("return memreport.view.selection()") == {"kind": "moment", "k": nb - 1},
          "End, ArrowLeft and Enter: the edge before the end")
    b.keys("\ue007")  # Enter, no cursor
    kbd = b.js("var d = document.querySelector('#chart .fr.kbd');"
               "return [document.activeElement.id, d && d.dataset.name, d && +d.dataset.depth,"
               " getComputedStyle(document.getElementById('tip')).display]")
    check(kbd == ["chart", "all", 0, "block"],
          "Enter on the timeline: the graph has the keyboard, on its root, described: %r" % kbd)
    b.keys("\ue015")  # ArrowDown: the root is on top, its callees below
    first = b.js("var d = document.querySelector('#chart .fr.kbd');"
                 "return d && [d.dataset.name, +d.dataset.depth, +d.dataset.bytes]")
    check(first and first[1] == 1, "ArrowDown: a callee of the root: %r" % first)
    b.keys("\ue014")  # ArrowRight
    second = b.js("var d = document.querySelector('#chart .fr.kbd');"
                  "return d && [d.dataset.name, +d.dataset.depth, +d.dataset.bytes]")
    row = b.js("return Array.from(document.querySelectorAll('#chart .fr'))"
               ".filter(function (d) { return +d.dataset.depth === 1; }).length")
    check(second and (row < 2 or (second[1] == 1 and second != first)),
          "ArrowRight: the next frame of the row: %r" % second)
    b.keys("\ue007")  # Enter
    zoom = b.js("var z = memreport.state.zoom; return z && [z.name, z.total]")
    check(second and zoom == [second[0], second[2]], "Enter zooms into the frame: %r" % zoom)
    texts_readable(b, "zoomed graph (callers drawn paler)")
    b.keys("\ue00c")  # Escape
    check(b.until("return memreport.state.zoom === null"), "Escape zooms out")


def tree_keys(b, listed):
    b.js("document.getElementById('vtl-svg').focus()")
    b.keys("\ue013\ue013")  # ArrowUp x 2: the first band, then the one above it
    lane = b.js("return Array.from(document.querySelectorAll('#vtl-svg path.band.lane'))"
                ".map(function (p) { return p.dataset.proc; })")
    check(lane == [listed[1]["name"]], "two ArrowUp: the second process's band: %r" % lane)
    tip = b.js("return document.getElementById('vtl-tip').textContent")
    check(listed[1]["name"] in tip and "Enter opens" in tip, "the tip names it: %r" % tip[:120])
    b.keys("\ue007")  # Enter
    check(b.until("return document.readyState === 'complete' && !!window.memreport && "
                  "memreport.heap === arguments[0]", listed[1]["name"]),
          "Enter opens that process's page")


def main():
    launcher, memreport, spawn_all, prog, fixture, work = sys.argv[1:7]
    if why := webdriver.missing():
        print("SKIP:", why)
        return 77
    fresh_dir(work)
    # One capture with marks, one a long name.
    std = os.path.join(work, "std.db")
    subprocess.run([fixture, std], check=True)
    db = sqlite3.connect(std)
    db.executemany("INSERT INTO mark(heap, kind, name, ts_begin, ts_end, tid) VALUES "
                   "(1, ?, ?, ?, ?, 100)",
                   [("range", LONG_MARK, 2000, 6000), ("mark", "cache warm", 6200, 6200),
                    ("mark", "done", 13000, 13000)])
    db.commit()
    db.close()
    std_page = os.path.join(work, "std.html")
    subprocess.run([memreport, "view", std, "-o", std_page], check=True)
    # One process starting nine with long command lines: ten processes, the nine named
    # after a program file of a long name.
    tree = os.path.join(work, "tree") + "/"
    prog = shutil.copy(prog, os.path.join(work, LONG_PROG))
    subprocess.run([launcher, "-o", tree, "--", spawn_all, prog] +
                   [LONG_ARG % i for i in range(9)], check=True, capture_output=True,
                   env=clean_env())
    tree_page = os.path.join(work, "tree.html")
    subprocess.run([memreport, "view", tree, "-o", tree_page], check=True, capture_output=True)
    s = json.loads(subprocess.run([memreport, "summary", tree, "--json"], check=True,
                                  capture_output=True, text=True).stdout)
    check(len(s["processes"]) == 10, "the tree has ten processes: %d" % len(s["processes"]))

    plot_names(memreport, tree, work)

    with webdriver.Browser(width=1366, height=768) as b:
        for dark in (False, True):
            name = "dark" if dark else "light"
            check(open_page(b, "file://" + std_page, dark), "%s: the page opens" % name)
            check(b.js("return matchMedia('(prefers-color-scheme: dark)').matches") == dark,
                  "%s: the browser reports the %s scheme" % (name, name))
            check(b.js("return window.__errors") == [], "%s: no script errors" % name)
            texts_readable(b, "%s, one capture" % name)
            names_whole(b, "%s, one capture" % name, 0, 1)
            open(os.path.join(work, "view-%s.png" % name), "wb").write(b.screenshot())
            if not dark:
                tab_reaches(b, ["vtl-svg", "chart", "tab-table", "vtl-peak"])
            keyboard(b)
            b.type(b.find("#search"), "make")
            check(b.js("return document.querySelectorAll('#chart .fr.match').length") > 0,
                  "%s: a search matches a frame" % name)
            texts_readable(b, "%s, a search's matches" % name)

            check(open_page(b, "file://" + tree_page, dark), "%s: the tree's page opens" % name)
            check(b.js("return window.__errors") == [], "%s, tree: no script errors" % name)
            texts_readable(b, "%s, tree" % name)
            names_whole(b, "%s, tree" % name, 19)  # the title, 9 in the header, 9 above the plot
            b.js("document.querySelector('#vtl-legend input[data-kind=\"vsz\"]').click()")
            colours_apart(b, "%s, tree" % name, 12)
            open(os.path.join(work, "view-tree-%s.png" % name), "wb").write(b.screenshot())
            if not dark:
                page_names(b)
            listed = b.js("return memreport.heaps")
            tree_keys(b, listed)
            texts_readable(b, "%s, tree, the second process" % name)
        # The scheme changing while the page is open: the series take the other palette.
        open_page(b, "file://" + tree_page, False)
        first = b.js("return getComputedStyle(document.querySelector('#vtl-legend i')).backgroundColor")
        scheme(b, True)
        check(b.until("return getComputedStyle(document.querySelector('#vtl-legend i'))"
                      ".backgroundColor !== arguments[0]", first),
              "light turned dark: the legend changes colours")
        colours_apart(b, "light turned dark, tree", 12)
        texts_readable(b, "light turned dark, tree")
    finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
