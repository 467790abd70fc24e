#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Golden outputs of every memreport report on deterministic captures.

Usage: run_golden.py MEMREPORT FIXTURE_TOOLS... OUTDIR [--update]

FIXTURE_TOOLS are the reports_fixture and reports_deep_fixture programs (tests/reports/):
they write the standard, hostile-names and deep captures. The NPU logs of
tests/fixtures/npu are imported with `memreport import`. Every case below runs one
subcommand on one capture, and its output must equal tests/golden/expected/NAME byte for
byte; a mismatch prints a unified diff (first 40 lines) and fails. --update rewrites the
expected files (and removes those no case writes any more).

Each run starts from an empty OUTDIR/work; captures are named relative to it, so no output
holds a path, except what the normalisations below take out:
  - the NPU import stores its log's absolute path ('source' in summary and summary --json):
    the work directory is replaced by @WORK@;
  - SVG plots (cairo): the <defs> block holds the font's glyph outlines (DejaVu Sans, from
    fonts-dejavu-core), ~60 KiB a picture and not memreport's output; it is replaced by its
    sha256, so the drawing itself (paths, glyph positions) is compared in full;
  - flame graph pages: only the JSON data (<script id="fg-data">) is stored, the page around
    it by its sha256 (the same page for every capture).
PNG plots are not compared: the same drawing code writes the SVG, and a PNG's bytes also
depend on the freetype and zlib builds.

