#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Captures at and beyond the limits of docs/capture-format.md ("Limits"), crafted with the
project's own writer (limits/mklimits.c): every report command either prints exact figures
(never a negative size, never a wrapped sum) or refuses the capture with one clear line
and exit 2; none crashes.

Usage: check_limits.py --memreport MEMREPORT --fixture LIMITS_FIXTURE --workdir DIR CASE
       check_limits.py --list     (the cases, one a line: see each case_ function)
"""
import argparse
import json
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
from xml.etree import ElementTree

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402

TIMEOUT = 120
INT64_MAX = 2**63 - 1
# A minus sign before a digit, not inside a word or a number (a range "1-2" is not one).
NEGATIVE = re.compile(rb"(?<![\w.\-])-[0-9]")


def craft(a, w, which):
    cap = os.path.join(w, which + ".db")
    subprocess.run([a.fixture, which, cap], check=True, timeout=TIMEOUT)
    return cap


def report_commands(w, cap):
    """Every report of one capture: (name, argv, the file it writes or None for stdout,
    whether that output is JSON)."""
    out = lambda name: os.path.join(w, name)  # noqa: E731
    cmds = [("summary", ["summary", cap], None, False),
            ("summary --json", ["summary", "--json", cap], None, True),
            ("stacks --json", ["stacks", "--json", cap], None, True),
            ("stacks", ["stacks", cap], None, False),
            ("top", ["top", cap], None, False),
            ("top --json", ["top", "--json", cap], None, True),
            ("leaks", ["leaks", cap], None, False),
            ("leaks --json", ["leaks", "--json", cap], None, True),
            ("stats", ["stats", cap], None, False),
            ("stats --json", ["stats", "--json", cap], None, True),
            ("flow --json", ["flow", "--json", cap], None, True),
            ("diff --json", ["diff", "--json", cap, cap], None, True),
            ("live --once", ["live", "--once", cap], None, False),
            ("plot --data", ["plot", cap, "-o", out("plot.svg"), "--data", out("plot.json")],
             out("plot.json"), True),
            ("flamegraph", ["flamegraph", cap, "-o", out("fg.html")], out("fg.html"), False)]
    for fmt, is_json in (("folded", False), ("speedscope", True), ("csv", False),
                         ("massif", False), ("chrome", True)):
        cmds.append((f"export {fmt}", ["export", cap, "--format", fmt], None, is_json))
    return cmds


SET_REPORTS = {"summary", "summary --json", "stacks --json", "stacks", "top", "top --json",
               "leaks", "leaks --json", "stats", "stats --json", "plot --data", "flamegraph",
               "export folded", "export speedscope", "export csv", "export chrome"}


def numbers(doc):
    if isinstance(doc, bool):
        return
    if isinstance(doc, (int, float)):
        yield doc
    elif isinstance(doc, dict):
        for v in doc.values():
            yield from numbers(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from numbers(v)


def limit_memory(mib):
    """A preexec_fn capping the address space (ulimit -v) at mib MiB."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))
    return limit


