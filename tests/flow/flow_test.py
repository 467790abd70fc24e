#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport flow against known truth: a traced program (flow_prog.c, whose lines allocate
# known bytes along known call paths; its caller lines are found by their "FLOW:" markers)
# in JSON, DOT read back by `dot -Tjson`, and SVG drawn by dot and parsed as XML: the
# peak sites' local bytes equal `memreport stats --json`, edges carry the known bytes, the
# chain of pass-through functions is one box, two --at moments give two rows per node,
# --min-share hides without changing numbers; errors and their exit codes.
# With HOSTILE_NAMES (tests/reports/progs/hostile_names.c): names that are bytes, not text,
# reach DOT and SVG escaped (\xNN) and dot reads them.
# Usage: flow_test.py MEMREPORT MEMTRACE_LAUNCHER FLOW_PROG FLOW_PROG_SOURCE WORKDIR
#        [HOSTILE_NAMES]
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402


class Flow:
    def __init__(self, memreport, cap):
        self.memreport, self.cap = memreport, cap

    def run(self, *args, env=None):
        return subprocess.run([self.memreport, "flow", self.cap] + list(args),
                              capture_output=True, text=True, env=env)

    def ok(self, *args):
        r = self.run(*args)
        if r.returncode != 0:
            print(r.stderr)
        r.check_returncode()
        return r.stdout

    def json(self, *args):
        return json.loads(self.ok("--json", *args))


def markers(source):
    """FLOW marker -> line number in flow_prog.c."""
    lines = {}
    with open(source) as f:
        for no, text in enumerate(f, 1):
            m = re.search(r"// FLOW: (.*)$", text)
            if m:
                lines[m.group(1).strip()] = no
    return lines


def node_lines(node):
    return [(l["function"], l["line"]) for l in node["lines"]]


def find_node(rep, first):
    """The node whose first line is (function, line)."""
    got = [n for n in rep["nodes"] if node_lines(n)[0] == first]
    return got[0] if len(got) == 1 else None


def edge_bytes(rep, a, b):
    for e in rep["edges"]:
        if e["from"] == a["id"] and e["to"] == b["id"]:
            return e["bytes"]
    return None


def sql(memreport, cap, query):
    r = subprocess.run([memreport, "sql", cap, query, "--json"], check=True, capture_output=True,
                       text=True)
    return list(json.loads(r.stdout)[0].values())[0]


def peak(t, memreport, mk):
    rep = t.json()
    check(len(rep["moments"]) == 1 and rep["moments"][0]["at"] == "peak", "one moment: the peak")
    check(rep["moments"][0]["total"] == 8700, "total live at the peak 8700: %d" %
          rep["moments"][0]["total"])
    buf = find_node(rep, ("make_buf", mk["make_buf malloc"]))
    own = find_node(rep, ("parser", mk["parser malloc"]))
    check(buf is not None and buf["local"] == [8200] and buf["cumulative"] == [8200],
          "make_buf's malloc line: 8200 local and cumulative")
    check(own is not None and own["local"] == [500] and own["cumulative"] == [500],
          "parser's malloc line: 500")
    stats = json.loads(subprocess.run([memreport, "stats", t.cap, "--json"], check=True,
                                      capture_output=True, text=True).stdout)
    sites = {s["site"]: s["peak_bytes"] for s in stats["by_peak"]}
    check(buf and own and sites.get("make_buf") == buf["local"][0] and
          sites.get("parser") == own["local"][0],
          "local bytes of the peak sites equal stats: %r" % sites)
    # The chain of pass-through lines is one box, main's call first.
    chain = find_node(rep, ("main", mk["main pass_a"]))
    want = [("main", mk["main pass_a"]), ("pass_a", mk["pass_a call"]),
            ("pass_b", mk["pass_b call"]), ("pass_c", mk["pass_c call"])]
    check(chain is not None and node_lines(chain) == want and chain["local"] == [0] and
          chain["cumulative"] == [1200], "main -> pass_a -> pass_b -> pass_c: one box of 1200")
    check(all(find_node(rep, l) is None for l in want[1:]), "no box of its own for a chained line")
    reader = find_node(rep, ("main", mk["main reader"]))
    check(reader is not None and node_lines(reader) == [("main", mk["main reader"]),
                                                        ("reader", mk["reader call"])],
          "main -> reader: one box")
    main_parser = find_node(rep, ("main", mk["main parser"]))
    parser = find_node(rep, ("parser", mk["parser call"]))
    check(main_parser is not None and node_lines(main_parser) == [("main", mk["main parser"])] and
          main_parser["cumulative"] == [4500], "main's call of parser: its own box (two callees)")
    # The edges and their bytes.
    for a, b, want_bytes, what in ((main_parser, parser, 4000, "main -> parser's call"),
                                   (main_parser, own, 500, "main -> parser's malloc"),
                                   (parser, buf, 4000, "parser -> make_buf"),
                                   (reader, buf, 3000, "reader -> make_buf"),
                                   (chain, buf, 1200, "the chain -> make_buf")):
        got = edge_bytes(rep, a, b) if a and b else None
        check(got == [want_bytes], "edge %s: %r" % (what, got))
    check(len(rep["edges"]) == 5, "5 edges: %d" % len(rep["edges"]))
    check(all(abs(n["percent"][0] - 100.0 * n["cumulative"][0] / 8700) < 1e-9
              for n in rep["nodes"]), "percents of the total")
    return rep