The first report on a capture stores its aggregates in it (reporter/model/aggregates.h),
with a checkpoint every 2 events (reporter/model/checkpoints.h, MEMREPORT_CHECKPOINT_EVENTS),
and the later ones read them; then every case runs again with --replay, reading every event,
and must give the same bytes.
"""
import difflib
import hashlib
import os
import re
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "expected")
NPU_LOGS = os.path.join(HERE, "..", "fixtures", "npu")
NPU_CAPTURES = ("sample", "corner", "legacy_2025")
NATIVE_CAPTURES = ("std", "hostile", "deep")
DIFF_LINES = 40
# The same environment wherever it runs: no symbol cache shared with the user, C locale.
ENV = dict(os.environ, MEMTRACE_SYMBOL_CACHE="0", LC_ALL="C", MEMREPORT_CHECKPOINT_EVENTS="2")

# Suppressions for the leaks case: one pattern that matches a group, one that matches none
# (its warning goes to stderr, which is compared too).
SUPPRESSIONS = "# golden\nleak:cache_put\nno_such_function\n"


def text_cases():
    """(name, argv) of the reports written to stdout."""
    cases = []
    for cap in NATIVE_CAPTURES + NPU_CAPTURES:
        db = cap + ".db"
        for cmd in ("summary", "stacks", "leaks", "stats"):
            cases.append((f"{cap}.{cmd}.txt", [cmd, db]))
            cases.append((f"{cap}.{cmd}.json", [cmd, db, "--json"]))
    # The options that change what is shown. On the standard capture: the deep one's
    # 150-frame stacks would make these files large without covering more code.
    for fmt, extra in (("txt", []), ("json", ["--json"])):
        cases += [
            (f"std.stacks.top2.{fmt}", ["stacks", "std.db", "--top", "2"] + extra),
            (f"std.leaks.top1.{fmt}", ["leaks", "std.db", "--top", "1"] + extra),
            (f"std.stats.top2.{fmt}", ["stats", "std.db", "--top", "2"] + extra),
            (f"std.stats.stacks.{fmt}", ["stats", "std.db", "--stacks"] + extra),
            (f"std.stacks.all-frames.{fmt}", ["stacks", "std.db", "--all-frames"] + extra),
            (f"std.leaks.all-frames.{fmt}", ["leaks", "std.db", "--all-frames"] + extra),
            (f"std.stats.all-frames.{fmt}", ["stats", "std.db", "--all-frames"] + extra),
            (f"std.leaks.suppressions.{fmt}",
             ["leaks", "std.db", "--suppressions", "golden.supp"] + extra),
        ]
        # top: the function table per metric, callers and callees, escaped names, NPU.
        cases += [
            (f"std.top.{fmt}", ["top", "std.db"] + extra),
            (f"std.top.allocated.calls.{fmt}", ["top", "std.db", "--metric", "allocated",
                                                "--callers", "make_node", "--callees",
                                                "make_node"] + extra),
            (f"std.top.count.total.{fmt}", ["top", "std.db", "--metric", "count", "--sort",
                                            "total"] + extra),
            (f"std.top.leaked.all-frames.{fmt}", ["top", "std.db", "--metric", "leaked",
                                                  "--all-frames"] + extra),
            (f"hostile.top.{fmt}", ["top", "hostile.db", "--metric", "leaked"] + extra),
            (f"corner.top.allocated.{fmt}", ["top", "corner.db", "--metric", "allocated"] + extra),
        ]
        # At chosen moments and a range's peak: from the checkpoint before them.
        cases += [
            (f"std.top.at-5us.{fmt}", ["top", "std.db", "--at", "5us"] + extra),
            (f"std.flow.at.{fmt}", ["flow", "std.db", "--at", "3us", "--at", "peak",
                                    "--at", "12500ns"] + extra),
            (f"std.top.range.{fmt}", ["top", "std.db", "--range", "4us..11us"] + extra),
        ]
    return cases


def file_cases():
    """(name, argv, output file) of the reports written to a file: plots and flame graphs."""
    cases = []
    for cap in ("std", "sample", "corner", "legacy_2025"):
        cases.append((f"{cap}.plot.svg", ["plot", cap + ".db", "-o", "OUT.svg"], "svg"))
        cases.append((f"{cap}.plot.data.json",
                      ["plot", cap + ".db", "-o", "OUT.svg", "--data", "OUT.json"], "json"))
    cases += [
        ("corner-log.plot.data.json",
         ["plot", "corner.log", "-o", "OUT.svg", "--data", "OUT.json"], "json"),
        ("std.plot.sites2.svg", ["plot", "std.db", "--sites", "2", "-o", "OUT.svg"], "svg"),
        ("std.plot.sites2.data.json",
         ["plot", "std.db", "--sites", "2", "-o", "OUT.svg", "--data", "OUT.json"], "json"),
        ("std.plot.site.data.json",
         ["plot", "std.db", "--site", "cache_put", "--site", "worker", "-o", "OUT.svg",
          "--data", "OUT.json"], "json"),
    ]
    flame = [
        ("std", "peak", []), ("std", "leaks", ["--leaks"]), ("std", "at-9us", ["--at", "9us"]),
        ("std", "split-threads", ["--split-threads"]), ("std", "all-frames", ["--all-frames"]),
        ("std", "inverted-bottom", ["--inverted", "--orientation", "bottom"]),
        ("std", "temporal", ["--temporal"]),
        ("hostile", "peak", []), ("deep", "peak", []),
        ("deep", "min-width", ["--min-width", "0.2"]),
        ("sample", "peak", []), ("sample", "at-step2", ["--at", "step 2"]),
        ("corner", "leaks", ["--leaks"]),
    ]
    for cap, what, extra in flame:
        cases.append((f"{cap}.flamegraph.{what}.txt",
                      ["flamegraph", cap + ".db", "-o", "OUT.html"] + extra, "html"))
    for cap in ("std", "hostile"):
        cases.append((f"{cap}.view.txt", ["view", cap + ".db", "-o", "OUT.html"], "html"))
    return cases


def make_captures(memreport, tools, work):
    for tool in tools:
        base = os.path.basename(tool)
        if "deep" in base:
            subprocess.run([tool, "deep.db"], cwd=work, env=ENV, check=True)
        else:
            subprocess.run([tool, "std.db"], cwd=work, env=ENV, check=True)
            subprocess.run([tool, "--hostile", "hostile.db"], cwd=work, env=ENV, check=True)
    for name in NPU_CAPTURES:
        shutil.copy(os.path.join(NPU_LOGS, name + ".log"), work)
        subprocess.run([memreport, "import", name + ".log", "-o", name + ".db"], cwd=work,
                       env=ENV, check=True, stderr=subprocess.DEVNULL)
    with open(os.path.join(work, "golden.supp"), "w") as f:
        f.write(SUPPRESSIONS)
    missing = [c for c in NATIVE_CAPTURES + NPU_CAPTURES
               if not os.path.exists(os.path.join(work, c + ".db"))]
    if missing:
        sys.exit(f"run_golden: no fixture tool wrote {', '.join(missing)}")


def normalise_svg(data):
    m = re.search(rb"<defs>.*?</defs>", data, re.S)
    if not m:
        return data
    digest = hashlib.sha256(m.group(0)).hexdigest()
    return data[:m.start()] + b"<defs><!-- glyph outlines, sha256 " + digest.encode() + \
        b" --></defs>" + data[m.end():]


FG_OPEN = b'<script type="application/json" id="fg-data">'


def normalise_flamegraph(page):
    """The page's JSON data, after a line with the sha256 of the page around it."""
    start = page.find(FG_OPEN)
    if start < 0 or page.count(FG_OPEN) != 1:
        return b"no single fg-data block in the page\n" + page
    start += len(FG_OPEN)
    end = page.find(b"</script>", start)
    if end < 0:
        return b"fg-data block not closed\n" + page
    around = page[:start] + b"@DATA@" + page[end:]
    digest = hashlib.sha256(around).hexdigest()
    return b"page around the data: sha256 " + digest.encode() + b"\n" + page[start:end] + b"\n"


