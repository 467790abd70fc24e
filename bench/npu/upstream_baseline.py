#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# BENCHMARK BASELINE, NOT UPSTREAM'S CODE. Upstream's plot_memory_usage.py is not available
# here, so this is a reimplementation written only from docs/npu-memory-usage-log.md
# (§2 parsing with Python's re in text mode, §2.5 series including upstream's list-scan
# fragmentation filter, §2.7 matplotlib figure: 40x6 in at 100 dpi, same draw calls and
# styles), run with Debian's python3-matplotlib (the doc's anchor setup: Python 3.11,
# matplotlib 3.6.3, Agg). It stands in for upstream when timing memreport (bench/npu/run.sh);
# the doc's own measurement of upstream on the 1M-step log is 33.7-39.5 s.
# Usage: upstream_baseline.py INPUT_LOG OUTPUT_PNG
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "npu"))
import oracle_series  # noqa: E402  (the §2 parser, Python re semantics)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 3:
        print(f"Usage: {sys.argv[0]} INPUT_LOG OUTPUT_PNG")
        return 1
    t0 = time.time()
    funcs = oracle_series.parse(sys.argv[1])
    # §2.4/2.5 as upstream computes them: lists, and a list scan per fragmentation candidate.
    def key(name):
        return (1, 0) if name == "main" else (0, int(name[4:]))
    raw, frag, used, free, regions = [], [], [], [], []
    offset = 0
    for name in sorted(funcs, key=key):
        f = funcs[name]
        if not f["max"] and not f["free"]:
            continue
        regions.append((offset, name))
        raw += [(x + offset, v) for x, v in f["max"]]
        frag += [(x + offset, v) for x, v in f["frag"]]
        used += [(x + offset, v) for x, v in f["used"]]
        free += [(x + offset, v) for x, v in f["free"]]
        offset += f["step"]
    mx, inc, run = [], [], 0
    for x, v in raw:
        if v > run:
            inc.append((x, v))
            run = v
        mx.append((x, run))
    frag = [p for p in frag if p in inc]  # quadratic, as upstream (§4)
    peak = mx[-1][1]
    unit, scale = ("GB", 1 << 30) if peak >= 1 << 30 else ("MB", 1 << 20) if peak >= 1 << 20 else (
        "KB", 1 << 10) if peak >= 1 << 10 else ("B", 1)
    t1 = time.time()
    plt.figure(figsize=(40, 6))
    if inc:
        plt.plot([x for x, _ in inc], [v / scale for _, v in inc], "o", color="magenta",
                 markersize=5, zorder=2, label="Max Allocated Size\nIncreased")
    if frag:
        plt.plot([x for x, _ in frag], [v / scale for _, v in frag], "^", color="red",
                 markersize=5, zorder=3, label="Max Allocated Size\nIncreased Due To\nFragmentation")
    xs, ys = [x for x, _ in mx], [v / scale for _, v in mx]
    plt.plot(xs, ys, color="blue", zorder=1, label="Max Allocated Size")
    plt.annotate(f"{ys[-1]:.2f}", (xs[-1], ys[-1]), textcoords="offset points", xytext=(5, 5),
                 color="blue", fontsize=8)
    plt.plot([x for x, _ in used], [v / scale for _, v in used], color="red", zorder=0,
             label="Used Memory")
    plt.plot([x for x, _ in free], [v / scale for _, v in free], color="green", zorder=0,
             label="Free Memory")
    total = xs[-1] + 1
    y_max = max(ys)
    for i, (off, name) in enumerate(regions):
        span = (regions[i + 1][0] if i + 1 < len(regions) else total) - off
        plt.axvline(x=off, color="gray", linestyle=":", linewidth=0.5)
        if span >= 0.0025 * total:
            plt.text(off + 0.5, 0.98 * y_max, name, rotation=90, color="gray", fontsize=11,
                     va="top")
    plt.title("Memory Usage Over Time")
    plt.xlabel("Allocation Step [async op]")
    plt.ylabel(f"Memory Size [{unit}]")
    plt.xlim(left=0)
    plt.ylim(bottom=0)
    plt.xticks(rotation=45)
    plt.ticklabel_format(style="plain", axis="both", useOffset=False)
    plt.legend(loc="best")
    t2 = time.time()
    plt.savefig(sys.argv[2])
    t3 = time.time()
    print(f"baseline phases: parse+series {t1 - t0:.1f} s, plot calls {t2 - t1:.1f} s, "
          f"savefig {t3 - t2:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