def run_reports(a, w, cap, expect, sums_nothing=(), memory_mib=None):
    """Runs every report on cap. expect 'refused': each exits 2 with one line naming why,
    but those in sums_nothing (one row per event: nothing to wrap), exact; 'exact': each
    exits 0 with no negative number and no number over 2^63-1. Returns the outputs by
    report name."""
    outputs = {}
    for name, argv, path, is_json in report_commands(w, cap):
        if os.path.isdir(cap) and name not in SET_REPORTS:
            continue
        if path and os.path.exists(path):
            os.remove(path)
        p = subprocess.run([a.memreport] + argv, capture_output=True, timeout=TIMEOUT,
                           preexec_fn=limit_memory(memory_mib) if memory_mib else None)
        err = p.stderr.decode(errors="replace")
        check(p.returncode >= 0, f"{name}: not killed by a signal ({p.returncode})")
        check("runtime error" not in err, f"{name}: no sanitizer finding ({err[:300]!r})")
        if expect == "out of memory" and name == "live --once":  # reads a few chunks a time
            check(p.returncode == 2 and "appears twice" in err,
                  f"{name}: exit 2, the chunks overlap ({p.returncode}: {err[:300]!r})")
            continue
        if expect == "out of memory":
            check(p.returncode == 3 and err.startswith("memreport: ") and
                  err.endswith("out of memory\n"),
                  f"{name}: exit 3, out of memory ({p.returncode}: {err[:300]!r})")
            continue
        if expect == "survives":  # times before the start: any exact answer or a refusal
            check(p.returncode == 0 or (p.returncode == 2 and err.startswith("memreport: ")),
                  f"{name}: exit 0, or 2 with a reason ({p.returncode}: {err!r})")
            continue
        if expect == "refused" and name not in sums_nothing:
            check(p.returncode == 2 and err.startswith("memreport: ") and
                  ("corrupt" in err or "over 2^63-1" in err or "beyond 2^62" in err),
                  f"{name}: refused with exit 2 and a reason (exit {p.returncode}: {err!r})")
            continue
        check(p.returncode == 0, f"{name}: exit 0 (exit {p.returncode}: {err!r})")
        if p.returncode != 0:
            continue
        data = open(path, "rb").read() if path else p.stdout
        outputs[name] = data
        if is_json:
            doc = json.loads(data)
            bad = [n for n in numbers(doc) if n < 0 or n > INT64_MAX]
            check(not bad, f"{name}: no negative or wrapped number in the JSON ({bad[:5]})")
        elif name != "flamegraph":  # its page holds script; its data is checked below
            m = NEGATIVE.search(data)
            check(m is None, f"{name}: no negative number in the text "
                  f"({data[max(0, m.start() - 60):m.end() + 20] if m else b''!r})")
    return outputs


def case_size_over(a, w):
    """Two blocks of 2^63 bytes and one of 100 (the sizes' sum wrapped to "100 B in
    total"): a size over 2^63-1 is a corrupt event chunk, every report says so."""
    run_reports(a, w, craft(a, w, "size-over"), "refused")


def case_size_sum_over(a, w):
    """Three blocks of 2^62 bytes: each size is fine, their sum is over 2^63-1; every
    report refuses the capture instead of printing a wrapped (negative) total."""
    run_reports(a, w, craft(a, w, "size-sum-over"), "refused", sums_nothing={"export csv"})


def case_size_max(a, w):
    """One block of 2^63-1 bytes: exact everywhere (no sum, no bucket bound wraps)."""
    out = run_reports(a, w, craft(a, w, "size-max"), "exact")
    if "summary --json" in out:
        s = json.loads(out["summary --json"])
        check(s.get("peak_bytes") == INT64_MAX and s.get("bytes_allocated") == INT64_MAX,
              f"summary --json: peak and total 2^63-1 ({s.get('peak_bytes')}, "
              f"{s.get('bytes_allocated')})")


def case_size_sum_max(a, w):
    """Blocks of 2^62 and 2^62-1 bytes at two sites: sums of exactly 2^63-1 are exact."""
    out = run_reports(a, w, craft(a, w, "size-sum-max"), "exact")
    if "summary --json" in out:
        s = json.loads(out["summary --json"])
        check(s.get("peak_bytes") == INT64_MAX and s.get("leaked_bytes") == INT64_MAX,
              f"summary --json: peak and leaked 2^63-1 ({s.get('peak_bytes')}, "
              f"{s.get('leaked_bytes')})")


def case_ts_negative(a, w):
    """Events 1.5 s and 1 s before the capture's start (live wrote bucket[-1]): every
    report answers or refuses, none crashes (UBSan builds: no finding)."""
    run_reports(a, w, craft(a, w, "ts-negative"), "survives")


