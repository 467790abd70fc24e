#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Differential test: memreport's `plot --data` JSON must equal oracle_series.py (Python's
# own re and universal newlines, i.e. upstream's semantics) on every fixture and on random
# logs full of the traps of docs/npu-memory-usage-log.md §2: interleaving,
# part10/part2/part03, ignored names, non-ASCII before a key (Python's \w: superscript two
# is a word character, the Hebrew point sheva is not), CMX lines, duplicated/truncated
# steps, noise, CR/CRLF/LF.
# Usage: diff_oracle.py MEMREPORT FIXTURE_DIR WORKDIR [N_RANDOM]
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_series  # noqa: E402

NAMES = ["main", "part1", "part2", "part10", "part03", "part3", "part0", "init", "main_part7",
         "xmain", "\u00e9main", "\u2026main", "\u2192part2", "part", "Main", "part12x",
         "\u00b2main", "\u05b0part2", "\u05d0main", "\u0660main", "\u2160part1"]


def message(rng, name):
    n = rng.choice([0, 1, 7, 1023, 1024, 4096, 1 << 20, 3 << 20, 1 << 30, 5 << 30,
                    rng.randrange(1 << 40)])
    kind = rng.choice(["DDR", "DDR", "DDR", "CMX_NN"])
    sp = rng.choice([" ", "    ", "\t", " \t "])
    t = rng.randrange(14)
    if t == 0:
        return f"{name}: Buffer size to allocate      {n} B"
    if t == 1:
        return f"{name}: {kind} free memory before alloc {n} B"
    if t in (2, 3):
        return f"{name}: Max allocated size {n} B"
    if t == 4:
        return f"{name}: Increased allocation size to {n} B due to fragmentation!"
    if t in (5, 6):
        return f"{name}: {kind} used memory{sp}{n} 50.00%"
    if t in (7, 8, 9):
        return f"{name}: {kind} free memory{sp}{n} 50.00%"
    if t == 10:
        return f"{name}: Free buffer of size {n} B"
    noise = [f"Outlining summary {name}: 3 parts", f"{name}: Max allocated size {n}abc",
             f"{name}: Max allocated size -5 B", f"{name}: Max allocated size  {n} B",
             f"note: Max allocated size {n} B and {name}: x",
             f"{name}: Max allocated size {n} B Max allocated size 9 B",
             f"{name}:DDR used memory {n}", f"{name}: DDR free memory before alloc {n} B",
             f"{name}: Increased allocation size to {n} B due to fragmentation",
             f"{name} : Max allocated size {n} B", f"{name}: Increased allocation size due to fragmentation!"]
    return rng.choice(noise)


def random_log(rng, path):
    funcs = rng.sample(NAMES, rng.randrange(1, 6))
    lines = []
    for _ in range(rng.randrange(0, 4)):
        lines.append("[TRACE] [memory-usage-info]   " + message(rng, rng.choice(funcs)))
    gate = '[DEBUG] [vpux-compiler] Start Pass StaticAllocation on Operation loc(fused<{name = "main", type = "Func"}>["main"])'
    if rng.random() < 0.95:
        if rng.random() < 0.1:
            gate += " main: Max allocated size 5 B"
        lines.append(gate)
    for _ in range(rng.randrange(1, 120)):
        r = rng.random()
        if r < 0.03:
            lines.append('[DEBUG] [vpux-compiler] End Pass StaticAllocation on Operation loc(x)')
            continue
        ts = rng.choice(["", " 14:02:33.123", " undefined_time"])
        indent = " " * rng.choice([1, 3, 5, 9])
        lines.append(f"[TRACE]{ts} [memory-usage-info]{indent}" + message(rng, rng.choice(funcs)))
    with open(path, "w", encoding="utf-8", newline="") as fp:
        for ln in lines:
            fp.write(ln + rng.choice(["\n", "\n", "\n", "\r\n", "\r"]))


def oracle(path):
    try:
        return oracle_series.series(oracle_series.parse(path))
    except IndexError:
        return None


def memreport(exe, path, work):
    png, data = os.path.join(work, "d.svg"), os.path.join(work, "d.json")
    for p in (png, data):
        if os.path.exists(p):
            os.unlink(p)
    r = subprocess.run([exe, "plot", path, "-o", png, "--data", data],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        if os.path.exists(png) or os.path.exists(data):
            return "error exit left an output file"
        return ("exit", r.returncode)
    with open(data) as fp:
        return json.load(fp)


def main():
    exe, fixtures, work = sys.argv[1], sys.argv[2], sys.argv[3]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 150
    os.makedirs(work, exist_ok=True)
    failures = 0
    cases = [os.path.join(fixtures, f) for f in sorted(os.listdir(fixtures))
             if f.endswith(".log") and not f.startswith("legacy")]
    rng = random.Random(1234)
    for i in range(n):
        p = os.path.join(work, f"random{i}.log")
        random_log(rng, p)
        cases.append(p)
    compared = errors = 0
    for p in cases:
        want = oracle(p)
        got = memreport(exe, p, work)
        if want is None:
            ok = got == ("exit", 2)
            errors += 1
        else:
            ok = got == want
            compared += 1
        if not ok:
            failures += 1
            print(f"MISMATCH {p}\n  oracle:    {json.dumps(want)[:600]}\n  memreport: {json.dumps(got)[:600]}")
        elif not p.startswith(work):
            print(f"ok {os.path.basename(p)}")
    print(f"{len(cases)} logs: {compared} series compared, {errors} expected errors, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
