#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# One question, one number: every view that answers "what did each function allocate" gives
# the same figure. A traced program whose functions allocate known bytes (agree_prog.c) is
# read by top, stats, the flame graph page (its inverted graph and Functions tab are built
# from the page's frames), the folded export, diff and summary, each checked against the
# program's truth; then a python3 run, whose hundreds of functions leave thousands of frames
# narrower than the page's width limit, must give each function the same self in top, the
# page and the folded export.
# Usage: views_agree_test.py MEMREPORT MEMTRACE_LAUNCHER AGREE_PROG WORKDIR
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, finish, page_data, runner  # noqa: E402

# agree_prog.c's functions and what they hold at the peak (self, total), what they allocate
# over the run (self bytes, allocations) and what they leak.
PEAK = 777 + 400000 + 130000 + 151 * 24
LIVE = {"big_table": (400000, 400000), "xalloc": (130000, 130000), "small_leaf": (3624, 3624),
        "leaky": (777, 777), "main": (0, PEAK), "load_users": (0, 90000),
        "load_groups": (0, 40000), "deep": (0, 3624)}
ALLOCATED = {"big_table": (400000, 1), "scratch": (250000, 1), "xalloc": (130000, 5),
             "small_leaf": (3624, 151), "leaky": (777, 1)}
# stats' sites: xalloc, a wrapper, is counted in its callers' rows.
SITES_PEAK = {"big_table": 400000, "load_users": 90000, "load_groups": 40000,
              "small_leaf": 3624, "leaky": 777}


def page_functions(d):
    """name -> [self, total] as the page's Functions tab and inverted graph count them: self
    summed over a function's frames, total over its outermost frames only; a non-relevant
    frame hidden, its bytes its nearest shown caller's (the page's default)."""
    names, nodes = d["strings"], d["nodes"]
    shown = list(range(len(nodes)))  # the node each node's bytes are drawn in
    incl = [0] * len(nodes)
    for i in range(1, len(nodes)):  # a parent comes before its children
        if not nodes[i][4]:
            shown[i] = shown[nodes[i][0]]
        incl[shown[i]] += nodes[i][5]
    self_ = list(incl)
    kids = [[] for _ in nodes]
    for i in range(len(nodes) - 1, 0, -1):
        if shown[i] == i:
            kids[shown[nodes[i][0]]].append(i)
            incl[shown[nodes[i][0]]] += incl[i]
    out, on_path, stack = {}, {}, [(0, False)]
    while stack:
        i, leaving = stack.pop()
        name = names[nodes[i][1]]
        if leaving:
            on_path[name] -= 1
            continue
        if i:
            f = out.setdefault(name, [0, 0])
            f[0] += self_[i]
            if not on_path.get(name):
                f[1] += incl[i]
            on_path[name] = on_path.get(name, 0) + 1
            stack.append((i, True))
        stack.extend((k, False) for k in reversed(kids[i]))
    return out


def folded_self(text):
    out = {}
    for line in text.splitlines():
        stack, n = line.rsplit(" ", 1)
        leaf = stack.split(";")[-1]
        out[leaf] = out.get(leaf, 0) + int(n)
    return out


def top_table(run, cap, *args):
    """name -> [self, total] of top --json, rows of one name (two files) summed."""
    out = {}
    for f in json.loads(run("top", cap, "--json", "--top", "0", *args))["functions"]:
        row = out.setdefault(f["function"], [0, 0])
        row[0] += f["self"]
        row[1] += f["total"]
    return out


