#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport top against known truth: a traced program (top_prog.c, whose functions allocate
# known bytes along known paths) for every metric, --at, --range, --thread, --sort, --top,
# --callers/--callees, text and JSON alike; usage errors and their exit codes; and an
# imported NPU log (tests/fixtures/npu/corner.log), whose functions are one-frame stacks.
# Usage: top_test.py MEMREPORT NPU_LOG WORKDIR [MEMTRACE_LAUNCHER TOP_PROG]
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402


class Top:
    def __init__(self, memreport, cap):
        self.memreport, self.cap = memreport, cap

    def run(self, *args):
        return subprocess.run([self.memreport, "top", self.cap] + list(args),
                              capture_output=True, text=True)

    def json(self, *args):
        r = self.run("--json", *args)
        if r.returncode != 0:
            print(r.stderr)
        r.check_returncode()
        return json.loads(r.stdout)

    def text(self, *args):
        r = self.run(*args)
        if r.returncode != 0:
            print(r.stderr)
        r.check_returncode()
        return r.stdout


def table(report):
    """name -> (self, total) of a JSON table."""
    return {f["function"]: (f["self"], f["total"]) for f in report["functions"]}


def shares(report, key):
    """name -> value of a JSON caller or callee list."""
    return {f["function"]: f["value"] for f in report[key]}


NAME = r"(\S+)(?: \(.*\))?$"  # a function and its file


