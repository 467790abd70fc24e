#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Site labels past allocation wrappers (reporter/sites.h) on a real traced program
# (progs/xmalloc_sites.c, truth in its header): memreport stats and plot --sites name each
# row by xmalloc's caller, with the exact bytes of that caller. The plot's legends lie above
# its plot areas, never on them (read back from the PNG); -o x.jpg is refused.
# Usage: e2e_sites.py MEMTRACE_LAUNCHER MEMREPORT PROG WORKDIR
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures, plot_layout  # noqa: E402

TRUTH = {"build_index": 30000, "load_table": 6000, "arena_alloc": 700, "parse_args": 100}


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = os.path.join(work, "prog.db")
    subprocess.run([launcher, "-o", cap, "--", prog], check=True)

    def run(*args):
        return subprocess.run([memreport] + list(args), check=True, capture_output=True,
                              text=True).stdout

    for flags in ([], ["--stacks"]):
        stats = json.loads(run("stats", cap, "--json", "--top", "50", *flags))
        rows = {r["site"]: r for r in stats["by_bytes"]}
        got = {site: rows[site]["bytes_allocated"] for site in TRUTH if site in rows}
        check(got == TRUTH, "stats %s: a row per caller with its bytes: %r"
              % (" ".join(flags), got))
        check("xmalloc" not in rows, "stats %s: no row is named xmalloc: %r"
              % (" ".join(flags), sorted(rows)))
        check(all(rows[s]["stacks"] == 1 for s in got), "one stack per row")
        if "load_table" in rows:
            fns = [f["function"] for f in rows["load_table"]["stack"]]
            check(fns[:2] == ["xmalloc", "load_table"],
                  "the row keeps its full stack, xmalloc first: %r" % fns)
    text = run("stats", cap)
    check("  29.30 KiB  build_index (" in text, "text names the caller:\n" + text)

    data = os.path.join(work, "sites.json")
    png = os.path.join(work, "sites.png")
    run("plot", cap, "-o", png, "--sites", "10", "--data", data)
    with open(data) as f:
        plot = json.load(f)
    peaks = {s["name"]: s["peak_bytes"] for s in plot["sites"]}
    check({s: peaks.get(s) for s in TRUTH} == TRUTH and "xmalloc" not in peaks,
          "plot --sites: a row per caller with its bytes: %r" % peaks)
    # Three plot areas (memory, bytes by site, share by site), each with its legend's
    # swatches above it (the sites' rows: one per site) and no legend text inside it.
    frames = plot_layout(png)
    check(frames is not None and len(frames) == 3 and
          all(f[4] == 0 for f in frames) and frames[0][5] >= 2 and
          all(f[5] >= len(TRUTH) for f in frames[1:]),
          "plot --sites: each legend above its plot area, none on the data "
          "(left, top, right, bottom, dark pixels inside, colours above): %r" % frames)

    jpg = os.path.join(work, "sites.jpg")
    r = subprocess.run([memreport, "plot", cap, "-o", jpg, "--sites", "3"], capture_output=True,
                       text=True)
    check(r.returncode == 1 and r.stderr.startswith("memreport: %s: " % jpg) and
          r.stderr.count("\n") == 1 and not os.path.exists(jpg),
          "plot -o x.jpg: refused in one line naming it, nothing written (%d %r)" %
          (r.returncode, r.stderr))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