def known_program(run, launcher, prog, work):
    cap = os.path.join(work, "agree.db")
    subprocess.run([launcher, "-o", cap, "--", prog], check=True, capture_output=True)
    page = os.path.join(work, "agree.html")
    run("flamegraph", cap, "-o", page)
    d = page_data(page)
    seen = {
        "summary": json.loads(run("summary", cap, "--json"))["peak_bytes"],
        "top": json.loads(run("top", cap, "--json"))["total"],
        "stats": json.loads(run("stats", cap, "--json"))["peak_bytes"],
        "flamegraph": d["total_bytes"],
        "diff": json.loads(run("diff", cap, cap, "--json"))["totals"]["peak_bytes"]["new"],
        "folded": sum(folded_self(run("export", cap, "--format", "folded", "-o", "-")).values()),
    }
    check(all(v == PEAK for v in seen.values()), f"the peak is {PEAK} B in every view: {seen}")

    # Live at the peak, per function: self and total.
    top = top_table(run, cap)
    fns = page_functions(d)
    check(d["merged_frames"] > 0, f"the page merged narrow frames ({d['merged_frames']})")
    folded = folded_self(run("export", cap, "--format", "folded", "-o", "-"))
    diff = {f["function"]: f["peak_bytes"]["new"]
            for f in json.loads(run("diff", cap, cap, "--json"))["functions"]}
    for fn, (self_, total) in LIVE.items():
        got = {"top": top.get(fn), "page": fns.get(fn), "folded": folded.get(fn, 0),
               "diff": diff.get(fn, 0)}
        check(got["top"] == [self_, total] and got["page"] == [self_, total] and
              got["folded"] == self_ and got["diff"] == self_,
              f"{fn}: live at the peak, self {self_} and total {total} everywhere: {got}")

    # Allocated over the run and allocations, per function (self).
    top_b = top_table(run, cap, "--metric", "allocated")
    top_n = top_table(run, cap, "--metric", "count")
    dj = {f["function"]: f for f in json.loads(run("diff", cap, cap, "--json"))["functions"]}
    for fn, (b, n) in ALLOCATED.items():
        got = (top_b.get(fn, [0])[0], top_n.get(fn, [0])[0],
               dj.get(fn, {}).get("allocated_bytes", {}).get("new"),
               dj.get(fn, {}).get("allocations", {}).get("new"))
        check(got == (b, n, b, n), f"{fn}: {b} B in {n} allocations in top and diff: {got}")

    # stats' sites: its header says what a site is and names the wrapper it passed.
    st = json.loads(run("stats", cap, "--json", "--top", "0"))
    rows = {r["site"]: r for r in st["by_peak"]}
    got = {k: rows.get(k, {}).get("peak_bytes") for k in SITES_PEAK}
    check(got == SITES_PEAK, f"stats: sites at the peak {SITES_PEAK}: {got}")
    check(got["load_users"] == top["load_users"][1] and got["small_leaf"] == top["small_leaf"][0],
          "stats: a site above a wrapper gives top's total, one without gives top's self")
    alloc = {r["site"]: r["bytes_allocated"] for r in st["by_bytes"]}
    check(alloc.get("scratch") == 250000 == top_b["scratch"][0],
          f"stats and top: scratch allocated 250000 B ({alloc.get('scratch')})")
    check(st.get("wrappers") == ["xalloc"], f"stats --json names the wrapper: {st.get('wrappers')}")
    text = run("stats", cap)
    check("not an allocation wrapper" in text and "wrappers: xalloc" in text,
          "stats' header says what a site is and which wrapper it passed")
    check("by self: what each function allocated itself" in run("top", cap),
          "top's header says it ranks by self")

    # Leaks: the one leaked block in summary, top, leaks and diff.
    leaked = {"summary": json.loads(run("summary", cap, "--json"))["leaked_bytes"],
              "top": json.loads(run("top", cap, "--json", "--metric", "leaked"))["total"],
              "leaks": json.loads(run("leaks", cap, "--json"))["bytes"],
              "diff": json.loads(run("diff", cap, cap, "--json"))["totals"]["leaked_bytes"]["new"]}
    check(all(v == 777 for v in leaked.values()), f"777 B leaked in every view: {leaked}")


SCRIPT = """
d = {}
for i in range(20000):
    d["k%d" % i] = {"a": i, "b": str(i) * 3, "c": [i] * (i % 7)}
s = [str(x) for x in range(10000)]
"""


def python_run(run, launcher, work):
    cap = os.path.join(work, "py.db")
    script = os.path.join(work, "agree.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    subprocess.run([launcher, "-o", cap, "--", sys.executable, script], check=True,
                   capture_output=True)
    page = os.path.join(work, "py.html")
    run("flamegraph", cap, "-o", page)
    d = page_data(page)
    top = top_table(run, cap)
    fns = page_functions(d)
    folded = folded_self(run("export", cap, "--format", "folded", "-o", "-"))
    check(d["merged_frames"] > 0, f"python3: the page merged narrow frames ({d['merged_frames']})")
    wrong = {fn: (v[0], fns.get(fn, [0])[0], folded.get(fn, 0)) for fn, v in top.items()
             if not v[0] == fns.get(fn, [0])[0] == folded.get(fn, 0)}
    check(not wrong and len(top) > 50,
          f"python3: all {len(top)} functions' self equal in top, the page and folded; "
          f"differing (top, page, folded): {dict(list(wrong.items())[:5])}")


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: views_agree_test.py MEMREPORT MEMTRACE_LAUNCHER AGREE_PROG WORKDIR")
    memreport, launcher, prog, work = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run = runner(memreport)
    known_program(run, launcher, prog, work)
    python_run(run, launcher, work)
    finish()


if __name__ == "__main__":
    main()