def text_table(out):
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\d+)\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+" + NAME, line)
        if m:
            rows[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return rows


def text_list(out, title):
    """name -> value of the list after the line 'title of ...' in text output."""
    rows, inside = {}, False
    for line in out.splitlines():
        if line.startswith(("callers of ", "callees of ")):
            inside = line.startswith(title + " of ")
            continue
        m = re.match(r"^\s*(\d+)\s+[\d.]+%\s+" + NAME, line)
        if inside and m:
            rows[m.group(2)] = int(m.group(1))
    return rows


def sub(d, names):
    return {n: d[n] for n in names if n in d}


def check_percents(report):
    total = report["total"]
    ok = all(abs(f["self_percent"] - 100.0 * f["self"] / total) < 1e-6 and
             abs(f["total_percent"] - 100.0 * f["total"] / total) < 1e-6
             for f in report["functions"]) if total else True
    check(ok, "%s: percents are of the total %d" % (report["metric"], total))


OURS = ("make_buf", "reader", "parser", "walk", "churn", "churner", "main")


def check_metric(t, metric, want, skip=()):
    """Table of one metric, JSON and text, on our functions but those in skip."""
    names = [n for n in OURS if n not in skip]
    rep = t.json("--metric", metric, "--top", "0")
    got = sub(table(rep), names)
    check(got == want, "%s: self and total per function %r" % (metric, got))
    check(rep["metric"] == metric and rep["unit"] == ("allocations" if metric == "count" else "bytes"),
          "%s: metric and unit named" % metric)
    selfs = [f["self"] for f in rep["functions"]]
    check(selfs == sorted(selfs, reverse=True), "%s: sorted by self" % metric)
    check_percents(rep)
    txt = sub(text_table(t.text("--metric", metric, "--top", "0")), names)
    check(txt == want, "%s: text table says the same %r" % (metric, txt))
    return rep


def sql(memreport, cap, query):
    r = subprocess.run([memreport, "sql", cap, query, "--json"], check=True, capture_output=True,
                       text=True)
    return list(json.loads(r.stdout)[0].values())[0]


def traced_metrics(t):
    # Live at the peak: 3000 (reader) + 4500 (parser, 500 its own) + 460 (walk, 160 its own).
    live = {"make_buf": (7300, 7300), "reader": (0, 3000), "parser": (500, 4500),
            "walk": (160, 460), "main": (0, 7960)}
    rep = check_metric(t, "live", live)
    check(rep["moment"] == "peak" and rep["total"] >= 7960, "live: at the peak")
    check(table(t.json("--top", "0")) == table(rep), "live is the default")
    # Allocated over the run: churn's 100 x 64 too (under churner, not main). main's total
    # also holds pthread_create's allocations, so main is checked through its callees.
    alloc = {"make_buf": (13700, 13700), "reader": (0, 3000), "parser": (500, 4500),
             "walk": (160, 460), "churn": (0, 6400), "churner": (0, 6400)}
    rep = check_metric(t, "allocated", alloc, skip=("main",))
    check(table(rep)["main"][1] >= 7960, "allocated: main holds at least its three callees")
    count = {"make_buf": (106, 106), "reader": (0, 3), "parser": (1, 3), "walk": (4, 5),
             "churn": (0, 100), "churner": (0, 100)}
    check_metric(t, "count", count, skip=("main",))
    leaked = {"make_buf": (3000, 3000), "reader": (0, 3000), "parser": (500, 500)}
    rep = check_metric(t, "leaked", leaked, skip=("main",))
    check("walk" not in table(rep) and "churn" not in table(rep),
          "leaked: walk and churn freed everything")
    for metric, want in (("allocated", {"reader": 3000, "parser": 4500, "walk": 460}),
                         ("count", {"reader": 3, "parser": 3, "walk": 5}),
                         ("leaked", {"reader": 3000, "parser": 500})):
        got = sub(shares(t.json("--metric", metric, "--callees", "main"), "callees"), OURS)
        check(got == want, "%s: main's callees %r" % (metric, got))


def traced_sorting(t):
    rep = t.json("--sort", "total", "--top", "0")
    totals = [f["total"] for f in rep["functions"]]
    check(rep["sort"] == "total" and totals == sorted(totals, reverse=True), "--sort total")
    rep = t.json("--top", "2")
    check(len(rep["functions"]) == 2 and rep["functions_total"] > 2 and
          rep["functions"][0]["function"] == "make_buf", "--top 2: the two largest selves")
    check("(top 2 of " in t.text("--top", "2"), "--top 2: the text says what it left out")


def traced_calls(t):
    rep = t.json("--callers", "make_buf")
    want = {"reader": 3000, "parser": 4000, "walk": 300}
    check(shares(rep, "callers") == want, "callers of make_buf: %r" % shares(rep, "callers"))
    check(all(abs(c["percent"] - 100.0 * c["value"] / 7300) < 1e-6 for c in rep["callers"]),
          "callers of make_buf: shares of its total 7300")
    check(rep["function"]["function"] == "make_buf" and rep["function"]["total"] == 7300 and
          "callees" not in rep and "functions" not in rep, "--callers: the function, no table")
    check(text_list(t.text("--callers", "make_buf"), "callers") == want, "callers: text")
    # walk recurses: each stack counts once for walk -> walk (300 + 3 x 40).
    rep = t.json("--callers", "walk", "--callees", "walk")
    callers, callees = shares(rep, "callers"), shares(rep, "callees")
    check(callers == {"main": 460, "walk": 420}, "callers of walk: %r" % callers)
    check(callees == {"(self)": 160, "walk": 420, "make_buf": 300}, "callees of walk: %r" % callees)
    out = t.text("--callers", "walk", "--callees", "walk")
    check(text_list(out, "callers") == callers and text_list(out, "callees") == callees,
          "callers and callees of walk: text")
    check([c["function"] for c in rep["callees"]] == ["walk", "make_buf", "(self)"],
          "callees sorted by value")
    live = sub(shares(t.json("--callees", "main"), "callees"), OURS + ("(self)",))
    check(live == {"reader": 3000, "parser": 4500, "walk": 460}, "callees of main: %r" % live)
    # Names: a unique part, and "name (file)" as the text shows it.
    check(t.json("--callers", "arse")["function"]["function"] == "parser", "a unique part names")
    f = t.json("--callers", "walk")["function"]
    named = t.json("--callers", "%s (%s)" % (f["function"], f["file"]))["function"]
    check(named == f, "'name (file)' names a function")
    # Two static tidy()s, in top_prog.c and top_prog_b.c: the name alone is ambiguous, the
    # name with its file is not.
    tidies = [f for f in t.json("--metric", "allocated", "--top", "0")["functions"]
              if f["function"] == "tidy"]
    check(sorted((f["self"], os.path.basename(f["file"])) for f in tidies) ==
          [(10, "top_prog.c"), (20, "top_prog_b.c")], "two tidy functions, one per file")
    expect_error(t, ["--callers", "tidy"], 1, ["is ambiguous", "top_prog.c)", "top_prog_b.c)"],
                 "one name, two files")
    b = [f for f in tidies if f["file"].endswith("top_prog_b.c")][0]
    rep = t.json("--metric", "allocated", "--callers", "tidy (%s)" % b["file"])
    check(shares(rep, "callers") == {"other_tidy": 20}, "tidy (top_prog_b.c): called by other_tidy")


def traced_time(t, memreport, cap):
    # --at the last free of phase 4: reader's 3000 and parser's own 500 live, nothing else.
    at = sql(memreport, cap, "SELECT max(freed_ts) FROM allocations WHERE size IN (2000,300,40)")
    rep = t.json("--at", "%dns" % at, "--top", "0")
    got = sub(table(rep), OURS)
    want = {"make_buf": (3000, 3000), "reader": (0, 3000), "parser": (500, 500), "main": (0, 3500)}
    check(rep["moment"] == "time" and got == want, "--at %dns: %r" % (at, got))
    check(sub(text_table(t.text("--at", "%dns" % at, "--top", "0")), OURS) == want, "--at: text")
    # --range from phase 2: reader's allocations are left out.
    frm = sql(memreport, cap, "SELECT min(ts) FROM allocations WHERE size = 2000")
    rep = t.json("--metric", "allocated", "--range", "%dns.." % frm, "--top", "0")
    got = sub(table(rep), OURS)
    check(rep["range_from"] == frm and rep["range_to"] is None and "reader" not in got and
          got["make_buf"] == (10700, 10700) and got["parser"] == (500, 4500) and
          got["walk"] == (160, 460), "--range %dns..: %r" % (frm, got))
    to = sql(memreport, cap, "SELECT max(ts) FROM allocations WHERE size = 1000")
    got = sub(table(t.json("--metric", "count", "--range", "..%dns" % to)), OURS)
    check(got == {"make_buf": (3, 3), "reader": (0, 3), "main": (0, 3)}, "--range ..TO: %r" % got)
    # Leaked, --range from phase 2: parser's own 500 only (reader's 3000 came before).
    got = sub(table(t.json("--metric", "leaked", "--range", "%dns.." % frm, "--top", "0")), OURS)
    check(got == {"parser": (500, 500), "main": (0, 500)},
          "leaked --range %dns..: the leaks of its allocations: %r" % (frm, got))
    got = sub(table(t.json("--metric", "leaked", "--range", "..%dns" % to, "--top", "0")), OURS)
    check(got == {"make_buf": (3000, 3000), "reader": (0, 3000), "main": (0, 3000)},
          "leaked --range ..%dns: reader's: %r" % (to, got))
    # --thread: the churner's own allocations.
    tid = sql(memreport, cap, "SELECT min(tid) FROM allocations WHERE size = 64")
    rep = t.json("--metric", "allocated", "--thread", str(tid), "--top", "0")
    got = sub(table(rep), OURS)
    check(rep["thread"] == tid and got == {"make_buf": (6400, 6400), "churn": (0, 6400),
                                           "churner": (0, 6400)}, "--thread %d: %r" % (tid, got))
    rep = t.json("--all-frames", "--top", "0")
    check(rep["all_frames"] and table(rep)["make_buf"][1] == 7300 and
          sum(f["self"] for f in rep["functions"]) == rep["total"],
          "--all-frames: make_buf still totals 7300; the selves add up to the total")


def expect_error(t, args, code, words, what):
    r = t.run(*args)
    ok = r.returncode == code and all(w in r.stderr for w in words) and not r.stdout
    if not ok:
        print(r.returncode, r.stderr)
    check(ok, "%s: exit %d, says %r" % (what, code, words))


def traced_errors(t, work):
    expect_error(t, ["--callers", "no_such_fn"], 1, ["no such function"], "unknown name")
    expect_error(t, ["--callees", "r"], 1, ["is ambiguous", "reader", "parser"], "ambiguous name")
    expect_error(t, ["--callers", "READER"], 1, ["did you mean: reader"], "a name in another case")
    expect_error(t, ["--metric", "bogus"], 1, ["expected live, allocated, count or leaked"],
                 "bad metric")
    expect_error(t, ["--metric", "allocated", "--at", "1ms"], 1, ["--at applies to"],
                 "--at with allocated")
    expect_error(t, ["--sort", "size"], 1, ["--sort"], "bad sort")
    expect_error(t, ["--callers", "walk", "--callees", "main"], 1, ["two functions"],
                 "--callers and --callees of two functions")
    expect_error(t, ["--at", "step 1"], 1, ["not steps"], "a step on a native capture")
    expect_error(t, ["--top", "-1"], 1, ["--top"], "bad --top")
    expect_error(Top(t.memreport, os.path.join(work, "missing.db")), [], 3, ["missing.db"],
                 "a missing capture")
    bad = os.path.join(work, "not-a-capture.db")
    with open(bad, "w") as f:
        f.write("not sqlite\n" * 100)
    expect_error(Top(t.memreport, bad), [], 2, ["not-a-capture.db"], "not a capture")
    out = os.path.join(work, "top.json")
    with open(out, "w") as f:
        f.write("keep")
    r = t.run("--json", "-o", out)
    with open(out) as f:
        kept = f.read()
    check(r.returncode != 0 and kept == "keep", "-o an existing file without -f keeps it")
    r = t.run("--json", "-o", out, "-f")
    with open(out) as f:
        check(r.returncode == 0 and json.load(f) == t.json(), "-o FILE -f writes the report")


def traced(memreport, launcher, prog, work):
    cap = os.path.join(work, "top.db")
    subprocess.run([launcher, "-o", cap, "--", prog], check=True, capture_output=True)
    t = Top(memreport, cap)
    traced_metrics(t)
    traced_sorting(t)
    traced_calls(t)
    traced_time(t, memreport, cap)
    traced_errors(t, work)


def npu(memreport, log, work):
    # corner.log's StaticAllocation buffers: main 7000 + 5000 + 2000 (12000 live at the
    # peak; the 7000 freed, so 7000 still live at the end), part10 6500 + 3000 + 1000, part2
    # 1500 + 4500, part3 100, all freed.
    cap = os.path.join(work, "npu.db")
    subprocess.run([memreport, "import", log, "-o", cap], check=True, capture_output=True)
    t = Top(memreport, cap)
    want = {"main": (14000, 14000), "part10": (10500, 10500), "part2": (6000, 6000),
            "part3": (100, 100)}
    rep = t.json("--metric", "allocated")
    check(table(rep) == want and rep["time_unit"] == "step", "npu allocated: %r" % table(rep))
    check(text_table(t.text("--metric", "allocated")) == want, "npu allocated: text")
    got = table(t.json("--metric", "count"))
    check(got == {"main": (3, 3), "part10": (3, 3), "part2": (2, 2), "part3": (1, 1)},
          "npu count: %r" % got)
    check(table(t.json()) == {"main": (12000, 12000)}, "npu live at the peak: main")
    rep = t.json("--metric", "leaked")
    check(table(rep) == {"main": (7000, 7000)} and rep["total"] == 7000, "npu leaked: main's 7000")
    rep = t.json("--metric", "allocated", "--callers", "part10", "--callees", "part10")
    check(shares(rep, "callers") == {"(root)": 10500} and
          shares(rep, "callees") == {"(self)": 10500} and rep["callers"][0]["percent"] == 100,
          "npu part10: a root function, all self")
    expect_error(t, ["--callers", "part"], 1, ["is ambiguous", "part10", "part2", "part3"],
                 "npu: ambiguous name")
    expect_error(t, ["--at", "5ms"], 1, ["allocation steps"], "npu: a time in ns")
    check(t.run("--at", "step 1").returncode == 0, "npu: --at step 1")


def main():
    if len(sys.argv) not in (4, 6):
        sys.exit("usage: top_test.py MEMREPORT NPU_LOG WORKDIR [MEMTRACE_LAUNCHER TOP_PROG]")
    memreport, log, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    npu(memreport, log, work)
    if len(sys.argv) == 6:
        traced(memreport, sys.argv[4], sys.argv[5], work)
    print("%d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
