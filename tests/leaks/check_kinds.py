#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The leak scan against valgrind's memcheck on tests/leaks/kinds.c (one block of each kind,
# each from a function of its own): per kind and allocating function, the bytes and blocks
# of the capture's verdicts (the leak table) equal `valgrind --leak-check=full
# --show-leak-kinds=all`'s loss records. Blocks the C runtime allocates (the DTV a
# pthread_create makes) are compared by kind and count: their size depends on the modules
# loaded, and libmemtrace.so adds modules with TLS. Also: the program's exit status and
# output are those of the untraced run; MEMTRACE_LEAKS=0 and a sampled capture say in meta
# why no scan ran. The reports agree with the table: leaks (per kind, --kind), summary, diff's
# --fail-if gate, flamegraph --leaks --kind, export --format csv. Exits 77 where valgrind is
# missing.
import argparse
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import capture_meta, check, clean_env, finish, fresh_dir, skip_without  # noqa: E402,E501

PROG_FUNCS = {"lose_one", "lose_list", "fill_cache", "keep_interior", "keep_in_tls",
              "hide_by_xor", "keep_in_file", "keep_in_shared", "hold_in_stack", "main"}
ALLOCATORS = {"malloc", "calloc", "realloc", "memalign", "posix_memalign", "aligned_alloc"}
KINDS = {"definitely lost": "definitely_lost", "indirectly lost": "indirectly_lost",
         "possibly lost": "possibly_lost", "still reachable": "still_reachable"}
RECORD = re.compile(r"==\d+== ([\d,]+) (?:\(([\d,]+) direct, [\d,]+ indirect\) )?bytes in "
                    r"([\d,]+) blocks are (definitely lost|indirectly lost|possibly lost|"
                    r"still reachable) in loss record")
FRAME = re.compile(r"==\d+==    (?:at|by) 0x[0-9A-F]+: (\S+)")


def number(s):
    return int(s.replace(",", ""))


def add(table, key, size, blocks):
    b, n = table.get(key, (0, 0))
    table[key] = (b + size, n + blocks)


def memcheck(prog):
    """memcheck's loss records as {(kind, allocating function): (bytes, blocks)}."""
    p = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=all",
                        "--num-callers=40", prog], capture_output=True, text=True,
                       env=clean_env())
    table, key = {}, None
    for line in p.stderr.splitlines():
        m = RECORD.search(line)
        if m:
            size = number(m.group(2) or m.group(1))
            key = [KINDS[m.group(4)], size, number(m.group(3))]
            continue
        f = FRAME.search(line)
        if key and f and f.group(1) not in ALLOCATORS:
            add(table, (key[0], f.group(1)), key[1], key[2])
            key = None
    return table


def capture(memreport, db):
    """The capture's verdicts as {(kind, allocating function): (bytes, blocks)}."""
    q = ("SELECT k.name, a.size, (SELECT function FROM stacks s WHERE s.callsite = a.callsite"
         " AND s.depth = 0) FROM leak l JOIN allocations a ON a.seq = l.seq"
         " JOIN leak_kind k ON k.id = l.kind")
    out = subprocess.run([memreport, "sql", db, q, "--csv"], capture_output=True, text=True,
                         check=True).stdout.splitlines()[1:]
    table = {}
    for line in out:
        kind, size, func = line.split(",")
        add(table, (kind, func), int(size), 1)
    return table


def split(table):
    """The program's own blocks, and the runtime's block counts per kind."""
    own = {k: v for k, v in table.items() if k[1] in PROG_FUNCS}
    runtime = {}
    for (kind, func), (_, n) in table.items():
        if func not in PROG_FUNCS:
            runtime[kind] = runtime.get(kind, 0) + n
    return own, runtime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--memreport", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    skip_without("valgrind")
    fresh_dir(a.workdir)
    db = os.path.join(a.workdir, "kinds.db")
    plain = subprocess.run([a.prog], capture_output=True, env=clean_env())
    traced = subprocess.run([a.prog], capture_output=True,
                            env=clean_env(OUTPUT=db) | {"LD_PRELOAD": a.lib})
    check(traced.returncode == plain.returncode == 0, "exit status as untraced (0)")
    check(traced.stdout == plain.stdout and traced.stderr == plain.stderr,
          "output as untraced")
    meta = capture_meta(db)
    check(meta.get("leak_scan") == "complete", f"scan complete ({meta.get('leak_scan_why')})")
    check(meta.get("leak_scan_where") == "copy",
          f"another thread left: scanned in a copy ({meta.get('leak_scan_where')})")
    ours, theirs = split(capture(a.memreport, db)), split(memcheck(a.prog))
    for key in sorted(set(ours[0]) | set(theirs[0])):
        check(ours[0].get(key) == theirs[0].get(key),
              f"{key[0]} from {key[1]}: (bytes, blocks) {ours[0].get(key)} as memcheck's "
              f"{theirs[0].get(key)}")
    check(ours[1] == theirs[1], f"runtime blocks per kind {ours[1]} as memcheck's {theirs[1]}")

    reports(a.memreport, db, ours[0], a.workdir)
    in_place(a, theirs[0])
    before_writer(a, theirs[0])

    for name, settings, why in [("off", {"LEAKS": 0}, "MEMTRACE_LEAKS=0"),
                                ("sampled", {"SAMPLE_BYTES": 64}, "sampled")]:
        off = os.path.join(a.workdir, f"{name}.db")
        subprocess.run([a.prog], capture_output=True,
                       env=clean_env(OUTPUT=off, **settings) | {"LD_PRELOAD": a.lib})
        m = capture_meta(off)
        check(m.get("leak_scan") == "not run" and why in m.get("leak_scan_why", ""),
              f"{name}: no scan, and why: {m.get('leak_scan_why')}")
        r = subprocess.run([a.memreport, "leaks", off, "--kind", "definite"], capture_output=True,
                           text=True)
        check(r.returncode == 2 and why in r.stderr, f"{name}: leaks --kind refused: {r.stderr}")
    finish()