def case_ts_extreme(a, w):
    """Events at -(2^62-1), 0 and 2^62-1 ns, the farthest a reader accepts: differences of
    times fit in int64 (massif's snapshot times overflowed before); live draws the last
    minutes without walking 2^62 ns of buckets."""
    run_reports(a, w, craft(a, w, "ts-extreme"), "survives")


def case_ts_over(a, w):
    """A block, then events at INT64_MIN and INT64_MAX ns (live died of SIGFPE, summary
    read it): a time beyond 2^62 ns is a corrupt chunk for every report."""
    run_reports(a, w, craft(a, w, "ts-over"), "refused")


def case_chunk_bomb(a, w):
    """20 chunks of about 1 KB, each claiming 4 M events (98 KB that took 7 GB to read): a
    count over what a writer puts in a chunk is refused before anything is decoded, within
    512 MiB of address space (not in sanitizer builds, which reserve terabytes)."""
    run_reports(a, w, craft(a, w, "chunk-bomb"), "refused",
                memory_mib=None if a.sanitized else 512)


def case_chunk_overlap(a, w):
    """200 chunks of 65,536 events, all one seq range (600 MB decoded, more than the 512 MiB
    allowed): every command, summary too, says out of memory with exit 3 (summary said 2);
    live, which reads a few chunks at a time, finds that they overlap."""
    if a.sanitized:
        print("SKIP: address space limits do not work under ASan")
        return 77
    run_reports(a, w, craft(a, w, "chunk-overlap"), "out of memory", memory_mib=512)


def case_long_name_flow(a, w):
    """A function name of 20 KiB: flow -o x.svg failed with Graphviz's "longer than 16384";
    the label shows its head and tail around an ellipsis, the tooltip the whole name, and
    flow --json keeps it whole. Skipped without Graphviz's dot."""
    if not shutil.which("dot"):
        print("SKIP: Graphviz's dot is not installed")
        return 77
    cap = craft(a, w, "long-name")
    db = sqlite3.connect(cap)
    name = db.execute("SELECT function FROM frame WHERE id = 2").fetchone()[0]
    db.close()
    check(len(name.encode()) == 20 * 1024 and '"\\' in name, "the crafted name: 20 KiB")
    p = subprocess.run([a.memreport, "flow", "--json", cap], capture_output=True, timeout=TIMEOUT)
    doc = json.loads(p.stdout) if p.returncode == 0 else {}
    names = [line.get("function") for n in doc.get("nodes", []) for line in n.get("lines", [])]
    check(name in names, f"flow --json: the name whole ({p.returncode}, {len(names)} lines)")
    svg = os.path.join(w, "flow.svg")
    p = subprocess.run([a.memreport, "flow", cap, "-o", svg], capture_output=True,
                       timeout=TIMEOUT)
    err = p.stderr.decode(errors="replace")  # Graphviz's message may cut a character
    if not check(p.returncode == 0, f"flow -o flow.svg: exit 0 ({p.returncode}: {err[:300]!r})"):
        return
    root = ElementTree.parse(svg).getroot()
    texts = ["".join(e.itertext()) for e in root.iter() if e.tag.endswith("text")]
    shown = [t for t in texts if t.startswith("long_")]
    check(len(shown) == 1 and "\u2026" in shown[0] and shown[0].endswith("_end (pool.c:20)") and
          len(shown[0].encode()) < 1100,
          f"the label: head, ellipsis, tail ({[t[:40] + '...' + t[-40:] for t in shown]})")
    titles = [v for e in root.iter() for k, v in e.attrib.items() if k.endswith("title")]
    check(any(name in t for t in titles), "the tooltip holds the whole name")


def process_dir(a, w, which):
    """A directory of two captures of `which`, as memtrace -o DIR/ leaves them."""
    d = os.path.join(w, "run")
    os.makedirs(d)
    for pid in (4242, 4243):
        subprocess.run([a.fixture, which, os.path.join(d, f"{pid}.prog.db")], check=True,
                       timeout=TIMEOUT)
    return d


