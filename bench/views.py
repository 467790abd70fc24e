#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# How long every memreport view takes on one large capture (issue 13 asks for each within
# 2 s on a 10M-event capture). Each view runs VIEWS_REPS times, the views interleaved (one
# round of all, then the next) so a busy neighbour spreads over all of them; prints per view
# the median wall, user and sys seconds, the spread of wall (min-max) and the median max RSS,
# as GNU time -v reports them. Asserts nothing.
# Usage: bench/views.py MEMREPORT CAPTURE [CAPTURE_B]   (CAPTURE_B: diff's new side, default
# CAPTURE itself; settings: VIEWS_REPS 3, VIEWS_ONLY a comma list of view names)
import os
import statistics
import subprocess
import sys
import tempfile


def views(cap, cap_b, out):
    o = lambda name: ["-f", "-o", os.path.join(out, name)]  # noqa: E731
    return [
        ("summary", ["summary", cap]),
        ("stats", ["stats", cap]),
        ("stats --json", ["stats", cap, "--json"]),
        ("stacks", ["stacks", cap]),
        ("leaks", ["leaks", cap]),
        ("top", ["top", cap]),
        ("flow", ["flow", cap] + o("flow.dot")),
        ("plot", ["plot", cap] + o("plot.png")),
        ("flamegraph", ["flamegraph", cap] + o("fg.html")),
        ("flamegraph --leaks", ["flamegraph", cap, "--leaks"] + o("fgl.html")),
        ("flamegraph --split-threads", ["flamegraph", cap, "--split-threads"] + o("fgs.html")),
        ("flamegraph --temporal", ["flamegraph", cap, "--temporal"] + o("fgt.html")),
        ("export folded", ["export", cap, "--format", "folded"] + o("x.folded")),
        ("export pprof", ["export", cap, "--format", "pprof"] + o("x.pb.gz")),
        ("export speedscope", ["export", cap, "--format", "speedscope"] + o("x.json")),
        ("export massif", ["export", cap, "--format", "massif"] + o("massif.out")),
        ("export csv", ["export", cap, "--format", "csv"] + o("x.csv")),
        ("sql count", ["sql", cap, "SELECT count(*) FROM events"]),
        ("sql sum", ["sql", cap, "SELECT sum(size) FROM events WHERE kind = 1"]),
        ("sql allocations", ["sql", cap, "SELECT count(*) FROM allocations WHERE freed_ts IS NULL"]),
        ("diff", ["diff", cap, cap_b]),
        ("diff --html", ["diff", cap, cap_b, "--html"] + o("diff.html")),
    ]


def parse_time(path):
    got = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().rpartition(": ")
            got[key] = value
    wall = got["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":")
    secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall)))
    return (secs, float(got["User time (seconds)"]), float(got["System time (seconds)"]),
            int(got["Maximum resident set size (kbytes)"]) / 1024)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: views.py MEMREPORT CAPTURE [CAPTURE_B]")
    memreport, cap = sys.argv[1], sys.argv[2]
    cap_b = sys.argv[3] if len(sys.argv) > 3 else cap
    reps = int(os.environ.get("VIEWS_REPS", "3"))
    only = [v for v in os.environ.get("VIEWS_ONLY", "").split(",") if v]
    with tempfile.TemporaryDirectory(prefix="memreport-views-") as out:
        todo = [v for v in views(cap, cap_b, out) if not only or v[0] in only]
        runs = {name: [] for name, _ in todo}
        timing = os.path.join(out, "time.txt")
        for rep in range(reps):
            for name, args in todo:
                p = subprocess.run(["/usr/bin/time", "-v", "-o", timing, memreport] + args,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                if p.returncode != 0:
                    sys.exit(f"{name} failed ({p.returncode}): {p.stderr[-400:]}")
                runs[name].append(parse_time(timing))
                print(f"rep {rep + 1}: {name}", file=sys.stderr)
    print(f"{'view':28} {'wall s':>7} {'(min-max)':>12} {'user s':>7} {'sys s':>6} {'RSS MB':>7}")
    for name, _ in todo:
        r = runs[name]
        med = [statistics.median(x[i] for x in r) for i in range(4)]
        spread = f"{min(x[0] for x in r):.2f}-{max(x[0] for x in r):.2f}"
        print(f"{name:28} {med[0]:7.2f} {spread:>12} {med[1]:7.2f} {med[2]:6.2f} {med[3]:7.0f}")


if __name__ == "__main__":
    main()
