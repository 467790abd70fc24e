#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport diff against known truth: diff_prog.c traced as `diff_prog 1` (base) and
# `diff_prog 2` (new) differs in known sites (listed in diff_prog.c); the same program built
# from another directory with its code moved (diff_prog_elsewhere) must match it exactly;
# a capture compared with itself has no change; two imported NPU logs compare as their
# stacks reports say. Checks text, JSON, CSV (Python's csv module), -o, the --fail-if gate
# (exit 4, one line per broken limit) and usage errors.
# Usage: diff_test.py MEMTRACE MEMREPORT DIFF_PROG DIFF_PROG_ELSEWHERE NPU_FIXTURES WORKDIR
import csv
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402


def run(memreport, *args):
    return subprocess.run([memreport, *args], capture_output=True, text=True)


def report(memreport, *args):
    p = run(memreport, *args)
    if p.returncode != 0:
        sys.exit(f"memreport {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p.stdout


def trace(memtrace, out, *argv):
    subprocess.run([memtrace, "-f", "-o", out, "--", *argv], check=True, capture_output=True)
    return out


KIB, MIB = 1024, 1024 * 1024
# Per function (diff_prog.c): base and new of peak, allocated, allocations, leaked; None
# where the run does not have the function.
TRUTH = {
    "grow_site": ((MIB, MIB, 1, 0), (2 * MIB, 2 * MIB, 1, 0)),
    "leak_site": ((4 * KIB, 4 * KIB, 1, 4 * KIB), (8 * KIB, 8 * KIB, 1, 8 * KIB)),
    "same_site": ((1000, 1000, 1, 0), (1000, 1000, 1, 0)),
    "old_site": ((3000, 3000, 1, 0), None),
    "new_site": (None, (5000, 5000, 1, 0)),
    "churn_site": ((0, 100 * 64, 100, 0), (0, 300 * 64, 300, 0)),
}
METRICS = ("peak_bytes", "allocated_bytes", "allocations", "leaked_bytes")
STATUS = {"grow_site": "changed", "leak_site": "changed", "same_site": "unchanged",
          "old_site": "removed", "new_site": "added", "churn_site": "changed"}


def values(row):
    return tuple(row[m]["base"] for m in METRICS), tuple(row[m]["new"] for m in METRICS)


def check_json(rep, summary_base, summary_new):
    fns = {f["function"]: f for f in rep["functions"]}
    check(set(fns) == set(TRUTH), "functions: %s" % sorted(fns))
    for name, (base, new) in TRUTH.items():
        f = fns.get(name)
        if not f:
            continue
        check(f["file"] == "diff_prog.c", f"{name}: file diff_prog.c, got {f['file']}")
        check(f["status"] == STATUS[name], f"{name}: status {f['status']}")
        got = values(f)
        want = (base or (0, 0, 0, 0), new or (0, 0, 0, 0))
        check(got == want, f"{name}: base, new {got} == {want}")
        for i, m in enumerate(METRICS):
            check(f[m]["delta"] == want[1][i] - want[0][i], f"{name}: {m} delta {f[m]['delta']}")
    # The order: the largest change in bytes first (grow_site 1 MiB; churn_site 12800
    # allocated; new_site 5000; leak_site 4096; old_site 3000; same_site 0).
    order = [f["function"] for f in rep["functions"]]
    check(order == ["grow_site", "churn_site", "new_site", "leak_site", "old_site", "same_site"],
          "functions sorted by the largest change: %s" % order)
    # Stacks: main -> site, outermost first, with the same numbers.
    stacks = {tuple(s["stack"]): s for s in rep["stacks"]}
    for name, (base, new) in TRUTH.items():
        s = stacks.get(("main", name))
        check(s is not None, f"stack main > {name}")
        if s:
            check(values(s) == (base or (0, 0, 0, 0), new or (0, 0, 0, 0)),
                  f"stack main > {name}: {values(s)}")
    # Totals: each run's own summary, and the deltas of the known sites (anything else the
    # runs allocate is the same in both).
    t = rep["totals"]
    for run, summary in (("base", summary_base), ("new", summary_new)):
        check(t["peak_bytes"][run] == summary["peak_bytes"] and
              t["allocated_bytes"][run] == summary["bytes_allocated"] and
              t["allocations"][run] == summary["allocations"] and
              t["leaked_bytes"][run] == summary["leaked_bytes"],
              f"totals of {run} = its summary: {t}")
    want = {"peak_bytes": MIB + 4 * KIB + 5000 - 3000, "allocated_bytes": MIB + 4 * KIB + 2000
            + 200 * 64, "allocations": 200, "leaked_bytes": 4 * KIB}
    for m in METRICS:
        check(t[m]["delta"] == want[m], f"total {m} delta {t[m]['delta']} == {want[m]}")
        check(t[m]["new"] - t[m]["base"] == t[m]["delta"], f"total {m}: delta = new - base")


def check_text(text):
    # Each changed function: its four changes (peak, allocated, allocations, leaked), its
    # name and file, [new] or [gone]; largest change first; unchanged ones left out.
    want = [
        "+1.00 MiB +1.00 MiB 0 0 grow_site (diff_prog.c)",
        "0 +12.50 KiB +200 0 churn_site (diff_prog.c)",
        "+4.88 KiB +4.88 KiB +1 0 new_site (diff_prog.c) [new]",
        "+4.00 KiB +4.00 KiB 0 +4.00 KiB leak_site (diff_prog.c)",
        "-2.93 KiB -2.93 KiB -1 0 old_site (diff_prog.c) [gone]",
    ]
    got = [" ".join(l.split()) for l in text.splitlines() if "(diff_prog.c)" in l]
    check(got == want, "text: the changed functions: %r" % got)
    check("grow_site < main" in text and "old_site < main [gone]" in text,
          "text: the stacks innermost first, grow_site < main, old_site < main [gone]")


def check_csv(text, device):
    rows = list(csv.reader(io.StringIO(text)))
    check(rows[0] == ["Event", "Name", "Device ID", "Base", "Compare", "Allocated Memory(byte)",
                      "Diff Memory(byte)"], "csv header: %r" % rows[0])
    by = {(r[0], r[1]): r for r in rows[1:]}
    check(all(r[2] == device for r in rows[1:]), f"csv: Device ID {device} on every row")
    check(rows[1][0] == "TOTAL", "csv: the TOTAL row first")
    for name, (base, new) in TRUTH.items():
        r = by.get(("FUNCTION", f"{name} (diff_prog.c)"))
        check(r is not None, f"csv: FUNCTION {name}")
        if not r:
            continue
        want = [str(base[0]) if base else "N/A", str(new[0]) if new else "N/A",
                str(new[1]) if new else "N/A", str((new or (0,))[0] - (base or (0,))[0])]
        check(r[3:] == want, f"csv {name}: {r[3:]} == {want}")
        s = by.get(("STACK", f"main;{name}"))
        check(s is not None and s[3:] == want, f"csv: STACK main;{name}: {s}")


def native(memtrace, memreport, prog, elsewhere, work):
    base = trace(memtrace, os.path.join(work, "base.db"), prog, "1")
    new = trace(memtrace, os.path.join(work, "new.db"), prog, "2")
    sb = json.loads(report(memreport, "summary", "--json", base))
    sn = json.loads(report(memreport, "summary", "--json", new))
    rep = json.loads(report(memreport, "diff", base, new, "--json"))
    check(set(rep) >= {"totals", "functions", "stacks"}, "json: totals, functions, stacks")
    check_json(rep, sb, sn)
    check_text(report(memreport, "diff", base, new))
    check_csv(report(memreport, "diff", base, new, "--csv"), "cpu")
    top = json.loads(report(memreport, "diff", base, new, "--json", "--top", "2"))
    check([f["function"] for f in top["functions"]] == ["grow_site", "churn_site"] and
          top["functions_total"] == 6 and len(top["stacks"]) == 2, "--top 2")
    srt = json.loads(report(memreport, "diff", base, new, "--json", "--sort", "leaked_bytes"))
    check(srt["functions"][0]["function"] == "leak_site", "--sort leaked_bytes: leak_site first")

    # -o FILE: written once; an existing file is kept without -f.
    out = os.path.join(work, "diff.json")
    report(memreport, "diff", base, new, "--json", "-o", out)
    with open(out) as f:
        check(json.load(f) == rep, "-o FILE holds the report")
    p = run(memreport, "diff", base, new, "-o", out)
    with open(out) as f:
        check(p.returncode != 0 and json.load(f) == rep, "-o FILE refuses to overwrite without -f")

    gate(memreport, base, new, rep["totals"])
    usage(memreport, base, new)

    # The same program built elsewhere (another directory, its code moved): nothing changed.
    moved = trace(memtrace, os.path.join(work, "moved.db"), elsewhere, "1")
    same = json.loads(report(memreport, "diff", base, moved, "--json"))
    check_no_change(same, "base vs the program built elsewhere")
    addr = subprocess.run(["nm", prog], capture_output=True, text=True).stdout
    addr2 = subprocess.run(["nm", elsewhere], capture_output=True, text=True).stdout
    grow = [l.split()[0] for l in addr.splitlines() if l.endswith(" grow_site")]
    grow2 = [l.split()[0] for l in addr2.splitlines() if l.endswith(" grow_site")]
    check(grow and grow2 and grow != grow2, f"grow_site's address differs: {grow} {grow2}")

    # A capture with itself.
    check_no_change(json.loads(report(memreport, "diff", new, new, "--json")), "new vs new")
    text = report(memreport, "diff", new, new)
    check("no functions changed" in text and "no stacks changed" in text, "text: no change")
    p = run(memreport, "diff", new, new, "--fail-if", "peak_bytes>+0%",
            "--fail-if", "leaked_bytes>+0", "--fail-if", "allocations>+0")
    check(p.returncode == 0 and p.stderr == "", "itself: no growth limit broken: %r" % p.stderr)
    return new


def check_no_change(rep, what, functions=5):
    rows = rep["functions"] + rep["stacks"] + [rep["totals"]]
    check(all(r[m]["delta"] == 0 for r in rows for m in METRICS), f"{what}: every delta 0")
    check(all(r["status"] == "unchanged" for r in rep["functions"] + rep["stacks"]),
          f"{what}: every function and stack in both, unchanged")
    check(len(rep["functions"]) == functions, f"{what}: {functions} functions compared")


def gate(memreport, base, new, totals):
    def pct(m):
        return 100.0 * totals[m]["delta"] / totals[m]["base"]

    # Broken: three of four limits; the report is still written.
    p = run(memreport, "diff", base, new, "--json", "--fail-if", "peak_bytes>+5%",
            "--fail-if", "leaked_bytes>0", "--fail-if", "allocations>+1000",
            "--fail-if", "allocated_bytes > +1 MiB")
    want = [
        "memreport: diff: peak_bytes grew %.1f%% (+1.0 MiB), limit +5%%" % pct("peak_bytes"),
        "memreport: diff: leaked_bytes is 8.0 KiB (+4.0 KiB), limit 0",
        "memreport: diff: allocated_bytes grew +1.0 MiB (%.1f%%), limit +1 MiB"
        % pct("allocated_bytes"),
    ]
    check(p.returncode == 4, f"gate broken: exit 4, got {p.returncode}")
    check(p.stderr.splitlines() == want, "gate: one line per broken limit: %r" % p.stderr)
    check(json.loads(p.stdout)["totals"] == totals, "gate: the report is written")
    # Not broken: exactly at the limits.
    d = totals["allocations"]["delta"]
    p = run(memreport, "diff", base, new, "--fail-if", "peak_bytes>+100%",
            "--fail-if", "leaked_bytes>8KiB", "--fail-if", f"allocations>+{d}",
            "--fail-if", f"peak_bytes>{totals['peak_bytes']['new']}")
    check(p.returncode == 0 and p.stderr == "", f"gate kept: exit {p.returncode} {p.stderr!r}")
    p = run(memreport, "diff", base, new, "--fail-if", f"allocations>+{d - 1}")
    check(p.returncode == 4 and p.stderr == "memreport: diff: allocations grew +%d (%.1f%%), "
          "limit +%d\n" % (d, pct("allocations"), d - 1), f"allocations>+{d - 1}: {p.stderr!r}")


def usage(memreport, base, new):
    for args, says in (
            (["--fail-if", "peak>+5%"], "expected METRIC>LIMIT"),
            (["--fail-if", "peak_bytes>5%"], "write +5%"),
            (["--fail-if", "allocations>+1KiB"], "allocations is a count"),
            (["--fail-if", "leaked_bytes>+1 XB"], "unknown unit 'XB'"),
            (["--json", "--csv"], "exclude each other"),
            (["--sort", "bytes"], "--sort: expected"),
            (["--top", "x"], "--top: not a count")):
        p = run(memreport, "diff", base, new, *args)
        check(p.returncode == 1 and says in p.stderr and p.stdout == "",
              f"usage error {args}: exit {p.returncode}, {p.stderr.splitlines()[:1]}")
    p = run(memreport, "diff", base)
    check(p.returncode == 1 and "diff takes two captures, BASE and NEW, got 1" in p.stderr,
          "one capture: usage error")
    p = run(memreport, "diff", base, "/nonexistent/x.db")
    check(p.returncode == 3 and "/nonexistent/x.db" in p.stderr, "missing capture: exit 3")


def damaged(memreport, good, work):
    """A capture whose events cannot be read (a chunk's bytes overwritten: its checksum
    fails): one message naming it, exit 2, whichever side it is; both damaged, the base's
    only (the sides are read at the same time, reported as one after the other)."""
    bad = []
    for name in ("damaged1.db", "damaged2.db"):
        path = os.path.join(work, name)
        shutil.copyfile(good, path)
        db = sqlite3.connect(path)
        (cid, n), = db.execute("SELECT id, length(data) FROM event_chunk ORDER BY id LIMIT 1")
        db.execute("UPDATE event_chunk SET data = ? WHERE id = ?", (bytes([0x5a]) * n, cid))
        # The aggregates the earlier reports stored answer a diff without reading an event
        # (docs/capture-format.md, "Aggregates"): without them it must read the chunk.
        db.execute("DROP TABLE IF EXISTS aggregate")
        db.commit()
        db.close()
        bad.append(path)
    for base, new, named in ((bad[0], good, bad[0]), (good, bad[0], bad[0]),
                             (bad[0], bad[1], bad[0]), (bad[1], bad[0], bad[1])):
        p = run(memreport, "diff", base, new)
        lines = p.stderr.splitlines()
        check(p.returncode == 2 and p.stdout == "" and len(lines) == 1 and
              lines[0].startswith(f"memreport: {named}: "),
              f"damaged capture: exit 2 and one line naming {os.path.basename(named)} "
              f"(diff {os.path.basename(base)} {os.path.basename(new)}): "
              f"exit {p.returncode}, {lines}")


def npu(memreport, fixtures, native_cap, work):
    caps = {}
    for log in ("sample", "corner"):
        caps[log] = os.path.join(work, log + ".db")
        report(memreport, "import", os.path.join(fixtures, log + ".log"), "-o", caps[log], "-f")
    rep = json.loads(report(memreport, "diff", caps["sample"], caps["corner"], "--json"))
    # Truth: each log's own stacks report, per leaf function.
    truth = {}
    for run_i, log in enumerate(("sample", "corner")):
        st = json.loads(report(memreport, "stacks", caps[log], "--json", "--top", "0"))
        for s in st["stacks"]:
            t = truth.setdefault(s["frames"][0]["function"], [[0] * 4, [0] * 4])
            for i, k in enumerate(("peak_bytes", "bytes", "count", "leaked_bytes")):
                t[run_i][i] += s[k]
    got = {f["function"]: [list(v) for v in values(f)] for f in rep["functions"]}
    check(got == truth, f"npu: functions = the stacks reports: {got} == {truth}")
    check(got.get("main", [[0]])[0][0] == 6144, "npu: main holds 6 KiB at sample's peak")
    sb = json.loads(report(memreport, "summary", "--json", caps["sample"]))
    check(rep["totals"]["peak_bytes"]["base"] == sb["peak_bytes"], "npu: base peak = summary")
    rows = list(csv.reader(io.StringIO(report(memreport, "diff", caps["sample"],
                                                       caps["corner"], "--csv"))))
    check(all(r[2] == "npu" for r in rows[1:]), "npu csv: Device ID npu")
    check_no_change(json.loads(report(memreport, "diff", caps["corner"], caps["corner"],
                                      "--json")), "npu: corner vs corner", 4)
    # One of each kind: refused.
    for a, b in ((native_cap, caps["sample"]), (caps["sample"], native_cap)):
        p = run(memreport, "diff", a, b)
        check(p.returncode == 2 and p.stdout == "" and
              "diff compares two native captures or two imported NPU logs" in p.stderr,
              f"native and NPU mixed: exit 2: {p.stderr.strip()}")


def main():
    memtrace, memreport, prog, elsewhere, fixtures, work = sys.argv[1:7]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = native(memtrace, memreport, prog, elsewhere, work)
    damaged(memreport, cap, work)
    npu(memreport, fixtures, cap, work)
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main()