def two_moments(t, memreport, mk):
    after = sql(memreport, t.cap, "SELECT max(ts) FROM allocations WHERE size = 1000")
    rep = t.json("--at", "%dns" % after, "--at", "peak")
    check([m["at"] for m in rep["moments"]] == ["%dns" % after, "peak"] and
          [m["total"] for m in rep["moments"]] == [3000, 8700], "two moments: 3000 then 8700")
    buf = find_node(rep, ("make_buf", mk["make_buf malloc"]))
    own = find_node(rep, ("parser", mk["parser malloc"]))
    reader = find_node(rep, ("main", mk["main reader"]))
    check(buf and buf["local"] == [3000, 8200], "make_buf: 3000 then 8200")
    check(own and own["local"] == [0, 500], "parser's malloc: 0 then 500")
    check(reader and reader["cumulative"] == [3000, 3000] and
          edge_bytes(rep, reader, buf) == [3000, 3000], "reader: 3000 at both")
    check(all(len(n["local"]) == 2 and len(n["cumulative"]) == 2 for n in rep["nodes"]),
          "every node has two numbers")
    # The DOT, read by dot: one row per moment in every node.
    dot = os.path.join(t.work, "two.dot")
    t.ok("--at", "%dns" % after, "--at", "peak", "-o", dot)
    graph = json.loads(subprocess.run(["dot", "-Tjson", dot], check=True, capture_output=True,
                                      text=True).stdout)
    objs = graph.get("objects", [])
    check(len(objs) == len(rep["nodes"]), "dot reads %d nodes" % len(objs))
    check(all(o["label"].count("%</td>") == 2 for o in objs), "two rows of numbers per node")
    check(len(graph.get("edges", [])) == len(rep["edges"]), "dot reads the edges")
    e = [x for x in graph.get("edges", []) if "reader" in objs[x["tail"]]["label"]]
    check(len(e) == 1 and e[0]["label"] == "2.93 KiB / 2.93 KiB",
          "the reader edge says its bytes at both moments: %r" % [x["label"] for x in e])
    return after


def svg(t, mk, rep):
    out = os.path.join(t.work, "flow.svg")
    t.ok("-o", out)
    texts = ["".join(e.itertext()) for e in ET.parse(out).getroot().iter()
             if e.tag.endswith("}text")]
    file = rep["nodes"][0]["lines"][0]["file"]
    want = "make_buf (%s:%d)" % (file, mk["make_buf malloc"])
    check(want in texts, "the SVG names %s" % want)
    for f in ("pass_a", "pass_b", "pass_c", "reader", "parser"):
        check(any(x.startswith(f + " (") for x in texts), "the SVG shows %s" % f)
    check("7.81 KiB / 8.01 KiB = 94.3%" not in texts and
          "8.01 KiB / 8.01 KiB = 94.3%" in texts, "make_buf's numbers in the SVG")


def min_share(t, mk):
    rep = t.json("--min-share", "10")
    check(find_node(rep, ("parser", mk["parser malloc"])) is None and
          rep["moments"][0]["hidden_local"] == 500, "--min-share 10 hides parser's 500 (5.7%)")
    check(sum(n["local"][0] for n in rep["nodes"]) + rep["moments"][0]["hidden_local"] == 8700,
          "shown locals and hidden add up to the total")
    main_parser = find_node(rep, ("main", mk["main parser"]))
    check(main_parser is not None and main_parser["cumulative"] == [4500] and
          [l[0] for l in node_lines(main_parser)] == ["main", "parser"],
          "main -> parser merges once the malloc is hidden, numbers unchanged")
    every = t.json("--min-share", "0")
    check(len(every["nodes"]) >= len(t.json()["nodes"]), "--min-share 0 hides nothing")


