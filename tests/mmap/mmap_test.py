#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# MEMTRACE_MMAP=1 on mmap_prog.c, whose truth is known: the mmap heap's peak (64 MiB) and
# what is live at its end (48 MiB in one mapping), every event of a partial munmap, a hole
# and an mremap, the file mapping counted apart, the libc heap's numbers the same as without
# the setting (glibc's own mmap of a 40 MiB malloc is not counted twice), the reports that
# take --heap mmap; without the setting nothing about mmap is recorded. The program's output
# and exit status are those of an untraced run in every case.
# Usage: mmap_test.py MEMTRACE_LIB MEMREPORT PROG WORKDIR CASE | --list
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, finish, runner  # noqa: E402

CASES = ("truth", "events", "libc_unchanged", "reports", "off")
MIB = 1024 * 1024
PAGE = os.sysconf("SC_PAGESIZE")


def run_prog(prog, work, name, env_extra):
    """Runs the program (traced when env_extra sets LD_PRELOAD); returns (stdout, status)."""
    env = dict(os.environ)
    env.pop("MEMTRACE_MMAP", None)
    env.update(env_extra)
    p = subprocess.run([prog, os.path.join(work, name + ".file")], capture_output=True,
                       text=True, env=env, timeout=120)
    return p.stdout, p.returncode


def traced(lib, prog, work, name, mmap):
    db = os.path.join(work, name + ".db")
    env = {"LD_PRELOAD": lib, "MEMTRACE_OUTPUT": db}
    if mmap:
        env["MEMTRACE_MMAP"] = "1"
    out, status = run_prog(prog, work, name, env)
    return db, out, status


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return
    lib, memreport, prog, work, case = sys.argv[1:6]
    work = os.path.join(work, case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    mr = runner(memreport)
    native = run_prog(prog, work, "native", {})
    check(native[1] == 7 and native[0].startswith("checksum "), f"untraced run: {native}")
    db, out, status = traced(lib, prog, work, "mmap", mmap=case != "off")
    check((out, status) == native, f"traced output and status unchanged: {(out, status)}")

    if case == "truth":
        s = json.loads(mr("summary", db, "--json"))
        m = s.get("mmap", {})
        check(m.get("peak_bytes") == 64 * MIB, f"mmap peak is 64 MiB: {m}")
        check(m.get("live_bytes") == 48 * MIB, f"48 MiB live at the end: {m}")
        check(m.get("live_mappings") == 1, f"in one mapping: {m}")
        check(m.get("file_mappings") == 1 and m.get("file_bytes") == 3 * PAGE,
              f"the 3-page file mapping counted apart: {m}")
        h = json.loads(mr("summary", db, "--heap", "mmap", "--json"))
        check(h["peak_bytes"] == 64 * MIB and h["leaked_bytes"] == 48 * MIB,
              f"summary --heap mmap: peak and live at the end: {h['peak_bytes']}, "
              f"{h['leaked_bytes']}")
        check(h["unmatched_frees"] == 0, f"every munmap matched: {h['unmatched_frees']}")
        text = mr("summary", db)
        check("mmap:         peak 64.00 MiB" in text and "48.00 MiB in 1 mapping" in text,
              "the text summary tells the mmap heap")
    elif case == "events":
        con = sqlite3.connect(db)
        heaps = con.execute("SELECT id, name FROM heap ORDER BY id").fetchall()
        check(heaps == [(1, "libc"), (3, "mmap")], f"heaps: {heaps}")
        con.close()
        rows = json.loads(mr("sql", db, "--json", "SELECT kind, size FROM events WHERE heap = 3"
                             " ORDER BY seq"))
        got = [(r["kind"], r["size"]) for r in rows]
        want = [("mmap", 64 * MIB), ("munmap", 0), ("mmap", 32 * MIB),  # upper half unmapped
                ("mremap_free", 0), ("mremap", 48 * MIB),
                ("mmap", 8 * PAGE), ("munmap", 0), ("mmap", 2 * PAGE), ("mmap", 4 * PAGE),
                ("munmap", 0), ("munmap", 0)]  # the hole, then both parts at once
        check(got == want, f"mmap heap events: {got}")
        stacks = mr("sql", db, "SELECT DISTINCT s.function FROM events e JOIN stacks s"
                    " ON s.callsite = e.callsite WHERE e.heap = 3 AND s.depth = 0")
        check("map_anonymous" in stacks and "grow" in stacks,
              f"stacks lead to the program's calls: {stacks}")
    elif case == "libc_unchanged":
        plain, out2, status2 = traced(lib, prog, work, "plain", mmap=False)
        check((out2, status2) == native, "output and status unchanged without MEMTRACE_MMAP")
        keys = ("events", "allocations", "frees", "bytes_allocated", "peak_bytes",
                "leaked_bytes", "leaked_allocations", "unmatched_frees")
        a = json.loads(mr("summary", db, "--json"))
        b = json.loads(mr("summary", plain, "--json"))
        check({k: a[k] for k in keys} == {k: b[k] for k in keys},
              f"libc heap the same with and without MEMTRACE_MMAP: "
              f"{ {k: a[k] for k in keys} } vs { {k: b[k] for k in keys} }")
        check(a["peak_bytes"] >= 40 * MIB and a["peak_bytes"] < 41 * MIB,
              f"the 40 MiB malloc is in the libc heap: {a['peak_bytes']}")
    elif case == "reports":
        data = os.path.join(work, "plot.json")
        mr("plot", db, "--heap", "mmap", "-o", os.path.join(work, "plot.png"), "--data", data)
        with open(data) as f:
            peak = json.load(f)["peak"]
        check(peak.get("bytes") == 64 * MIB, f"plot --heap mmap: peak 64 MiB: {peak}")
        html = os.path.join(work, "fg.html")
        mr("flamegraph", db, "--heap", "mmap", "--leaks", "-o", html)
        with open(html) as f:
            page = f.read()
        check("grow" in page and "map_anonymous" not in page,
              "flamegraph --heap mmap --leaks: the mremap'd mapping only")
        mr("flamegraph", db, "--heap", "mmap", "-o", html, "-f")
        with open(html) as f:
            page = f.read()
        check("map_anonymous" in page, "flamegraph --heap mmap at the peak: the 64 MiB mmap")
    elif case == "off":
        con = sqlite3.connect(db)
        heaps = con.execute("SELECT id FROM heap").fetchall()
        n = con.execute("SELECT count(*) FROM event_chunk WHERE heap <> 1").fetchone()[0]
        meta = con.execute("SELECT count(*) FROM meta WHERE key LIKE 'mmap%'").fetchone()[0]
        con.close()
        check(heaps == [(1,)] and n == 0 and meta == 0,
              f"nothing about mmap recorded: heaps {heaps}, chunks {n}, meta {meta}")
        check("mmap" not in json.loads(mr("summary", db, "--json")),
              "summary has no mmap section")
        p = subprocess.run([memreport, "summary", db, "--heap", "mmap"], capture_output=True,
                           text=True)
        check(p.returncode == 2 and "no heap named 'mmap'" in p.stderr,
              f"summary --heap mmap refused: {p.returncode} {p.stderr.strip()}")
    finish()


if __name__ == "__main__":
    main()
