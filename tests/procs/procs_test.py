#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Process trees against known truth: `memtrace -o DIR/` on a shell that runs three e2e
# programs (tests/e2e/progs: leaks, peak, realloc_chain; one in the background), once as a
# baseline (E2E_BASELINE=1: the same processes doing none of their work) and once for real.
# Checks: one capture per process, every one listed by the launcher, mode 0600 in a 0700
# directory; the tree (each program under the shell); `memreport summary DIR` per program
# equal to baseline + truth, and its total the sum of the processes, exceeding the
# baseline's by exactly the sum of the truths; the flame graph of DIR with each process a
# root frame holding exactly its peak (or with --leaks its leaked) bytes.
# The reports case: stacks, leaks and top of DIR, each process's numbers equal to its summary
# (checked against truth by the tree case) and to the known sites of e2e_leaks, the totals
# the sums over processes.
# Usage: procs_test.py tree|reports|plot MEMTRACE MEMREPORT LEAKS PEAK REALLOC_CHAIN WORKDIR
#        procs_test.py trust MEMTRACE LIB LEAKS WORKDIR
#        procs_test.py --list     (the cases, one a line)
#        procs_test.py diff MEMTRACE MEMREPORT DIFF_PROG WORKDIR
# The plot case: `memreport plot DIR -o x.png --data d.json`: each process's series peaks at
# its summary's peak exactly, times monotonic on the common axis (offsets from the captures'
# start times), the PNG of the plot's size and not blank, its legend above the plot area
# (read back from the PNG), an SVG too; --sites and -o x.jpg refused.
# The diff case: `memreport diff BASE_DIR NEW_DIR` of two shells running diff_prog
# (tests/diff/diff_prog.c, known differences between its runs 1 and 2): processes matched
# by program and order, their deltas exact, a process of one run only listed so, the
# totals the sums and --fail-if gating them.
# The trust case: DIR a symlink, DIR group-writable (launcher and tracer alike refuse, the
# program still runs), and a file or symlink already holding a capture's name in DIR (left
# as it was; the capture takes the next name).
import csv
import io
import json
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
import zlib

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures, plot_layout, png_rows  # noqa: E402

ADDITIVE = ["allocations", "frees", "bytes_allocated", "leaked_bytes", "leaked_allocations"]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMTRACE_") and k not in ("LD_PRELOAD", "E2E_BASELINE",
                                                          "TRUTH_FILE")}
    env.update(extra)
    return env


def run(argv, env=None):
    return subprocess.run(argv, capture_output=True, text=True, env=env or clean_env(),
                          timeout=120)