def in_place(a, theirs):
    """The program's last thread exits (`alone`): the scan is made in place, with the same
    verdicts (but the block only the other thread's stack held, which it never allocated)."""
    db = os.path.join(a.workdir, "in_place.db")
    r = subprocess.run([a.prog, "alone"], capture_output=True,
                       env=clean_env(OUTPUT=db) | {"LD_PRELOAD": a.lib})
    check(r.returncode == 0, f"in place: exit status 0 ({r.returncode})")
    meta = capture_meta(db)
    check(meta.get("leak_scan") == "complete" and meta.get("leak_scan_where") == "in place",
          f"in place: the scan complete, in place ({meta.get('leak_scan')}, "
          f"{meta.get('leak_scan_where')}, {meta.get('leak_scan_why')!r})")
    want = {k: v for k, v in theirs.items() if k[1] != "hold_in_stack"}
    got = split(capture(a.memreport, db))[0]
    check(got == want, f"in place: {got} as memcheck's {want}")


def before_writer(a, theirs):
    """The program ends before the tracer's writer thread ever ran (on one core at a real-time
    priority, which the writer thread inherits, a program that never blocks keeps the core;
    without the exit watcher, whose start waits for a child): the capture is written and
    scanned on the program's thread, with the same verdicts."""
    db = os.path.join(a.workdir, "alone.db")
    env = clean_env(OUTPUT=db, EXIT_WATCH=0) | {"LD_PRELOAD": a.lib}
    r = subprocess.run(["chrt", "-f", "1", "taskset", "-c", "0", "env", *env_args(env), a.prog,
                        "alone"], capture_output=True, text=True, env=clean_env())
    if r.returncode and "chrt" in r.stderr:
        print(f"skip: no real-time priority here ({r.stderr.strip()}): the scan before the "
              "writer thread ran is not checked")
        return
    check(r.returncode == 0, f"alone: exit status 0 ({r.returncode}, {r.stderr.strip()})")
    want = {k: v for k, v in theirs.items() if k[1] != "hold_in_stack"}
    got = split(capture(a.memreport, db))[0]
    check(got == want, f"alone, before the writer thread ran: {got} as memcheck's {want}")


def env_args(env):
    """`env`'s settings for the tracer, as env(1)'s NAME=VALUE arguments."""
    return [f"{k}={v}" for k, v in env.items() if k.startswith("MEMTRACE_") or k == "LD_PRELOAD"]


def reports(memreport, db, own, work):
    """Every report's kinds are the leak table's (the program's blocks: the runtime's DTV is
    apart in each)."""
    totals = {}
    for (kind, _), (b, n) in own.items():
        add(totals, kind, b, n)
    mr = lambda *args: subprocess.run([memreport, *args], capture_output=True, text=True)
    leaks = json.loads(mr("leaks", db, "--json").stdout)
    got = {k: (v["bytes"], v["blocks"]) for k, v in leaks["kinds"].items() if v["blocks"]}
    check(got == totals, f"leaks --json kinds {got} as the table's {totals}")
    firsts = [g["kind"] for g in leaks["groups"]]
    check(firsts == sorted(firsts, key=["definitely_lost", "indirectly_lost", "possibly_lost",
                                        "still_reachable"].index), "leaks: groups in memcheck's order")
    only = json.loads(mr("leaks", db, "--json", "--kind", "reachable").stdout)["groups"]
    check(only and all(g["kind"] == "still_reachable" for g in only),
          f"leaks --kind reachable: {len(only)} groups, all still reachable")
    text = mr("leaks", db).stdout
    check(f"definitely lost: {totals['definitely_lost'][0]} B" in text and
          "Definitely lost:" in text, "leaks: a section and a totals line per kind")
    summary = json.loads(mr("summary", db, "--json").stdout)
    got = {k: (v["bytes"], v["blocks"]) for k, v in summary["leak_kinds"].items() if v["blocks"]}
    check(got == totals, f"summary --json leak_kinds {got} as the table's")
    definite = totals["definitely_lost"][0]
    gate = [mr("diff", db, db, "--fail-if", f"definitely_lost_bytes>{n}").returncode
            for n in (definite - 1, definite)]
    check(gate == [4, 0], f"diff --fail-if definitely_lost_bytes>{definite - 1} fails, "
          f">{definite} passes: {gate}")
    page = os.path.join(work, "fg.html")
    r = mr("flamegraph", db, "--leaks", "--kind", "definite", "-o", page, "-f")
    html = open(page).read() if r.returncode == 0 else ""
    m = re.search(r'id="fg-data">(.*?)</script>', html, re.S)
    total = json.loads(m.group(1))["total_bytes"] if m else None
    check(total == definite, f"flamegraph --leaks --kind definite: {total} bytes")
    csv = os.path.join(work, "kinds.csv")
    mr("export", db, "--format", "csv", "-o", csv, "-f")
    in_csv = {}
    for kind in re.findall(r"leak_kind:([a-z_]+)", open(csv).read() if os.path.exists(csv) else ""):
        in_csv[kind] = in_csv.get(kind, 0) + 1
    rows = mr("sql", db, "SELECT k.name, count(*) FROM leak l JOIN leak_kind k ON k.id = l.kind"
              " GROUP BY k.name", "--csv").stdout.splitlines()[1:]
    table = {k: int(n) for k, n in (r.split(",") for r in rows)}
    check(in_csv == table, f"export csv: leak_kind per block {in_csv} as the table's {table}")


if __name__ == "__main__":
    main()
