#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport view of a process tree, in a real browser (headless chromium over WebDriver):
# `memtrace -o DIR/` on procs/joint_peak.c, a parent and a child whose heaps overlap (each
# one's own peak 2,500,000 B and 2,000,000 B, the most they held at one moment 3,000,000 B).
# The page's process list and the tree's joint peak against `memreport summary DIR`; each
# process's page (its header and its flame graph at its peak) against its line there; the
# timeline's stack on the tree's axis (a band per process, their sum at most the joint peak,
# reaching it); a click on the child's band reopens the page on the child at that moment, a
# range dragged across both processes is read in each, and the child's name opens its page on
# it, the numbers against `memreport top --at`/`--range` of each capture.
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
MEMREPORT = None


def top_total(cap, *args):
    out = subprocess.run([MEMREPORT, "top", cap, "--json", "--top", "0"] + list(args),
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["total"]


def root_bytes(b):
    return b.js("var r = document.querySelector('#chart .fr[data-name=\"all\"]');"
                "return r ? +r.dataset.bytes : 0")


def client_xy(b, t, v):
    """The viewport point of this page's time t (its own axis) and v bytes on the plot."""
    return b.js("var s = document.getElementById('vtl-svg'), r = s.getBoundingClientRect(),"
                " g = memreport.view.geometry(), h = s.viewBox.baseVal.height;"
                "return [r.left + g.x(arguments[0]) * r.width / g.W,"
                "        r.top + g.y(arguments[1]) * r.height / h];", t, v)


def reopened(b, name):
    return b.until("return document.readyState === 'complete' && !!window.memreport && "
                   "memreport.heap === arguments[0] && !!memreport.view", name)


def selection_args(b):
    """memreport top's arguments for the page's selection (its own axis)."""
    sel = b.js("return memreport.view.selection()")
    if sel["kind"] == "moment":
        return sel, ["--at", "%dns" % b.js("return memreport.view.edgeTime(arguments[0])", sel["k"])]
    if sel["a"] == 0 and sel["b"] == b.js("return memreport.view.buckets"):
        return sel, ["--metric", "live"]  # the whole run: its peak
    a = b.js("return memreport.view.rangeFrom(arguments[0])", sel["a"])
    z = b.js("return memreport.view.edgeTime(arguments[0])", sel["b"])
    return sel, ["--range", "%dns..%dns" % (a, z), "--metric", "live"]


def stack_checks(b, listed, total_peak):
    """The timeline's stack: one band per process in the tree's order, distinct colours, the
    sum at most the joint peak and reaching it. Returns the stack."""
    bands = b.js("return Array.from(document.querySelectorAll('#vtl-svg path.band'))"
                 ".map(function (p) { return [p.dataset.proc, p.getAttribute('fill')]; })")
    check([n for n, _ in bands] == [h["name"] for h in listed],
          "a band per process, in the tree's order: %r" % bands)
    check(len(set(c for _, c in bands)) == len(bands), "each band its own colour: %r" % bands)
    st = b.js("return memreport.view.stack()")
    check(st["most"] == total_peak and max(st["sum"]) == total_peak,
          "the stacked sum reaches the joint peak %d, never more: %r" % (total_peak, st["most"]))
    check(all(st["sum"][k] == sum(v[k] for v in st["vals"]) for k in range(len(st["ts"]))),
          "the sum is the bands' top at each of its %d times" % len(st["ts"]))
    procs = b.js("return memreport.view.procs()")
    for i, p in enumerate(procs):
        live = [st["ts"][k] for k in range(len(st["ts"])) if st["vals"][i][k]]
        check(not live or (p["offset"] <= live[0] and live[-1] < p["end"]),
              "%s: its band lies within its run" % p["name"])
    return st


def main():
    global MEMREPORT
    launcher, memreport, prog, work = sys.argv[1:5]
    MEMREPORT = memreport
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
            check(b.js("return window.__errors") == [], "%s: no script errors" % h["name"])
            stack_checks(b, listed, 3000000)
            legend = b.js("return document.getElementById('vtl-legend').textContent")
            check(STACKED in legend, "%s: the legend names the stacked sum" % h["name"])
        b.get("about:blank")
        b.get("file://" + page)
        b.js("document.querySelectorAll('#heap-list button')[1].click()")
        check(b.until("return document.readyState === 'complete' && !!window.memreport && "
                      "memreport.heap === arguments[0]", listed[1]["name"]),
              "a click reopens the page on the child")
        open(os.path.join(work, "view-tree.png"), "wb").write(b.screenshot())

        # On the parent's page: a click on the child's band, in the middle of their joint
        # plateau (the child's 2,000,000 B over the parent's 1,000,000 B).
        caps = {h["name"]: os.path.join(tree, p["capture"]) for h, p in zip(listed, procs)}
        parent, child = listed[0]["name"], listed[1]["name"]
        b.get("about:blank")
        b.get("file://" + page)
        st = b.js("return memreport.view.stack()")
        top_k = [k for k in range(len(st["ts"])) if st["sum"][k] == 3000000]
        check(len(top_k) == 1 and top_k[0] + 1 < len(st["ts"]), "one joint plateau: %r" % top_k)
        t0, t1 = st["ts"][top_k[0]], st["ts"][top_k[0] + 1]
        off = b.js("return memreport.view.offset")
        x, y = client_xy(b, (t0 + t1) / 2 - off, 2000000)
        b.mouse([("move", x, y), ("down",), ("up",)])
        check(reopened(b, child), "a click on the child's band opens the child's page")
        sel, args = selection_args(b)
        check(sel["kind"] == "moment", "at a moment: %r" % sel)
        check(root_bytes(b) == top_total(caps[child], *args) == 2000000,
              "the child's graph at that moment = top %s = 2,000,000" % " ".join(args))

        # Back on the parent's page: a range from before the child started to the middle of
        # the plateau, read in each process; the child's name opens its page on it.
        b.get("about:blank")
        b.get("file://" + page)
        cp = b.js("return memreport.view.procs()")[1]
        box = b.js("var r = document.getElementById('vtl-svg').getBoundingClientRect();"
                   "return [r.top, r.height]")
        xa, _ = client_xy(b, cp["offset"] - 0.2 * (cp["end"] - cp["offset"]) - off, 0)
        xb, _ = client_xy(b, (t0 + t1) / 2 - off, 0)
        ym = box[0] + 0.3 * box[1]
        b.mouse([("move", xa, ym), ("down",), ("move", (xa + xb) / 2, ym), ("move", xb, ym),
                 ("up",)])
        sel, args = selection_args(b)
        check(sel["kind"] == "range", "a drag selects a range: %r" % sel)
        want = top_total(caps[parent], *args)
        check(root_bytes(b) == want == 1000000,
              "the parent's graph over the range = top %s = 1,000,000" % " ".join(args))
        cp = b.js("return memreport.view.procs()")
        check(cp[0]["bytes"] == want, "the parent's share in the legend: %r" % cp[0])
        legend = b.js("return document.getElementById('vtl-legend').textContent")
        check("1.91 MiB" in legend, "the legend says the child's share: %r" % legend)
        b.js("document.querySelector('#vtl-legend button[data-heap=\"' + arguments[0] + '\"]')"
             ".click()", child)
        check(reopened(b, child), "the child's name opens its page")
        sel, args = selection_args(b)
        check(sel["kind"] == "range" and sel == dict(cp[1]["selection"], metric="live"),
              "the child's page opens on the range read in it: %r, %r" % (sel, cp[1]))
        check(root_bytes(b) == top_total(caps[child], *args) == cp[1]["bytes"] == 2000000,
              "the child's graph over the range = top %s = its legend's = 2,000,000" %
              " ".join(args))
        open(os.path.join(work, "view-tree-range.png"), "wb").write(b.screenshot())
    finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