def page_data(path):
    with open(path) as f:
        html = f.read()
    m = re.search(r'id="fg-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1)) if m else None


def root_frames(data):
    """{label: inclusive bytes} of the frames directly under "all"."""
    nodes, strings = data["nodes"], data["strings"]
    incl = [n[5] for n in nodes]
    for i in range(len(nodes) - 1, 0, -1):
        incl[nodes[i][0]] += incl[i]
    return {strings[n[1]]: incl[i] for i, n in enumerate(nodes) if n[0] == 0}


def traced_tree(memtrace, memreport, progs, work, mode):
    """Runs the shell under memtrace -o DIR/; returns (summary JSON, DIR, truths by prog)."""
    d = os.path.join(work, mode)  # "base" and "real": the shell's text has one length
    caps = os.path.join(d, "caps")
    os.makedirs(d)
    a, b, c = progs
    truth = {p: os.path.join(d, f"{i}.json") for i, p in enumerate(progs)}
    script = f"{a}; {b} & {c}; wait"
    script = (f"TRUTH_FILE={truth[a]} {a}; TRUTH_FILE={truth[b]} {b} & "
              f"TRUTH_FILE={truth[c]} {c}; wait")
    env = clean_env(**({"E2E_BASELINE": "1"} if mode == "base" else {}))
    r = run([memtrace, "-o", caps + "/", "--", "sh", "-c", script], env)
    check(r.returncode == 0, f"{mode}: the shell ran: {r.returncode} {r.stderr[-300:]!r}")
    files = sorted(os.listdir(caps))
    listed = sorted(os.path.basename(line.rpartition(" to ")[2])
                    for line in r.stderr.splitlines() if "capture written to" in line)
    check(files == listed, f"{mode}: the launcher lists every capture: {listed} vs {files}")
    check(stat.S_IMODE(os.stat(caps).st_mode) == 0o700, f"{mode}: DIR created 0700")
    check(all(stat.S_IMODE(os.stat(os.path.join(caps, f)).st_mode) == 0o600 for f in files),
          f"{mode}: captures are 0600")
    s = run([memreport, "summary", caps, "--json"])
    check(s.returncode == 0, f"{mode}: summary DIR: {s.stderr.strip()!r}")
    summary = json.loads(s.stdout)
    check(sorted(p["capture"] for p in summary["processes"]) == files,
          f"{mode}: summary has one process per capture")
    truths = {}
    for p in progs:
        with open(truth[p]) as f:
            truths[p] = json.load(f)
    return summary, caps, truths


def case_tree(memtrace, memreport, leaks, peak, realloc_chain, work):
    progs = [leaks, peak, realloc_chain]
    base, _, _ = traced_tree(memtrace, memreport, progs, work, "base")
    real, caps, truths = traced_tree(memtrace, memreport, progs, work, "real")
    procs = real["processes"]
    by_name = {p["capture"]: p for p in procs}
    roots = [p for p in procs if p["parent"] is None]
    check(len(roots) == 1 and roots[0]["command"][:2] == ["sh", "-c"] and roots[0]["depth"] == 0,
          f"one root, the shell: {[r['command'] for r in roots]}")
    sh = roots[0]
    for p in procs:  # each after its parent, one deeper
        if p["parent"] is not None:
            parent = by_name[p["parent"]]
            check(procs.index(parent) < procs.index(p) and p["depth"] == parent["depth"] + 1,
                  f"{p['capture']}: placed under {p['parent']}")
    for prog in progs:
        rows = [p for p in procs if p["command"] == [prog]]
        base_rows = [p for p in base["processes"] if p["command"] == [prog]]
        if not check(len(rows) == 1 and len(base_rows) == 1,
                     f"{os.path.basename(prog)}: one capture ({len(rows)})"):
            continue
        row, b, t = rows[0], base_rows[0], truths[prog]
        name = os.path.basename(prog)
        check(row["capture"] == f"{row['pid']}.{name}.db", f"{name}: named {row['capture']}")
        check(row["ppid"] == sh["pid"], f"{name}: its ppid is the shell's ({row['ppid']})")
        # Under the shell, or under the shell's forked child that exec'd it (same pid).
        parent = by_name[row["parent"]]
        check(parent is sh or (parent["pid"] == row["pid"] and parent["parent"] == sh["capture"]),
              f"{name}: its parent is the shell ({row['parent']})")
        for k in ADDITIVE:
            check(row[k] == b[k] + t[k], f"{name}: {k} {row[k]} = baseline {b[k]} + truth {t[k]}")
        check(row["peak_bytes"] == t["peak_bytes"] + b["leaked_bytes"],
              f"{name}: peak {row['peak_bytes']} = truth {t['peak_bytes']} + baseline leaked "
              f"{b['leaked_bytes']}")
    total = real["total"]
    check(total["processes"] == len(procs), "total: the number of processes")
    # The shell's own blocks depend on when it reaps its background job: its processes
    # count as they are; each program is its baseline plus its truth.
    shells = [p for p in procs if p["command"][:1] == ["sh"]]
    check(len(shells) + len(progs) == len(procs), "every other process is the shell's")
    for k in ADDITIVE:
        check(total[k] == sum(p[k] for p in procs), f"total {k}: the sum over processes")
        want = sum(p[k] for p in shells) + sum(
            next(b[k] for b in base["processes"] if b["command"] == [p]) + truths[p][k]
            for p in progs)
        check(total[k] == want, f"total {k} {total[k]} = the shell's + each program's "
              f"baseline and truth ({want})")
    check(total["sum_of_peaks_bytes"] == sum(p["peak_bytes"] for p in procs),
          "total: the sum of the peaks")
    # Each process's share is its state at the peak, between two events of one time stamp
    # if the peak falls there (the tracer stamps whole microseconds): they sum to it.
    check(sum(p["at_joint_peak_bytes"] for p in procs) == total["peak_bytes"] and
          max(p["peak_bytes"] for p in procs) <= total["peak_bytes"] <=
          total["sum_of_peaks_bytes"],
          "total: the joint peak, what each process held then summed, between the "
          f"highest own peak and the sum of them: {[p['at_joint_peak_bytes'] for p in procs]}")
    text = run([memreport, "summary", caps])
    check(text.returncode == 0 and f"processes:    {len(procs)}" in text.stdout and
          all(f"    {p} [" in text.stdout for p in progs),
          f"summary DIR as text, each program indented under the shell: {text.stdout!r}")
    same = run([memreport, "summary", "--json"] +
               [os.path.join(caps, p["capture"]) for p in reversed(procs)])
    check(same.returncode == 0 and json.loads(same.stdout) == real,
          "the captures given one by one, in any order, make the same report")

    for flag, key in (("--peak", "at_joint_peak_bytes"), ("--leaks", "leaked_bytes")):
        page = os.path.join(work, f"fg{flag}.html")
        r = run([memreport, "flamegraph", caps, flag, "-o", page])
        data = page_data(page) if r.returncode == 0 else None
        if not check(data is not None, f"flamegraph DIR {flag}: {r.stderr.strip()!r}"):
            continue
        if flag == "--peak":  # the moment the processes together held the most
            check(data["subtitle"].startswith("Peak: ") and
                  data.get("time_ns") == total["peak_time_ns"],
                  f"the page names the joint peak's time: {data['subtitle']!r}")
        # A frame "COMMAND (pid N)", the command cut at about 200 bytes.
        got = []
        for label, incl in root_frames(data).items():
            m = re.fullmatch(r"(.+) \(pid (\d+)\)", label)
            got.append((int(m.group(2)), incl, m.group(1)) if m else (0, incl, label))
        want = [(p["pid"], p[key], " ".join(p["command"])) for p in procs if p[key]]
        ok = sorted(g[:2] for g in got if g[1]) == sorted(w[:2] for w in want)
        ok = ok and all(any(g[:2] == w[:2] and w[2].startswith(g[2]) for w in want)
                        for g in got if g[1])
        check(ok, f"flamegraph {flag}: each process a root with its {key}: "
              f"{sorted(got)} vs {sorted(want)}")
    r = run([memreport, "flamegraph", caps, "--at", "1ms", "-o", os.path.join(work, "x.html")])
    check(r.returncode == 1 and not os.path.exists(os.path.join(work, "x.html")),
          f"flamegraph DIR --at: a usage error ({r.returncode})")


def report_json(memreport, *args):
    r = run([memreport, *args, "--json"])
    check(r.returncode == 0, f"{' '.join(args[:1])} DIR: {r.stderr.strip()!r}")
    return json.loads(r.stdout) if r.returncode == 0 else None


def label_pid(label):
    m = re.fullmatch(r".+ \(pid (\d+)\)", label or "")
    return int(m.group(1)) if m else None


# The sites of e2e_leaks (tests/e2e/progs/leaks.c) and the bytes each leaks.
LEAK_SITES = {"leak_small": 50 * 10 * 100, "leak_mid": 5 * 10 * 100, "leak_big": 12345,
              "leak_grown": 5000}


def case_reports(memtrace, memreport, leaks, peak, realloc_chain, work):
    progs = [leaks, peak, realloc_chain]
    summary, caps, truths = traced_tree(memtrace, memreport, progs, work, "real")
    procs = summary["processes"]
    by_pid = {}
    for p in procs:  # a pid that exec'd has two captures: the later one is the program
        by_pid.setdefault(p["pid"], []).append(p)
    leaks_row = next(p for p in procs if p["command"] == [leaks])

    # stacks: the outermost frame of every stack is its process; the numbers add up.
    st = report_json(memreport, "stacks", caps, "--top", "0")
    if st:
        check([p["capture"] for p in st["processes"]] == [p["capture"] for p in procs],
              "stacks: the processes in tree order")
        for p, s in zip(procs, st["processes"]):
            check((s["bytes_allocated"], s["allocations"], s["peak_bytes"]) ==
                  (p["bytes_allocated"], p["allocations"], p["peak_bytes"]),
                  f"stacks: {p['capture']} totals = its summary")
        check(st["bytes_allocated"] == sum(p["bytes_allocated"] for p in procs) and
              st["allocations"] == sum(p["allocations"] for p in procs) and
              st["peak_bytes"] == summary["total"]["sum_of_peaks_bytes"],
              "stacks: the totals are the sums over processes")
        outer = [s["frames"][-1] for s in st["stacks"]]
        check(all(f.get("process") and label_pid(f["function"]) in by_pid for f in outer),
              "stacks: every stack's outermost frame is a process 'COMMAND (pid N)'")
        check(len(st["stacks"]) == st["stacks_total"], "stacks --top 0: every stack listed")
        per = {}
        for s in st["stacks"]:
            pid = label_pid(s["frames"][-1]["function"])
            per[pid] = per.get(pid, 0) + s["bytes"]
        check(all(per.get(pid, 0) == sum(p["bytes_allocated"] for p in rows)
                  for pid, rows in by_pid.items()),
              f"stacks: each process's stacks add up to its bytes allocated: {per}")
        text = run([memreport, "stacks", caps, "--top", "3"])
        check(text.returncode == 0 and f"(pid {leaks_row['pid']})" in text.stdout and
              "(top 3 of" in text.stdout, "stacks DIR as text names the processes")

    # leaks: per process its summary's leaked bytes; e2e_leaks's sites under its process.
    lk = report_json(memreport, "leaks", caps)
    if lk:
        for p, s in zip(procs, lk["processes"]):
            check(s["capture"] == p["capture"] and
                  s["bytes"] + s["runtime_held_bytes"] == p["leaked_bytes"],
                  f"leaks: {p['capture']} program + runtime = its leaked bytes "
                  f"{p['leaked_bytes']}")
        check(lk["bytes"] + lk["runtime_held"]["bytes"] == summary["total"]["leaked_bytes"],
              "leaks: the totals are the sums over processes")
        label = f"(pid {leaks_row['pid']})"
        for site, want in LEAK_SITES.items():
            got = sum(g["bytes"] for g in lk["groups"]
                      if g["stack"][-1]["function"].endswith(label) and
                      any(f["function"] == site for f in g["stack"]))
            check(got == want, f"leaks: {site} leaks {got} = {want} under e2e_leaks's process")

    # top: functions summed over processes; --by-process splits them again. Live bytes are
    # those of the moment the processes together held the most (summary's processes then).
    summary["total"]["at_joint_peak_bytes"] = sum(p["at_joint_peak_bytes"] for p in procs)
    check(summary["total"]["at_joint_peak_bytes"] == summary["total"]["peak_bytes"],
          "summary: the processes' shares sum to their joint peak")
    for metric, key, total in (("live", "at_joint_peak_bytes", "at_joint_peak_bytes"),
                               ("leaked", "leaked_bytes", "leaked_bytes"),
                               ("allocated", "bytes_allocated", "bytes_allocated")):
        summed = report_json(memreport, "top", caps, "--top", "0", "--metric", metric)
        split = report_json(memreport, "top", caps, "--top", "0", "--metric", metric,
                            "--by-process")
        if not summed or not split:
            continue
        want = summary["total"][total]
        check(summed["total"] == want and sum(f["self"] for f in summed["functions"]) == want,
              f"top {metric}: total and the selves = {want}")
        keys = [(f["function"], f["file"]) for f in summed["functions"]]
        check(len(keys) == len(set(keys)), f"top {metric}: one row per function")
        sums = {}
        for f in split["functions"]:
            k = (f["function"], f["file"])
            sums[k] = sums.get(k, 0) + f["self"]
        check(all(sums.get((f["function"], f["file"])) == f["self"]
                  for f in summed["functions"]) and len(sums) == len(keys),
              f"top {metric}: each function the sum of its rows per process")
        per = {}
        for f in split["functions"]:
            per[label_pid(f["process"])] = per.get(label_pid(f["process"]), 0) + f["self"]
        check(all(per.get(pid, 0) == sum(p[key] for p in rows) for pid, rows in by_pid.items()),
              f"top {metric} --by-process: each process's selves = its {key}")
    r = run([memreport, "top", caps, "--callers", "main"])
    check(r.returncode == 1 and "several captures" in r.stderr,
          f"top DIR --callers: a usage error ({r.returncode})")
    r = run([memreport, "top", os.path.join(caps, leaks_row["capture"]), "--by-process"])
    check(r.returncode == 1, f"top CAPTURE --by-process: a usage error ({r.returncode})")


def case_plot(memtrace, memreport, leaks, peak, realloc_chain, work):
    progs = [leaks, peak, realloc_chain]
    summary, caps, _ = traced_tree(memtrace, memreport, progs, work, "real")
    procs = summary["processes"]
    png, svg, data = (os.path.join(work, n) for n in ("x.png", "x.svg", "d.json"))
    r = run([memreport, "plot", caps, "-o", png, "--data", data])
    if not check(r.returncode == 0, f"plot DIR: {r.returncode} {r.stderr.strip()!r}"):
        return
    with open(data) as f:
        d = json.load(f)
    got = d["processes"]
    check([p["capture"] for p in got] == [p["capture"] for p in procs],
          "plot --data: one series per process, in tree order")
    for p, s in zip(procs, got):
        top = max((y for _, y in s["heap"]), default=0)
        check(top == p["peak_bytes"] and s["peak"]["bytes"] == p["peak_bytes"],
              f"plot --data: {p['capture']} peaks at {top} = its summary's {p['peak_bytes']}")
        ts = [t for t, _ in s["heap"]]
        # Never back; two points of one bucket may share a time (whole microseconds).
        check(all(a <= b for a, b in zip(ts, ts[1:])) and
              all(s["offset_ns"] <= t <= s["end_ns"] <= d["duration_ns"] for t in ts),
              f"plot --data: {p['capture']} times never go back within its span on the common axis")
        check(s["offset_ns"] >= 0 and s["peak"]["ts"] in ts,
              f"plot --data: {p['capture']} its peak is one of its points")
    # The shell starts first and its programs later: their offsets are the captures' starts.
    check(min(s["offset_ns"] for s in got) == 0 and
          max(s["offset_ns"] for s in got) > 0, "plot --data: processes placed by start time")
    total = [t for t, _ in d["total"]]
    check(all(a < b for a, b in zip(total, total[1:])) and
          d["total_peak"]["bytes"] == max(y for _, y in d["total"]) and
          d["total_peak"]["bytes"] >= max(p["peak_bytes"] for p in procs),
          "plot --data: the total's times increase and its peak is its highest point")
    img = png_rows(png)
    if check(img is not None, "plot DIR: a valid PNG"):
        w, h, rows = img
        check((w, h) == (1600, 600), f"plot DIR: the PNG is 1600x600 ({w}x{h})")
        check(rows is not None and len(set(rows)) > 10, "plot DIR: the PNG is not blank")
        frames = plot_layout(png)
        check(frames is not None and len(frames) == 1 and frames[0][4] == 0 and
              frames[0][5] >= len(procs) + 1,
              "plot DIR: the legend (a swatch per process, the peak's) above the plot area, "
              "none of it on the bands (left, top, right, bottom, dark pixels inside, colours "
              "above): %r" % frames)
    jpg = os.path.join(work, "x.jpg")
    r = run([memreport, "plot", caps, "-o", jpg])
    check(r.returncode == 1 and r.stderr.startswith(f"memreport: {jpg}: ") and
          not os.path.exists(jpg), f"plot DIR -o x.jpg: refused ({r.returncode} {r.stderr!r})")
    r = run([memreport, "plot", caps, "-o", svg])
    with open(svg) if r.returncode == 0 else open(os.devnull) as f:
        text = f.read()
    check(r.returncode == 0 and "<svg" in text and 'width="1600' in text,
          f"plot DIR -o x.svg: an SVG ({r.returncode} {r.stderr.strip()!r})")
    r = run([memreport, "plot", caps, "-o", os.path.join(work, "y.png"), "--sites", "3"])
    check(r.returncode == 1 and not os.path.exists(os.path.join(work, "y.png")),
          f"plot DIR --sites: a usage error ({r.returncode})")


# diff_prog 2 - diff_prog 1 (tests/diff/diff_prog.c): all its sites live at its peak.
DIFF_DELTA = {"peak_bytes": (1 << 20) + 4096 + 2000, "leaked_bytes": 4096,
              "allocations": 200, "allocated_bytes": (1 << 20) + 4096 + 2000 + 200 * 64}


def case_diff(memtrace, memreport, diff_prog, work):
    dirs = {}
    for side, runs in (("base", "1 1"), ("new", "2 1 2")):
        caps = os.path.join(work, side, "caps")
        os.makedirs(os.path.dirname(caps))
        script = "; ".join(f"{diff_prog} {n}" for n in runs.split()) + "; true"
        r = run([memtrace, "-o", caps + "/", "--", "sh", "-c", script])
        check(r.returncode == 0, f"{side}: the shell ran: {r.stderr[-300:]!r}")
        dirs[side] = caps
    r = run([memreport, "diff", dirs["base"], dirs["new"], "--json"])
    if not check(r.returncode == 0, f"diff DIR DIR: {r.returncode} {r.stderr.strip()!r}"):
        return
    d = json.loads(r.stdout)
    procs = {p["process"]: p for p in d["processes"]}
    first, second, third = (procs.get(f"diff_prog #{i}") for i in (1, 2, 3))
    if check(first and second and third, f"diff_prog #1..#3 listed: {sorted(procs)}"):
        check(all(first[m]["delta"] == v for m, v in DIFF_DELTA.items()),
              f"diff_prog #1 (run 1 then run 2): the known deltas {first}")
        check(second["status"] == "unchanged" and
              all(second[m]["delta"] == 0 for m in DIFF_DELTA),
              f"diff_prog #2 (run 1 both times): unchanged {second['status']}")
        check(third["status"] == "only_in_new" and third["peak_bytes"]["base"] == 0 and
              third["peak_bytes"]["new"] > DIFF_DELTA["peak_bytes"],
              f"diff_prog #3: only in new {third['status']}")
    for m in DIFF_DELTA:
        check(d["totals"][m]["delta"] == sum(p[m]["delta"] for p in d["processes"]) and
              d["totals"][m]["new"] == sum(p[m]["new"] for p in d["processes"]),
              f"totals {m}: the sums over processes")
    # Functions and stacks per process: grow_site of diff_prog #1 grew by exactly 1 MiB.
    grow = [f for f in d["functions"] if f["function"] == "grow_site"]
    by_proc = {f["process"]: f["peak_bytes"] for f in grow}
    check(by_proc.get("diff_prog #1", {}).get("delta") == 1 << 20 and
          by_proc.get("diff_prog #2", {}).get("delta") == 0 and
          by_proc.get("diff_prog #3", {}).get("base") == 0,
          f"grow_site per process: {by_proc}")
    check(all(s["stack"][0] in procs for s in d["stacks"]),
          "every stack's outermost frame is its process")
    text = run([memreport, "diff", dirs["base"], dirs["new"]])
    check(text.returncode == 0 and "processes, largest change first" in text.stdout and
          "diff_prog #3 [only in new]" in text.stdout and
          "grow_site (diff_prog.c) in diff_prog #1" in text.stdout,
          f"diff DIR DIR as text: {text.stdout[:1500]!r}")
    gone = run([memreport, "diff", dirs["new"], dirs["base"], "--csv"])
    check(gone.returncode == 0 and "PROCESS,diff_prog #3,cpu," in gone.stdout and
          ",N/A," in gone.stdout.split("PROCESS,diff_prog #3,cpu,")[1].splitlines()[0] + ",",
          "diff NEW BASE --csv: diff_prog #3 a PROCESS row, N/A in Compare")
    want_leak = d["totals"]["leaked_bytes"]["delta"]  # diff_prog #3's leak among them
    check(want_leak >= 2 * DIFF_DELTA["leaked_bytes"], f"total leaked delta {want_leak}")
    for limit, code in ((f"leaked_bytes>+{want_leak - 1}", 4), (f"leaked_bytes>+{want_leak}", 0),
                        ("allocations>+0", 4)):
        r = run([memreport, "diff", dirs["base"], dirs["new"], "--fail-if", limit, "-o",
                 os.devnull, "-f"])
        check(r.returncode == code, f"--fail-if {limit} on the totals: exit {r.returncode}")
    r = run([memreport, "diff", dirs["base"], dirs["new"], "--html", "-o",
             os.path.join(work, "x.html")])
    check(r.returncode == 1 and not os.path.exists(os.path.join(work, "x.html")),
          f"diff DIR DIR --html: a usage error ({r.returncode})")
    # The processes are read two at a time: a damaged capture (a chunk's bytes overwritten)
    # still gives one line naming it, the first damaged one in base then new order.
    damaged = {}
    for side in ("base", "new"):
        d2 = os.path.join(work, side + "-damaged")
        shutil.copytree(dirs[side], d2)
        name = sorted(os.listdir(d2))[-1]
        db = sqlite3.connect(os.path.join(d2, name))
        (cid, size), = db.execute("SELECT id, length(data) FROM event_chunk ORDER BY id LIMIT 1")
        db.execute("UPDATE event_chunk SET data = ? WHERE id = ?", (b"\x5a" * size, cid))
        db.execute("DROP TABLE IF EXISTS aggregate")  # else no event is read: see diff_test.py
        db.commit()
        db.close()
        damaged[side] = (d2, os.path.join(d2, name))
    for base, new, named in ((dirs["base"], damaged["new"][0], damaged["new"][1]),
                             (damaged["base"][0], damaged["new"][0], damaged["base"][1])):
        r = run([memreport, "diff", base, new])
        lines = r.stderr.splitlines()
        check(r.returncode == 2 and r.stdout == "" and len(lines) == 1 and
              lines[0].startswith(f"memreport: {named}: "),
              f"diff DIR DIR, a damaged capture: one line naming {named}: {r.returncode} {lines}")


def case_trust(memtrace, lib, leaks, work):
    target = os.path.join(work, "target")
    os.makedirs(target, mode=0o700)
    link = os.path.join(work, "link")
    os.symlink(target, link)
    gw = os.path.join(work, "gw")
    os.makedirs(gw)
    os.chmod(gw, 0o770)
    for d, why in ((link, "is a symlink"), (gw, "writable by group")):
        r = run([memtrace, "-o", d + "/", "--", leaks])
        check(r.returncode != 0 and why in r.stderr and "written to" not in r.stderr,
              f"launcher refuses {os.path.basename(d)}/: {r.stderr.strip()!r}")
        # The tracer itself, without the launcher: the program runs, untraced.
        r = run([leaks], clean_env(LD_PRELOAD=lib, MEMTRACE_OUTPUT=d + "/"))
        check(r.returncode == 0 and "continues untraced" in r.stderr,
              f"tracer refuses {os.path.basename(d)}/ and the program runs: {r.stderr.strip()!r}")
        check(os.listdir(target) == [] and os.listdir(gw) == [],
              f"nothing written through {os.path.basename(d)}/")
    # Names a capture would take, already there: a file and a symlink.
    caps = os.path.join(work, "caps")
    victim = os.path.join(work, "victim")
    with open(victim, "w") as f:
        f.write("victim\n")
    name = os.path.basename(leaks)
    script = (f"printf keep > {caps}/$$.{name}.db; ln -s {victim} {caps}/$$.{name}.2.db; "
              f"exec {leaks}")
    os.makedirs(caps, mode=0o700)
    r = run([memtrace, "-o", caps + "/", "--", "sh", "-c", script])
    check(r.returncode == 0, f"the planted run: {r.returncode} {r.stderr.strip()!r}")
    files = sorted(f for f in os.listdir(caps) if ".ln." not in f)  # ln has its own
    pid = files[0].split(".")[0] if files else "?"
    planted = os.path.join(caps, f"{pid}.{name}.db")
    check(files == [f"{pid}.{name}.2.db", f"{pid}.{name}.3.db", f"{pid}.{name}.db",
                    f"{pid}.sh.db"], f"the capture took the next free name: {files}")
    check(stat.S_ISREG(os.lstat(os.path.join(caps, f"{pid}.{name}.3.db")).st_mode),
          "and is a file of its own")
    with open(planted) as f:
        check(f.read() == "keep", "the planted file is left as it was")
    with open(victim) as f:
        check(f.read() == "victim\n", "the symlink's target is left as it was")
    check(os.path.islink(os.path.join(caps, f"{pid}.{name}.2.db")), "the symlink stays a symlink")
    check(f"capture written to {caps}/{pid}.{name}.3.db" in r.stderr or
          f"{pid}.{name}.3.db" in r.stderr, "the launcher names the capture it took")


def folded_by_root(text):
    """Bytes per root frame (the process) of folded lines, and the lines' stacks."""
    roots, stacks = {}, []
    for line in text.splitlines():
        stack, _, value = line.rpartition(" ")
        frames = stack.split(";")
        roots[frames[0]] = roots.get(frames[0], 0) + int(value)
        stacks.append((frames, int(value)))
    return roots, stacks


def case_views(memtrace, memreport, leaks, peak, realloc_chain, work):
    """stats, export, flow and sql of a directory: each process's numbers its summary's."""
    progs = [leaks, peak, realloc_chain]
    summary, caps, _ = traced_tree(memtrace, memreport, progs, work, "real")
    procs = summary["processes"]
    leaks_row = next(p for p in procs if p["command"] == [leaks])

    def want(key):  # per process (pid, program): its summary's number, zeros left out
        out = {}
        for p in procs:
            k = (p["pid"], p["command"][0])
            out[k] = out.get(k, 0) + p[key]
        return {k: v for k, v in out.items() if v}

    def by_process(values):  # "COMMAND ARGS (pid N)" -> (N, COMMAND)
        return {(label_pid(lb), lb.split(" ")[0]): v for lb, v in values.items()}

    # stats: the sites of every process, each under its process; sizes, threads and totals
    # add up to each process's summary.
    st = report_json(memreport, "stats", caps, "--top", "0")
    if st:
        tot = summary["total"]
        check((st["allocations"], st["bytes_allocated"], st["frees"],
               st.get("sum_of_peaks_bytes")) ==
              (tot["allocations"], tot["bytes_allocated"], tot["frees"],
               tot["sum_of_peaks_bytes"]), "stats: the totals are the sums over processes")
        check((st["peak_bytes"], st.get("peak_time_ns")) ==
              (tot["peak_bytes"], tot["peak_time_ns"]), "stats: the peak is summary's")
        check(sum(h["count"] for h in st["sizes"]) == tot["allocations"] and
              sum(h["bytes"] for h in st["sizes"]) == tot["bytes_allocated"],
              "stats: the sizes add up to every process's allocations")
        check([p["capture"] for p in st["processes"]] == [p["capture"] for p in procs],
              "stats: the processes in tree order")

        def per_process(rows, field):
            out = {}
            for r in rows:
                k = (label_pid(r["process"]), r["process"].split(" ")[0])
                out[k] = out.get(k, 0) + r[field]
            return {k: v for k, v in out.items() if v}
        for table, field, key in (("by_peak", "peak_bytes", "peak_bytes"),
                                  ("by_bytes", "bytes_allocated", "bytes_allocated"),
                                  ("by_count", "allocations", "allocations")):
            got = per_process(st[table], field)
            check(got == want(key), f"stats {table}: per process {got} = summary {want(key)}")
        check(all(r["stack"][-1].get("process") and
                  r["stack"][-1]["function"] == r["process"] for r in st["by_bytes"]),
              "stats: every site's outermost frame is its process")
        for field, key in (("allocations", "allocations"), ("frees", "frees"),
                           ("live_bytes", "leaked_bytes")):
            got = per_process(st["threads"], field)
            check(got == want(key), f"stats threads {field}: per process {got} = {want(key)}")
        text = run([memreport, "stats", caps])
        check(text.returncode == 0 and "held at one moment" in text.stdout and
              f"(pid {leaks_row['pid']})" in text.stdout, "stats DIR as text names the processes")

    # export folded: each process the root frame of its stacks, at the processes' joint
    # peak, its leaks, or what it allocated: the sums per process are its summary's numbers.
    r = run([memreport, "export", caps, "--format", "folded"])
    check(r.returncode == 0, f"export folded DIR: {r.stderr.strip()!r}")
    roots, _ = folded_by_root(r.stdout)
    check(roots and all(label_pid(lb) for lb in roots),
          f"export folded: every root a process: {list(roots)}")
    for metric, args, key in (("live", [], "at_joint_peak_bytes"),
                              ("leaks", ["--leaks"], "leaked_bytes"),
                              ("allocated", ["--metric", "allocated"], "bytes_allocated"),
                              ("count", ["--metric", "count"], "allocations")):
        r = run([memreport, "export", caps, "--format", "folded", *args])
        roots, stacks = folded_by_root(r.stdout)
        check(r.returncode == 0 and by_process(roots) == want(key),
              f"export folded {metric}: per process {by_process(roots)} = summary {want(key)}")
        if metric == "leaks":
            label = f"(pid {leaks_row['pid']})"
            for site, b in LEAK_SITES.items():
                got = sum(v for f, v in stacks if f[0].endswith(label) and site in f)
                check(got == b, f"export folded --leaks: {site} {got} = {b} under e2e_leaks")
    # speedscope: the same numbers, each process a frame at the root of its samples.
    r = run([memreport, "export", caps, "--format", "speedscope"])
    check(r.returncode == 0, f"export speedscope DIR: {r.stderr.strip()!r}")
    if r.returncode == 0:
        doc = json.loads(r.stdout)
        frames = doc["shared"]["frames"]
        for prof, key in zip(doc["profiles"],
                             ("at_joint_peak_bytes", "bytes_allocated", "allocations")):
            got = {}
            for sample, w in zip(prof["samples"], prof["weights"]):
                name = frames[sample[0]]["name"]
                got[name] = got.get(name, 0) + w
            check(by_process(got) == want(key),
                  f"export speedscope {prof['name']}: {by_process(got)} = {want(key)}")
        check(doc["profiles"][0]["name"].startswith("live bytes at the processes' joint peak"),
              f"speedscope: the live profile names the joint peak: {doc['profiles'][0]['name']}")
    # pprof, read by go tool pprof (golang-go, from scripts/install-deps.sh): each process a
    # root location whose cumulative bytes are its numbers.
    prof = os.path.join(work, "tree.pb.gz")
    r = run([memreport, "export", caps, "--format", "pprof", "-o", prof])
    check(r.returncode == 0, f"export pprof DIR: {r.stderr.strip()!r}")
    check(shutil.which("go") is not None, "go tool pprof is installed (scripts/install-deps.sh)")
    if r.returncode == 0 and shutil.which("go"):
        env = dict(os.environ, GOPROXY="off", GOTOOLCHAIN="local", GOFLAGS="",
                   PPROF_BINARY_PATH="/nonexistent")
        for name in ("HOME", "GOCACHE", "GOPATH", "PPROF_TMPDIR"):
            env[name] = os.path.join(work, "go", name.lower())
            os.makedirs(env[name], exist_ok=True)
        for index, key in (("inuse_space", "at_joint_peak_bytes"),
                           ("alloc_space", "bytes_allocated"),
                           ("alloc_objects", "allocations")):
            out = subprocess.run(["go", "tool", "pprof", "-top", "-cum", "-unit=B",
                                  "-nodefraction=0", "-nodecount=100000", "-sample_index=" + index,
                                  prof], env=env, capture_output=True, text=True, timeout=120)
            cum = {}
            for line in out.stdout.splitlines():
                m = re.match(r"^\s*\S+\s+\S+\s+\S+\s+(\d+)B?\s+\S+\s+(.+ \(pid \d+\))$", line)
                if m:
                    cum[m.group(2)] = int(m.group(1))
            check(out.returncode == 0 and by_process(cum) == want(key),
                  f"export pprof {index}: per process {by_process(cum)} = summary {want(key)}")
    # chrome: each process under its pid, on one time axis from the earliest start: its heap
    # track reaches its peak at its peak's time.
    r = run([memreport, "export", caps, "--format", "chrome"])
    check(r.returncode == 0, f"export chrome DIR: {r.stderr.strip()!r}")
    if r.returncode == 0:
        events = json.loads(r.stdout)["traceEvents"]
        starts = {}
        for p in procs:
            db = sqlite3.connect(f"file:{os.path.join(caps, p['capture'])}?mode=ro", uri=True)
            (starts[p["capture"]],), = db.execute(
                "SELECT value FROM meta WHERE key = 'start_realtime_ns'")
            db.close()
        origin = min(int(v) for v in starts.values())
        for p in procs:
            at = (int(starts[p["capture"]]) - origin + p["peak_time_ns"]) / 1000
            hits = [e for e in events if e["ph"] == "C" and e["name"] == "heap" and
                    e["pid"] == p["pid"] and e["args"]["bytes"] == p["peak_bytes"]]
            check(p["peak_bytes"] == 0 or any(abs(e["ts"] - at) < 0.0015 for e in hits),
                  f"export chrome: {p['capture']} peaks at {p['peak_bytes']} at {at} us: "
                  f"{[(e['ts'], e['args']) for e in hits][:3]}")
            check(max((e["args"]["bytes"] for e in events if e["ph"] == "C" and
                       e["name"] == "heap" and e["pid"] == p["pid"]), default=0) ==
                  max(q["peak_bytes"] for q in procs if q["pid"] == p["pid"]),
                  f"export chrome: pid {p['pid']}'s heap track tops at its peak")
        # csv: each process's rows in turn under its pid, times on the same axis as chrome's.
        r = run([memreport, "export", caps, "--format", "csv"])
        check(r.returncode == 0, f"export csv DIR: {r.stderr.strip()!r}")
        rows = list(csv.DictReader(io.StringIO(r.stdout))) if r.returncode == 0 else []
        check([int(x["ID"]) for x in rows] == list(range(1, len(rows) + 1)),
              "export csv: one header, IDs 1..N over every process")
        for pid in {p["pid"] for p in procs}:
            mine = [x for x in rows if int(x["Process Id"]) == pid]
            same = [p for p in procs if p["pid"] == pid]
            got = (sum(x["Event"] == "MALLOC" for x in mine), sum(x["Event"] == "FREE" for x in mine))
            wanted = (sum(p["allocations"] for p in same), sum(p["frees"] for p in same))
            check(got == wanted, f"export csv: pid {pid}: {got} allocations and frees = {wanted}")
            lo = min(int(starts[p["capture"]]) for p in same) - origin
            hi = max(int(starts[p["capture"]]) - origin + p["duration_ns"] for p in same)
            check(all(lo <= int(x["Timestamp(ns)"]) <= hi for x in mine),
                  f"export csv: pid {pid}'s times within its span on the common axis")
    for args, says in ((["--format", "massif"], "not massif"),
                       (["--format", "folded", "--at", "1ms"], "not --at"),
                       (["--format", "folded", "--thread", "1"], "not --at")):
        r = run([memreport, "export", caps, *args])
        check(r.returncode == 1 and says in r.stderr and r.stdout == "",
              f"export DIR {args}: a usage error saying {says!r}: {r.returncode} {r.stderr!r}")
    # flow: each process a node at the root of its stacks holding its peak; a line of code
    # two processes run is one node; e2e_leaks's sites at e2e_leaks's peak under it.
    fl = report_json(memreport, "flow", caps, "--min-share", "0")
    if fl:
        check(fl["moments"][0]["total"] == summary["total"]["sum_of_peaks_bytes"],
              f"flow: the total is the sum of the peaks: {fl['moments'][0]}")
        heads = {}
        for n in fl["nodes"]:
            f = n["lines"][0]["function"]
            if label_pid(f) and n["lines"][0]["file"] is None:
                k = (label_pid(f), f.split(" ")[0])
                heads[k] = heads.get(k, 0) + n["cumulative"][0]
        check(heads == want("peak_bytes"),
              f"flow: each process's node holds its peak: {heads} = {want('peak_bytes')}")
        mallocs = [n for n in fl["nodes"] if any(ln["function"] == "T_malloc" for ln in n["lines"])]
        check(len(mallocs) == 1, f"flow: T_malloc, run by several processes, is one node")
    r = run([memreport, "flow", caps, "--at", "1ms"])
    check(r.returncode == 1 and "not --at" in r.stderr, f"flow DIR --at: a usage error: {r.stderr!r}")
    # sql reads one capture: a directory is refused, with its name.
    r = run([memreport, "sql", caps, "SELECT 1"])
    check(r.returncode == 1 and r.stderr.startswith(f"memreport: {caps}: a directory") and
          r.stdout == "", f"sql DIR: refused: {r.returncode} {r.stderr!r}")


def pb_fields(buf):
    """(field number, wire type, value) of one protobuf message: ints or bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            v, i = buf[i:i + n], i + n
        else:
            raise ValueError(f"wire type {wire}")
        yield field, wire, v


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if b < 0x80:
            return v, i


def pprof_totals(path):
    """{sample type: sum over the samples} of a gzipped profile.proto."""
    with open(path, "rb") as f:
        msg = zlib.decompress(f.read(), 16 + zlib.MAX_WBITS)
    types, samples, strings = [], [], []
    for field, wire, v in pb_fields(msg):
        if field == 1:
            types.append(next(x for f, _, x in pb_fields(v) if f == 1))
        elif field == 2:
            vals = []
            for f, w, x in pb_fields(v):
                if f == 2 and w == 2:
                    j = 0
                    while j < len(x):
                        n, j = varint(x, j)
                        vals.append(n)
                elif f == 2:
                    vals.append(x)
            samples.append(vals)
        elif field == 6:
            strings.append(v.decode())
    names = [strings[t] for t in types]
    return {n: sum(s[k] for s in samples) for k, n in enumerate(names)}


def case_joint(memtrace, memreport, prog, work):
    """A parent holding 1,000,000 B while its child holds 2,000,000 B, then 2,500,000 B alone
    (tests/procs/joint_peak.c): every report of the tree headlines 3,000,000, the most held at
    one moment (summary, the flame graph, pprof, top, stats), and names 4,500,000 as the sum
    of each process's own peak (summary, stats, diff)."""
    caps = os.path.join(work, "caps")
    r = run([memtrace, "-o", caps + "/", prog])
    check(r.returncode == 0, f"the program ran: {r.returncode} {r.stderr[-300:]!r}")
    s = report_json(memreport, "summary", caps)
    if not s:
        return
    total, procs = s["total"], s["processes"]
    check(len(procs) == 2 and [p["peak_bytes"] for p in procs] == [2500000, 2000000],
          f"each process's own peak: {[p['peak_bytes'] for p in procs]}")
    check(total["peak_bytes"] == 3000000 and total["sum_of_peaks_bytes"] == 4500000,
          f"summary: peak 3000000, sum of peaks 4500000 ({total.get('peak_bytes')}, "
          f"{total.get('sum_of_peaks_bytes')})")
    check([p["at_joint_peak_bytes"] for p in procs] == [1000000, 2000000],
          f"summary: each process then: {[p.get('at_joint_peak_bytes') for p in procs]}")
    text = run([memreport, "summary", caps]).stdout
    check(re.search(r"^peak: +2\.86 MiB at .*one moment", text, re.M) and
          re.search(r"^sum of peaks: +4\.29 MiB \(each process's own peak", text, re.M),
          f"summary text: the peak, and the sum named as one: {text!r}")
    page = os.path.join(work, "fg.html")
    r = run([memreport, "flamegraph", caps, "-o", page])
    data = page_data(page) if r.returncode == 0 else None
    if check(data is not None, f"flamegraph DIR: {r.stderr.strip()!r}"):
        roots = sorted(root_frames(data).values())
        check(roots == [1000000, 2000000] and data["subtitle"].startswith("Peak: 2.86 MiB") and
              data.get("time_ns") == total["peak_time_ns"],
              f"flamegraph: the processes at that moment ({roots}, {data['subtitle']!r})")
    prof = os.path.join(work, "tree.pb.gz")
    r = run([memreport, "export", caps, "--format", "pprof", "-o", prof])
    if check(r.returncode == 0, f"export pprof DIR: {r.stderr.strip()!r}"):
        t = pprof_totals(prof)
        check(t.get("inuse_space") == 3000000 and t.get("alloc_space") == 5500000,
              f"pprof: inuse_space 3000000, alloc_space 5500000 ({t})")
    top = report_json(memreport, "top", caps, "--top", "0", "--by-process")
    if top:
        per = {}
        for f in top["functions"]:
            per[label_pid(f["process"])] = per.get(label_pid(f["process"]), 0) + f["self"]
        check(top["total"] == 3000000 and top.get("moment_ts") == total["peak_time_ns"] and
              sorted(per.values()) == [1000000, 2000000],
              f"top: 3000000 at the joint peak, 1000000 and 2000000 by process "
              f"({top['total']}, {top.get('moment_ts')}, {per})")
    text = run([memreport, "top", caps]).stdout
    check(re.search(r"^\S+: bytes live when the 2 processes together held the most "
                    r"\([^)]+\): 3000000 B", text, re.M), f"top text: the joint peak: {text!r}")
    st = report_json(memreport, "stats", caps)
    if st:
        check((st["peak_bytes"], st.get("peak_time_ns"), st.get("sum_of_peaks_bytes")) ==
              (3000000, total["peak_time_ns"], 4500000),
              f"stats: peak 3000000 at summary's time, sum of peaks 4500000 "
              f"({st['peak_bytes']}, {st.get('peak_time_ns')}, {st.get('sum_of_peaks_bytes')})")
    text = run([memreport, "stats", caps]).stdout
    check(re.search(r"^peak: 2\.86 MiB at .*one moment", text, re.M) and
          re.search(r"^sum of peaks: 4\.29 MiB \(each process's own peak", text, re.M),
          f"stats text: the peak, and the sum named as one: {text!r}")
    text = run([memreport, "diff", caps, caps]).stdout
    check(re.search(r"^peak_bytes +4\.29 MiB", text, re.M) and
          "each process at its own peak, added" in text,
          f"diff DIR: its peak_bytes named a sum of peaks: {text[:600]!r}")


CASES = {"tree": case_tree, "reports": case_reports, "plot": case_plot, "diff": case_diff,
         "trust": case_trust, "views": case_views, "joint": case_joint}


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return
    case, args = sys.argv[1], sys.argv[2:]
    work = args[-1]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    CASES[case](*args)
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