def case_procs_sum_over(a, w):
    """Two processes of 2^63-1 bytes each, read together: their sum would wrap, so every
    report over the set refuses it (each process may allocate (2^63-1)/2), even where each
    read alone first stored its aggregates (docs/capture-format.md, "Aggregates")."""
    d = process_dir(a, w, "size-max")
    for name in sorted(os.listdir(d)):
        p = subprocess.run([a.memreport, "summary", os.path.join(d, name)], capture_output=True,
                           timeout=TIMEOUT)
        check(p.returncode == 0, f"summary {name} alone: exit 0 ({p.returncode})")
    run_reports(a, w, d, "refused", sums_nothing={"export csv"})


def case_procs_sum_max(a, w):
    """Two processes of 2^62-1 bytes each (their share of 2^63-1): sums exact."""
    out = run_reports(a, w, process_dir(a, w, "size-half"), "exact")
    if "summary --json" in out:
        total = json.loads(out["summary --json"]).get("total", {})
        check(total.get("sum_of_peaks_bytes") == 2 * (2**62 - 1),
              f"summary --json: the total of peaks is exact ({total.get('sum_of_peaks_bytes')})")


def npu_log(w, sizes):
    """An NPU memory-usage log (docs/npu-memory-usage-log.md) allocating buffers of these
    sizes in function main, each a step of its own."""
    path = os.path.join(w, "npu.log")
    head = "[TRACE] [memory-usage-info]   main: "
    lines = ['[DEBUG] [vpux-compiler] Start Pass StaticAllocation on Operation '
             'loc(fused<{name = "main", type = "Func"}>["main"])']
    total = 0
    for size in sizes:
        total += size
        lines += [f"{head}Buffer size to allocate      {size} B",
                  f"{head}DDR free memory before alloc 0 B",
                  f"{head}Max allocated size {min(total, INT64_MAX)} B",
                  f"{head}DDR used memory    {min(total, INT64_MAX)} 100.00%",
                  f"{head}DDR free memory    0 0.00%"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def case_npu_sum_over(a, w):
    """Three NPU buffers of 2^62 bytes (negative totals in every JSON before): the import
    refuses the log at the line whose buffer takes the sum over 2^63-1 (the second)."""
    log = npu_log(w, [2**62] * 3)
    cap = os.path.join(w, "npu.db")
    p = subprocess.run([a.memreport, "import", log, "-o", cap], capture_output=True,
                       text=True, timeout=TIMEOUT)
    check(p.returncode == 2 and "line 7: " in p.stderr and "over 2^63-1" in p.stderr,
          f"import refused at line 7, the second buffer ({p.returncode}: {p.stderr!r})")
    check(not os.path.exists(cap), "no capture left behind")


def case_npu_sum_max(a, w):
    """NPU buffers of 2^62 and 2^62-1 bytes: imported, every report exact."""
    cap = os.path.join(w, "npu.db")
    p = subprocess.run([a.memreport, "import", npu_log(w, [2**62, 2**62 - 1]), "-o", cap],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if not check(p.returncode == 0, f"imported ({p.returncode}: {p.stderr!r})"):
        return
    out = run_reports(a, w, cap, "exact")
    if "summary --json" in out:
        s = json.loads(out["summary --json"])
        check(s.get("peak_bytes") == INT64_MAX, f"summary --json: peak 2^63-1 ({s.get('peak_bytes')})")


def main():
    cases = {n[len("case_"):]: f for n, f in globals().items() if n.startswith("case_")}
    if "--list" in sys.argv[1:]:
        print("\n".join(sorted(cases)))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--memreport", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--sanitized", action="store_true", help="memreport built with ASan")
    ap.add_argument("case", choices=sorted(cases))
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    r = cases[a.case](a, a.workdir)
    if failures:
        return 1
    return r or 0


if __name__ == "__main__":
    sys.exit(main())