def run_case(memreport, work, argv, output_kind=None):
    """Runs one case; returns {suffix: bytes} of what is compared ("" for the main output)."""
    out_name = {"svg": "OUT.svg", "json": "OUT.json", "html": "OUT.html"}.get(output_kind)
    for f in ("OUT.svg", "OUT.json", "OUT.html"):
        if os.path.exists(os.path.join(work, f)):
            os.remove(os.path.join(work, f))
    p = subprocess.run([memreport] + argv, cwd=work, env=ENV, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    result = {}
    if output_kind:
        path = os.path.join(work, out_name)
        data = open(path, "rb").read() if os.path.exists(path) else b""
        if output_kind == "svg":
            data = normalise_svg(data)
        elif output_kind == "html":
            data = normalise_flamegraph(data)
        result[""] = data
        # "memreport: wrote FILE" lines name the work files: not compared.
        stderr = b"".join(line for line in p.stderr.splitlines(True)
                          if not line.startswith(b"memreport: wrote "))
    else:
        result[""] = p.stdout
        stderr = p.stderr
    work_abs = os.path.realpath(work).encode()
    result = {k: v.replace(work_abs, b"@WORK@") for k, v in result.items()}
    if stderr:
        result[".stderr"] = stderr.replace(work_abs, b"@WORK@")
    return p.returncode, result


def stored_aggregates(work):
    """The names of the captures that hold no stored aggregates or checkpoints after the
    reports."""
    missing = []
    for cap in NATIVE_CAPTURES + NPU_CAPTURES:
        db = sqlite3.connect(os.path.join(work, cap + ".db"))
        for table in ("aggregate", "checkpoint"):
            try:
                n = db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            except sqlite3.Error:
                n = 0
            if not n:
                print(f"FAIL {cap}.db: no {table} rows stored by its reports")
                missing.append(f"{cap}.db ({table})")
        db.close()
    return missing


def show_diff(name, expected, actual):
    diff = difflib.unified_diff(expected.decode("utf-8", "backslashreplace").splitlines(True),
                                actual.decode("utf-8", "backslashreplace").splitlines(True),
                                "expected/" + name, "actual/" + name)
    lines = list(diff)
    sys.stdout.write("".join(lines[:DIFF_LINES]))
    if lines and not lines[-1].endswith("\n"):
        sys.stdout.write("\n")
    if len(lines) > DIFF_LINES:
        print(f"... ({len(lines) - DIFF_LINES} more diff lines)")


def main():
    args = sys.argv[1:]
    update = "--update" in args
    args = [a for a in args if a != "--update"]
    if len(args) < 3:
        sys.exit(__doc__.split("\n\n")[1])
    memreport, tools, outdir = os.path.abspath(args[0]), args[1:-1], args[-1]
    tools = [os.path.abspath(t) for t in tools]
    work = os.path.join(outdir, "work")
    actual_dir = os.path.join(outdir, "actual")
    for d in (work, actual_dir):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    make_captures(memreport, tools, work)

    cases = [(n, a, None) for n, a in text_cases()] + file_cases()
    failures = []
    written = set()
    first = {}
    for name, argv, kind in cases:
        rc, result = run_case(memreport, work, argv, kind)
        first[name] = (rc, result)
        if rc != 0:
            failures.append(name)
            print(f"FAIL {name}: memreport {' '.join(argv)} exited {rc}")
            sys.stdout.write(result.get(".stderr", b"").decode("utf-8", "backslashreplace"))
            continue
        for suffix, actual in result.items():
            fname = name + suffix
            written.add(fname)
            with open(os.path.join(actual_dir, fname), "wb") as f:
                f.write(actual)
            exp_path = os.path.join(EXPECTED, fname)
            expected = open(exp_path, "rb").read() if os.path.exists(exp_path) else None
            if expected == actual:
                continue
            if update:
                os.makedirs(EXPECTED, exist_ok=True)
                with open(exp_path, "wb") as f:
                    f.write(actual)
                print(f"updated {fname}")
                continue
            failures.append(fname)
            print(f"FAIL {fname}: memreport {' '.join(argv)}"
                  + (" (no expected file)" if expected is None else ""))
            show_diff(fname, expected or b"", actual)
    # The first report on each capture stored its aggregates, which the later ones read:
    # every case again reading every event must give the same bytes.
    failures += stored_aggregates(work)
    for name, argv, kind in cases:
        again = run_case(memreport, work, ["--replay"] + argv, kind)
        if again != first[name]:
            failures.append(name + " (--replay)")
            print(f"FAIL {name}: memreport --replay {' '.join(argv)} differs from the report"
                  " read from the stored aggregates")
            show_diff(name, first[name][1].get("", b""), again[1].get("", b""))
    # An expected file that no case writes: a case (or its stderr) went away.
    for fname in sorted(os.listdir(EXPECTED)) if os.path.isdir(EXPECTED) else []:
        if fname in written:
            continue
        if update and not failures:
            os.remove(os.path.join(EXPECTED, fname))
            print(f"removed {fname}")
        else:
            failures.append(fname)
            print(f"FAIL {fname}: expected, but no case wrote it")
    total = len(written)
    if failures:
        print(f"run_golden: {len(failures)} of {total} outputs differ (actual outputs in "
              f"{actual_dir}; after an intended change: --update)")
        return 1
    print(f"run_golden: {total} outputs of {len(cases)} cases as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