def errors(t, work):
    def expect(args, code, words, what, env=None, out=None):
        r = t.run(*args, env=env)
        ok = r.returncode == code and all(w in r.stderr for w in words) and not r.stdout
        if out is not None:
            ok = ok and not os.path.exists(out)
        if not ok:
            print(r.returncode, r.stderr)
        check(ok, "%s: exit %d, says %r" % (what, code, words))

    out = os.path.join(work, "nodot.svg")
    env = dict(os.environ, PATH=os.path.join(work, "empty"))
    os.makedirs(env["PATH"], exist_ok=True)
    expect(["-o", out], 3, ["memreport: flow: .svg needs Graphviz's dot (apt install graphviz); "
                            "write .dot instead"], "no dot", env=env, out=out)
    expect(["--at", "20"], 1, ["--at 20"], "a bare number for --at")
    expect(["--at", "no-such-mark"], 1, ["no-such-mark"], "an unknown mark")
    expect(["--at", "1000s"], 1, ["--at"], "a time after the capture")
    expect(["-o", os.path.join(work, "x.png")], 1, ["expected FILE.dot or FILE.svg"], "a .png")
    expect(["--min-share", "abc"], 1, ["--min-share"], "a bad --min-share")
    expect(["--min-share", "101"], 1, ["--min-share"], "a share above 100")
    missing = Flow(t.memreport, os.path.join(work, "missing.db"))
    r = missing.run()
    check(r.returncode == 3 and "missing.db" in r.stderr, "a missing capture: exit 3")
    keep = os.path.join(work, "keep.dot")
    with open(keep, "w") as f:
        f.write("keep")
    r = t.run("-o", keep)
    with open(keep) as f:
        check(r.returncode != 0 and f.read() == "keep", "an existing file is kept without -f")
    r = t.run("-o", keep, "-f")
    with open(keep) as f:
        check(r.returncode == 0 and f.read().startswith("digraph"), "-f replaces it")


def hostile(memreport, launcher, prog, work):
    cap = os.path.join(work, "hostile.db")
    subprocess.run([launcher, "-o", cap, "--", prog], check=True, capture_output=True)
    t = Flow(memreport, cap)
    dot = os.path.join(work, "hostile.dot")
    t.ok("--min-share", "0", "-o", dot)
    with open(dot, "rb") as f:
        raw = f.read()
    check(b"\x1b" not in raw and b"\xe9" not in raw and b"<script>" not in raw,
          "no raw control, invalid or HTML bytes in the DOT")
    r = subprocess.run(["dot", "-Tsvg", dot], capture_output=True)
    check(r.returncode == 0, "dot reads the DOT: %s" % r.stderr.decode(errors="replace"))
    texts = ["".join(e.itertext()) for e in ET.fromstring(r.stdout).iter()
             if e.tag.endswith("}text")]
    for name in ("caf\\xe9_alloc", "esc\\x1b]0;pwned\\x07\\x1b[2J<!--<script>",
                 "</script><img src=x onerror=alert(1)>", "evil\\x1b[2J.c"):
        check(any(name in x for x in texts), "the SVG shows %r" % name)


def main():
    if len(sys.argv) not in (6, 7):
        sys.exit("usage: flow_test.py MEMREPORT MEMTRACE_LAUNCHER FLOW_PROG FLOW_PROG_SOURCE "
                 "WORKDIR [HOSTILE_NAMES]")
    memreport, launcher, prog, source, work = sys.argv[1:6]
    if not shutil.which("dot"):
        print("SKIP: Graphviz's dot is not installed (scripts/install-deps.sh --test)")
        sys.exit(77)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = os.path.join(work, "flow.db")
    subprocess.run([launcher, "-o", cap, "--", prog], check=True, capture_output=True)
    t = Flow(memreport, cap)
    t.work = work
    mk = markers(source)
    rep = peak(t, memreport, mk)
    two_moments(t, memreport, mk)
    svg(t, mk, rep)
    min_share(t, mk)
    errors(t, work)
    if len(sys.argv) == 7:
        hostile(memreport, launcher, sys.argv[6], work)
    print("%d failures" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
