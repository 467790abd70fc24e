#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport plot's series colours, read back from its PNGs' legends (checks.legend_colours):
# a tree of twelve processes (`memtrace -o DIR/` on procs/spawn_all.c starting eleven
# programs) has twelve bands, and `plot --sites 10` on the deep fixture the live heap and ten
# sites; within each plot, every series' colour is at least checks.SERIES_APART from every
# other (CIEDE2000, the view page's bound) and 3:1 against the white plot.
# Usage: plot_colours.py MEMTRACE MEMREPORT SPAWN_ALL PROG DEEP_FIXTURE WORKDIR
import itertools
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import (SERIES_APART, check, clean_env, contrast, de2000, finish,  # noqa: E402
                    fresh_dir, legend_colours)


def apart(what, colours, want):
    check(len(colours) == want, "%s: %d series in the legend (%d)" % (what, want, len(colours)))
    close = [(a, b, round(de2000(a, b), 1)) for a, b in itertools.combinations(colours, 2)
             if de2000(a, b) < SERIES_APART]
    check(not close, "%s: each series' colour at least %d from the others (CIEDE2000): %r" %
          (what, SERIES_APART, close))
    faint = [(c, round(contrast(c, (255, 255, 255)), 2)) for c in colours
             if contrast(c, (255, 255, 255)) < 3]
    check(not faint, "%s: each at least 3:1 against the white plot: %r" % (what, faint))


def main():
    launcher, memreport, spawn_all, prog, deep_fixture, work = sys.argv[1:7]
    fresh_dir(work)
    tree = os.path.join(work, "tree") + "/"
    subprocess.run([launcher, "-o", tree, "--", spawn_all, prog] +
                   ["run-%d" % i for i in range(11)], check=True, capture_output=True,
                   env=clean_env())
    png = os.path.join(work, "tree.png")
    subprocess.run([memreport, "plot", tree, "-o", png], check=True, capture_output=True)
    legends = legend_colours(png)
    check(legends is not None and len(legends) == 1, "plot DIR: one plot, one legend")
    apart("plot DIR, twelve processes", legends[0] if legends else [], 12)

    deep = os.path.join(work, "deep.db")
    subprocess.run([deep_fixture, deep], check=True, capture_output=True)
    png, data = os.path.join(work, "sites.png"), os.path.join(work, "sites.json")
    subprocess.run([memreport, "plot", deep, "--sites", "10", "-o", png, "--data", data],
                   check=True, capture_output=True)
    with open(data) as f:
        check(len(json.load(f)["sites"]) == 10, "plot --sites 10: ten sites")
    legends = legend_colours(png)
    check(legends is not None and len(legends) == 3, "plot --sites: three plots, each its legend")
    if legends and len(legends) == 3:
        check(legends[1] == legends[2], "plot --sites: both rows of sites in the same colours")
        apart("plot --sites 10, the live heap and the sites", legends[0] + legends[1], 11)
    finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
