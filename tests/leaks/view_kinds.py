#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport view's leaks in a real browser (headless chromium over WebDriver), on a traced
# program with a block of each leak kind (tests/leaks/kinds.c): the header's leaked bytes
# and kinds against `memreport summary`; the leaks tab, for each kind it offers, against
# `memreport leaks --kind`; a range's leaks (its blocks still live at the end) against
# `leaks --range` and `top --metric leaked --range`; the choice kept in the URL. A capture
# recorded without the scan says so in the header.
# Usage: view_kinds.py --lib LIB --memreport MEMREPORT --prog PROG --workdir DIR
#        (exit 77 = skipped: no browser)
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

KIND_OPTIONS = {"definitely_lost": "definite", "indirectly_lost": "indirect",
                "possibly_lost": "possible", "still_reachable": "reachable"}
CLASSES = ["unclassified", "definitely_lost", "indirectly_lost", "possibly_lost",
           "still_reachable", "runtime_held"]


def report(memreport, *args):
    out = subprocess.run([memreport, *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def leaks_tab(b, option):
    """The leaks tab's rows for one choice of its kind list: (bytes, blocks) summed."""
    return b.js("""var s = document.getElementById('leaks-kind');
      s.value = arguments[0]; s.dispatchEvent(new Event('change'));
      memreport.showTab('leaks');
      return Array.from(document.querySelectorAll('#leaks-table tbody tr')).reduce(
        function (t, r) { return [t[0] + +r.dataset.bytes, t[1] + +r.dataset.count]; }, [0, 0]);""",
                option)


def expected(leaks, option):
    """What `leaks --json` says of the same choice."""
    if option == "program":
        return [leaks["bytes"], leaks["blocks"]]
    if option == "runtime":
        return [leaks["runtime_held"]["bytes"], leaks["runtime_held"]["blocks"]]
    k = leaks["kinds"][option]
    return [k["bytes"], k["blocks"]]


def compare_tab(b, memreport, db, what, *args):
    leaks = report(memreport, "leaks", db, *args)
    options = b.js("return Array.from(document.getElementById('leaks-kind').options)"
                   ".map(function (o) { return o.value; })")
    for kind, word in KIND_OPTIONS.items():
        if leaks["kinds"][kind]["blocks"]:
            check(kind in options, "%s: the leaks tab offers %s" % (what, kind))
    for option in options:
        if option == "all":
            continue
        want = expected(leaks, option)
        got = leaks_tab(b, option)
        check(got == want, "%s: leaks tab, %s: %r = memreport leaks %s: %r" %
              (what, option, got, " ".join(args), want))
        if option in KIND_OPTIONS:
            one = report(memreport, "leaks", db, "--kind", KIND_OPTIONS[option], *args)
            check([one["kinds"][option]["bytes"], one["kinds"][option]["blocks"]] == want,
                  "%s: --kind %s says the same" % (what, KIND_OPTIONS[option]))
    return leaks


def main():
    ap = argparse.ArgumentParser()
    for o in ("lib", "memreport", "prog", "workdir"):
        ap.add_argument("--" + o, required=True)
    a = ap.parse_args()
    if why := webdriver.missing():
        print("SKIP:", why)
        return 77
    fresh_dir(a.workdir)
    db = os.path.join(a.workdir, "kinds.db")
    subprocess.run([a.prog], check=True, capture_output=True,
                   env=clean_env(OUTPUT=db) | {"LD_PRELOAD": a.lib})
    page = os.path.join(a.workdir, "kinds.html")
    subprocess.run([a.memreport, "view", db, "-o", page], check=True, capture_output=True)
    summary = report(a.memreport, "summary", db)
    check("leak_kinds" in summary, "the capture has a leak scan")

    with webdriver.Browser(width=1366, height=768) as b:
        b.get("file://" + page)
        check(b.js("return window.__errors") == [], "no script errors")
        lk = b.js("return memreport.data.view.leaks")
        check(lk["scanned"], "the page knows the scan ran")
        got = {c["name"]: (c["bytes"], c["blocks"]) for c in lk["classes"]}
        for kind, v in summary["leak_kinds"].items():
            check(got[kind] == (v["bytes"], v["blocks"]),
                  "header: %s %r = summary's %r" % (kind, got[kind], v))
        check(got["runtime_held"] == (summary["runtime_held_bytes"],
                                      summary["runtime_held_allocations"]),
              "header: held by the C runtime as summary's")
        program = [sum(got[c][i] for c in CLASSES[:5]) for i in (0, 1)]
        check(program == [summary["leaked_bytes"], summary["leaked_allocations"]],
              "header: leaked %r = summary's" % program)
        facts = b.js("return document.getElementById('facts').textContent")
        for kind in ("definitely lost", "indirectly lost", "possibly lost", "still reachable"):
            check(kind in facts, "header names %s: %r" % (kind, facts))

        # The whole run: every kind the tab offers, as leaks --kind says it.
        compare_tab(b, a.memreport, db, "whole run")

        # A range that cuts the run's allocations in two: the leaks of its allocations.
        times = sorted(int(line) for line in subprocess.run(
            [a.memreport, "sql", db, "SELECT ts FROM allocations", "--csv"], check=True,
            capture_output=True, text=True).stdout.splitlines()[1:])
        mid = times[len(times) // 2]
        k = b.js("return Math.floor(arguments[0] / memreport.view.width)", mid)
        nb = b.js("return memreport.view.buckets")
        b.js("memreport.view.select({kind: 'range', a: arguments[0], b: arguments[1],"
             " metric: 'live'})", k + 1, nb)
        lo = b.js("return memreport.view.rangeFrom(arguments[0])", k + 1)
        rng = "%dns.." % lo  # to the last edge, past the run's end, which --range refuses
        late = compare_tab(b, a.memreport, db, "range " + rng, "--range", rng)
        whole = report(a.memreport, "leaks", db)
        check(0 < late["bytes"] < whole["bytes"], "the range holds part of the leaks: %d of %d" %
              (late["bytes"], whole["bytes"]))
        top = report(a.memreport, "top", db, "--metric", "leaked", "--range", rng)
        check(top["total"] == late["bytes"], "top --metric leaked --range: %d = leaks --range %d"
              % (top["total"], late["bytes"]))
        note = b.js("return document.getElementById('leaks-note').textContent")
        check("allocated from" in note, "the leaks tab says it holds the range's: %r" % note)

        # The choice is kept in the URL and reopened from it: a kind the list offers (which
        # ones depends on the scan's verdicts of this run).
        choice = next(o for o in b.js("return Array.from(document.getElementById('leaks-kind')"
                                      ".options).map(function (o) { return o.value; })")
                      if o not in ("program", "all"))
        leaks_tab(b, choice)
        link = b.js("return location.href")
        check("leaks=" + choice in link and "tab=leaks" in link, "kept in the URL: %r" % link)
        open(os.path.join(a.workdir, "view-leaks.png"), "wb").write(b.screenshot())
        b.get("about:blank")
        b.get(link)
        check(b.js("return document.getElementById('leaks-kind').value") == choice,
              "the link reopens the kind")
        check(b.js("return window.__errors") == [], "no script errors after all that")

    # Recorded without the scan: the header says the kinds are unknown, and why.
    off = os.path.join(a.workdir, "off.db")
    subprocess.run([a.prog], check=True, capture_output=True,
                   env=clean_env(OUTPUT=off, LEAKS=0) | {"LD_PRELOAD": a.lib})
    page = os.path.join(a.workdir, "off.html")
    subprocess.run([a.memreport, "view", off, "-o", page], check=True, capture_output=True)
    with webdriver.Browser(width=1366, height=768) as b:
        b.get("file://" + page)
        lk = b.js("return memreport.data.view.leaks")
        check(not lk["scanned"] and lk.get("why"), "no scan: the page says why: %r" % lk)
        facts = b.js("return document.getElementById('facts').textContent")
        check("not classified" in facts, "no scan: the header says so: %r" % facts)
        summary = report(a.memreport, "summary", off)
        check(leaks_tab(b, "program") == [summary["leaked_bytes"], summary["leaked_allocations"]],
              "no scan: the leaks tab holds summary's leaks")
    finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
