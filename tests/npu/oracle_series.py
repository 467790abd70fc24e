#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# An independent reimplementation of upstream plot_memory_usage.py's *series* (no drawing),
# written only from docs/npu-memory-usage-log.md §2 with Python's own `re` and text
# mode, i.e. the same regex and newline semantics as upstream. Not upstream's code. Tests
# diff memreport's `plot --data` JSON against it; bench/npu uses it as the timing baseline.
# Usage: oracle_series.py LOG [OUT.json]   (exit 1 like upstream when the max series is empty)
import json
import re
import sys

KEY = re.compile(r"\b(part\d+|main):")
R_MAX = re.compile(r"Max allocated size (\d+)")
R_FRAG = re.compile(r"Increased allocation size to (\d+) B due to fragmentation!")
R_USED = re.compile(r"DDR used memory\s+(\d+)")
R_FREE = re.compile(r"DDR free memory\s+(\d+)")


def parse(path):
    funcs = {}  # insertion order = first seen
    gate = False
    with open(path, encoding="utf-8") as fp:  # universal newlines, like upstream
        for line in fp:
            if not gate:
                if "Start Pass StaticAllocation" not in line:
                    continue
                gate = True
            m = KEY.search(line)
            if not m:
                continue
            f = funcs.setdefault(m.group(1), {"max": [], "frag": [], "used": [], "free": [], "step": 0})
            r = R_MAX.search(line)
            if r:
                f["max"].append((f["step"], int(r.group(1))))
                continue
            r = R_FRAG.search(line)
            if r:
                f["frag"].append((f["step"], int(r.group(1))))
                continue
            r = R_USED.search(line)
            if r:
                f["used"].append((f["step"], int(r.group(1))))
                continue
            r = R_FREE.search(line)
            if r:
                f["free"].append((f["step"], int(r.group(1))))
                f["step"] += 1
    return funcs


def series(funcs):
    def key(name):
        return (1, 0) if name == "main" else (0, int(name[4:]))

    order = sorted(funcs, key=key)  # stable: equal keys keep first-seen order
    raw, frag, used, free, regions = [], [], [], [], []
    offset = 0
    for name in order:
        f = funcs[name]
        if not f["max"] and not f["free"]:
            continue
        regions.append((name, offset))
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
    incset = set(inc)  # upstream scans a list (quadratic); the result is the same
    frag = [p for p in frag if p in incset]
    peak = mx[-1][1]  # IndexError when empty, as upstream
    unit, scale = ("GB", 1 << 30) if peak >= 1 << 30 else ("MB", 1 << 20) if peak >= 1 << 20 else (
        "KB", 1 << 10) if peak >= 1 << 10 else ("B", 1)
    total = mx[-1][0] + 1
    regs = []
    for i, (name, start) in enumerate(regions):
        end = regions[i + 1][1] if i + 1 < len(regions) else total
        regs.append({"name": name, "start": start, "label_drawn": (end - start) >= 0.0025 * total})
    return {
        "unit": unit, "scale": scale, "total_steps": total, "regions": regs,
        "series": {
            "max_allocated": [list(p) for p in mx],
            "max_increased": [list(p) for p in inc],
            "max_increased_fragmentation": [list(p) for p in frag],
            "used": [list(p) for p in used],
            "free": [list(p) for p in free],
        },
    }


def main():
    if len(sys.argv) < 2:
        print("Usage: oracle_series.py INPUT_LOG [OUT.json]", file=sys.stderr)
        return 1
    try:
        data = series(parse(sys.argv[1]))
    except IndexError:
        print("oracle: max series empty", file=sys.stderr)
        return 1
    out = open(sys.argv[2], "w") if len(sys.argv) > 2 else sys.stdout
    json.dump(data, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
