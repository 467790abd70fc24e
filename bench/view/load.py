#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Loads memreport view pages in headless chromium (tests/reports/webdriver.py) and prints, per
# page, its size and the time from navigation start to the end of the load event (the page's
# script, its data parsed and its first drawing included), the median of RUNS loads, then a
# moment and a range selected, each timed in the page. Speed only: nothing is asserted.
# Usage: bench/view/load.py PAGE.html... [--runs N]
import os
import statistics
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "reports"))
import webdriver  # noqa: E402

LOAD = """var n = performance.getEntriesByType('navigation')[0];
return [n.loadEventEnd - n.startTime, n.domContentLoadedEventEnd - n.startTime];"""
SELECT = """var v = memreport.view, t0 = performance.now();
v.select({kind: 'moment', k: Math.floor(v.buckets / 2)});
var t1 = performance.now();
v.select({kind: 'range', a: Math.floor(v.buckets / 4), b: Math.floor(v.buckets * 3 / 4),
          metric: 'alloc'});
return [t1 - t0, performance.now() - t1];"""


def main():
    args = sys.argv[1:]
    runs = 5
    if "--runs" in args:
        i = args.index("--runs")
        runs = int(args[i + 1])
        del args[i:i + 2]
    if why := webdriver.missing():
        sys.exit("load.py: " + why)
    print("%-40s %10s %12s %12s %12s" % ("page", "size (MB)", "load (ms)", "moment (ms)",
                                         "range (ms)"))
    with webdriver.Browser(width=1366, height=768) as b:
        for page in args:
            loads, sel = [], []
            for _ in range(runs):
                b.get("about:blank")
                b.get("file://" + os.path.abspath(page))
                errors = b.js("return window.__errors")
                if errors:
                    sys.exit("load.py: %s: script errors %r" % (page, errors))
                loads.append(b.js(LOAD)[0])
                sel.append(b.js(SELECT))
            print("%-40s %10.2f %12.0f %12.0f %12.0f" % (
                os.path.basename(page), os.path.getsize(page) / 1e6, statistics.median(loads),
                statistics.median(s[0] for s in sel), statistics.median(s[1] for s in sel)))


if __name__ == "__main__":
    main()
