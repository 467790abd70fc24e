#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport sql and the memtrace_sqlite extension on real captures: the report fixture, a
# synthetic multi-thread capture (interleaved chunks) and, when given, a traced program and
# python3 traced.
# Checks events against summary's counts, allocations against leaks, seq/ts pushdown
# against a full scan filtered here, --csv and --json read back, read-only opening, and
# the extension in the sqlite3 shell (skipped, exit 77, only when sqlite3 is missing).
# Usage: check_sql.py MEMREPORT FIXTURE GEN_CAPTURE EXTENSION WORKDIR [LAUNCHER PROG]
import csv
import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import callsite_rows, check, failures, old_layout  # noqa: E402

KINDS_ALLOC = ("malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
               "aligned_alloc", "memalign", "valloc", "pvalloc", "custom_alloc", "npu_alloc")
KINDS_FREE = ("realloc_free", "reallocarray_free", "free", "free_sized", "free_aligned_sized",
              "custom_free", "npu_free")


def run(args, stdin=None, ok=True):
    p = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if ok and p.returncode != 0:
        raise SystemExit("command failed (%d): %r\n%s" % (p.returncode, args, p.stderr))
    return p


def sql_csv(memreport, cap, query):
    out = run([memreport, "sql", cap, query, "--csv"]).stdout
    return list(csv.reader(io.StringIO(out, newline="")))


def in_list(kinds):
    return "(" + ",".join("'%s'" % k for k in kinds) + ")"


def check_counts(memreport, cap, name):
    summary = json.loads(run([memreport, "summary", cap, "--json"]).stdout)
    rows = sql_csv(memreport, cap, "select count(*), coalesce(sum(size), 0) from events"
                   " where kind in " + in_list(KINDS_ALLOC))
    check(rows[1] == [str(summary["allocations"]), str(summary["bytes_allocated"])],
          "%s: alloc events %r = summary's allocations %d, bytes %d" %
          (name, rows[1], summary["allocations"], summary["bytes_allocated"]))
    if "malloc" in summary.get("calls", {}):  # the call counts of a traced capture
        rows = sql_csv(memreport, cap, "select count(*) from events where kind = 'malloc'")
        # CPython's PyMem_Malloc and PyObject_Malloc are malloc events of heap python.
        mallocs = summary["calls"]["malloc"] + summary["calls"].get("python_malloc", 0)
        check(rows[1] == [str(mallocs)], "%s: malloc events %r = summary's malloc calls %d"
              " (python's included)" % (name, rows[1], mallocs))
    rows = sql_csv(memreport, cap, "select count(*) from events where kind in " +
                   in_list(KINDS_FREE))
    check(rows[1] == [str(summary["frees"])],
          "%s: free events %r = summary's frees %d" % (name, rows[1], summary["frees"]))
    rows = sql_csv(memreport, cap, "select count(*) from events")
    check(rows[1] == [str(summary["events"])], "%s: all events %r = %d" %
          (name, rows[1], summary["events"]))
    # Each kind by itself, the kind names the schema's map has.
    per_kind = sql_csv(memreport, cap, "select kind, count(*), sum(size) from events"
                       " group by kind")[1:]
    check(all(k in KINDS_ALLOC + KINDS_FREE for k, _, _ in per_kind),
          "%s: kinds are named: %r" % (name, [k for k, _, _ in per_kind]))
    check(sum(int(n) for k, n, _ in per_kind if k in KINDS_ALLOC) == summary["allocations"],
          "%s: per-kind allocation counts add up" % name)
    # Every allocation once; the unfreed ones are the program's leaks and the C runtime's
    # blocks, which summary counts apart.
    rows = sql_csv(memreport, cap, "select count(*), count(freed_ts), coalesce(sum(size) filter"
                   " (where freed_ts is null), 0), count(*) filter (where freed_ts is null)"
                   " from allocations")
    total, freed, leaked_bytes, leaked = (int(x) for x in rows[1])
    check(total == summary["allocations"], "%s: allocations rows %d = allocations %d" %
          (name, total, summary["allocations"]))
    live = (summary["leaked_allocations"] + summary.get("runtime_held_allocations", 0),
            summary["leaked_bytes"] + summary.get("runtime_held_bytes", 0))
    check((leaked, leaked_bytes) == live,
          "%s: unfreed allocations %d (%d bytes) = leaks and runtime-held %d (%d bytes)" %
          (name, leaked, leaked_bytes, *live))
    return summary


def check_pushdown(memreport, cap, name):
    full = sql_csv(memreport, cap, "select * from events")
    header, rows = full[0], [[int(v) if v.lstrip("-").isdigit() else v for v in r]
                             for r in full[1:]]
    seq, ts = header.index("seq"), header.index("ts")
    seqs = [r[seq] for r in rows]
    check(seqs == sorted(seqs), "%s: events come in seq order" % name)
    tss = sorted(r[ts] for r in rows)
    n = len(rows)
    t1, t2 = tss[n // 3], tss[n // 3 + max(1, n // 50)]
    s1, s2 = seqs[n // 2], seqs[n // 2 + max(1, n // 40)]
    cases = [
        ("ts between %d and %d" % (t1, t2), lambda r: t1 <= r[ts] <= t2),
        ("ts > %d and ts < %d" % (t1, t2), lambda r: t1 < r[ts] < t2),
        ("ts >= %d.5 and ts <= %d.5" % (t1, t2), lambda r: t1 + 0.5 <= r[ts] <= t2 + 0.5),
        ("ts = %d" % t2, lambda r: r[ts] == t2),
        ("seq between %d and %d" % (s1, s2), lambda r: s1 <= r[seq] <= s2),
        ("seq > %d" % s2, lambda r: r[seq] > s2),
        ("seq < %d" % s1, lambda r: r[seq] < s1),
        ("seq = %d" % s1, lambda r: r[seq] == s1),
        ("seq >= %d and ts <= %d and heap = 1" % (s1, t2),
         lambda r: r[seq] >= s1 and r[ts] <= t2 and r[header.index("heap")] == 1),
        ("seq > '%d'" % s1, lambda r: r[seq] > s1),  # the column's affinity makes it a number
        ("seq > 'x'", lambda r: False),  # an integer is never greater than a text
        ("ts > %d and ts < %d" % (t2, t1), lambda r: False),
    ]
    for cond, keep in cases:
        got = sql_csv(memreport, cap, "select * from events where " + cond)[1:]
        got = [[int(v) if v.lstrip("-").isdigit() else v for v in r] for r in got]
        want = [r for r in rows if keep(r)]
        check(got == want, "%s: where %s: %d rows, as the full scan filtered (%d)" %
              (name, cond, len(got), len(want)))
    return rows


# What stacks lists, as a recursive query over the capture's tables (the view it was): each
# callsite's chain of parents, depth 0 the callsite itself.
STACKS_TRUTH = """WITH RECURSIVE walk(callsite, node, depth) AS (
  SELECT id, id, 0 FROM callsite
  UNION ALL SELECT w.callsite, c.parent_id, w.depth + 1 FROM walk w
  JOIN callsite c ON c.id = w.node WHERE c.parent_id != 0 AND w.depth < 100000)
 SELECT w.callsite, w.depth, f.function, f.file, f.line, m.path FROM walk w
 JOIN callsite c ON c.id = w.node LEFT JOIN frame f ON f.id = c.frame_id
 LEFT JOIN mapping m ON m.id = f.mapping_id ORDER BY w.callsite, w.depth"""


def check_stacks(memreport, cap, name):
    """stacks walks only the callsites a condition names (sql_vtab.c): every condition
    gives the rows of the full walk that match it."""
    # Through memreport sql: table callsite as it shows it (schema 6 keeps it compressed).
    truth = sql_csv(memreport, cap, STACKS_TRUTH)[1:]
    ids = [r[0] for r in callsite_rows(memreport, cap)]
    got = sql_csv(memreport, cap, "select * from stacks")
    check(got[0] == ["callsite", "depth", "function", "file", "line", "module"] and
          got[1:] == truth, "%s: stacks: %d rows, those of the full walk (%d)" %
          (name, len(got) - 1, len(truth)))
    if not ids:
        return
    mid, last = ids[len(ids) // 2], ids[-1]
    cases = [
        ("callsite = %d" % mid, lambda c, d: c == mid),
        ("callsite = %d.0" % last, lambda c, d: c == last),
        ("callsite = %d.5" % mid, lambda c, d: False),
        ("callsite = '%d'" % mid, lambda c, d: c == mid),
        ("callsite in (%d, %d, -1)" % (last, mid), lambda c, d: c in (mid, last)),
        ("callsite between %d and %d" % (mid, mid + 3), lambda c, d: mid <= c <= mid + 3),
        ("callsite > %d and depth < 2" % mid, lambda c, d: c > mid and d < 2),
        ("depth = 0", lambda c, d: d == 0),
        ("depth >= 3 and depth <= 4", lambda c, d: 3 <= d <= 4),
        ("depth > 2.5", lambda c, d: d > 2.5),
        ("callsite = 0", lambda c, d: False),
    ]
    for cond, keep in cases:
        got = sql_csv(memreport, cap, "select * from stacks where " + cond)[1:]
        want = [r for r in truth if keep(int(r[0]), int(r[1]))]
        check(got == want, "%s: stacks where %s: %d rows, the full walk's (%d)" %
              (name, cond, len(got), len(want)))
    # A join walks the stack of each allocation's callsite (not on the synthetic capture's
    # 600000 rows: its stacks are checked above).
    if len(truth) > 100000:
        return
    q = ("select a.seq, s.depth, s.function from allocations a join stacks s"
         " on s.callsite = a.callsite order by a.seq, s.depth")
    got = sql_csv(memreport, cap, q)[1:]
    allocs = sql_csv(memreport, cap, "select seq, callsite from allocations order by seq")[1:]
    by_site = {}
    for r in truth:
        by_site.setdefault(r[0], []).append([r[1], r[2]])
    want = [[seq] + frame for seq, site in allocs for frame in by_site.get(site, [])]
    check(got == want, "%s: allocations joined with stacks: %d rows (%d)" %
          (name, len(got), len(want)))


def check_headers_count(memreport, cap, bad):
    """count(*) wants no column: it counts from the chunks' headers and never decodes a chunk
    (the 10M-event capture's count took 1.6 s cold when it did). A chunk whose data is
    damaged shows it: count(*) still counts its rows, a query reading a column fails."""
    shutil.copyfile(cap, bad)
    db = sqlite3.connect(bad)
    (cid,) = db.execute("select id from event_chunk order by id limit 1 offset 3").fetchone()
    db.execute("update event_chunk set data = zeroblob(length(data)) where id = ?", (cid,))
    db.commit()
    db.close()
    want = sql_csv(memreport, cap, "select count(seq) from events")[1]
    got = sql_csv(memreport, bad, "select count(*) from events")[1]
    check(got == want, "count(*) from the headers: %r = the decoded count %r" % (got, want))
    p = run([memreport, "sql", bad, "select count(seq) from events"], ok=False)
    check(p.returncode == 2 and "corrupt" in p.stderr,
          "a column read decodes and finds the damage: %r" % p.stderr)


# Queries on table callsite, and reports, that must answer the same whether a capture keeps
# its callsites in rows (schemas 1 to 5) or in chunks (schema 6).
LAYOUT_QUERIES = [
    "select * from callsite order by id",
    "select count(*), max(depth), sum(parent_id), sum(frame_id), sum(depth) from callsite",
    "select depth, count(*) from callsite group by depth order by depth",
    "select c.id, f.function, m.path from callsite c join frame f on f.id = c.frame_id"
    " left join mapping m on m.id = f.mapping_id where c.parent_id = 0 order by c.id",
    "select count(*) from callsite c where c.parent_id != 0 and not exists"
    " (select 1 from callsite p where p.id = c.parent_id)",
    "select callsite, count(*), max(depth) from stacks group by callsite order by callsite",
    "select a.callsite, count(*), sum(a.size) from allocations a join callsite c"
    " on c.id = a.callsite group by a.callsite order by a.callsite",
]


def check_layouts(memreport, cap, name, work):
    """A traced capture keeps its callsites in chunks, and answers every query and report
    as its copy in the old layout (one row per callsite) does."""
    db = sqlite3.connect("file:%s?mode=ro" % cap, uri=True)
    rows, chunked = db.execute("select (select count(*) from callsite),"
                               " (select coalesce(sum(count), 0) from callsite_chunk)").fetchone()
    db.close()
    sites = callsite_rows(memreport, cap)
    check(rows == 0 and chunked == len(sites) > 0,
          "%s: %d callsites, all in callsite_chunk (%d), none in rows (%d)" %
          (name, len(sites), chunked, rows))
    d = os.path.join(work, "old-" + name.replace(" ", "-"))
    os.makedirs(d)
    old = os.path.join(d, os.path.basename(cap))
    old_layout(memreport, cap, old)
    for q in LAYOUT_QUERIES:
        a, b = sql_csv(memreport, cap, q), sql_csv(memreport, old, q)
        check(a == b and len(a) > 1, "%s: %s: the same %d rows in both layouts" %
              (name, q, len(a) - 1))
    for cmd in (["top", "--top", "0"], ["leaks"], ["stats"]):
        a = run([memreport] + cmd + [cap]).stdout.replace(cap, "CAP")
        b = run([memreport] + cmd + [old]).stdout.replace(old, "CAP")
        check(a == b, "%s: memreport %s: the same in both layouts" % (name, " ".join(cmd)))


def main():
    memreport, fixture, gen, ext, work = sys.argv[1:6]
    launcher, prog = (sys.argv[6:8] + [None, None])[:2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    caps = []
    fx = os.path.join(work, "fixture.db")
    run([fixture, fx])
    caps.append(("fixture", fx))
    big = os.path.join(work, "threads.db")
    run([gen, big, "120000", "4"])
    caps.append(("4 threads", big))
    if launcher and prog:
        traced = os.path.join(work, "traced.db")
        run([launcher, "-o", traced, "--", prog])
        caps.append(("traced program", traced))
    if launcher:  # a real program nobody here wrote (perl-base is essential in Debian; a
        # Python start-up's tens of thousands of stacks, 100-200 frames deep, take minutes
        # to walk row by row here)
        pl = os.path.join(work, "perl.db")
        run([launcher, "-o", pl, "--", "perl", "-e", "my %h = map { $_ => [$_] } 1..500;"])
        caps.append(("perl", pl))

    for name, cap in caps:
        check_counts(memreport, cap, name)
        check_stacks(memreport, cap, name)
        if name in ("traced program", "perl"):
            check_layouts(memreport, cap, name, work)
    check_pushdown(memreport, fx, "fixture")
    check_pushdown(memreport, big, "4 threads")
    chunks = run(["sqlite3", big, "select count(*) from event_chunk"], ok=False).stdout.strip()
    check(chunks == "" or int(chunks) > 10, "the 4-thread capture has many chunks (%s)" % chunks)

    check_headers_count(memreport, big, os.path.join(work, "bad-chunk.db"))

    # The fixture's known truth (tests/reports/fixture.c): callsite 5 is make_node <- main.
    st = sql_csv(memreport, fx, "select depth, function from stacks where callsite = 5")
    check(st[1:] == [["0", "make_node"], ["1", "main"], ["2", "__libc_start_call_main"]],
          "stacks: callsite 5 leaf first: %r" % st[1:])
    al = sql_csv(memreport, fx, "select seq, freed_ts, freed_tid from allocations order by seq")
    check(al[1:4] == [["1", "10000", "100"], ["2", "3000", "100"], ["4", "", ""]],
          "allocations pair frees with their blocks: %r" % al[1:4])

    # --json and --csv read back by their parsers, the same rows.
    q = "select seq, kind, size, callsite, 'a,\"b\"' || char(10) || 'c' as odd, null as n" \
        " from events order by seq"
    js = json.loads(run([memreport, "sql", fx, q, "--json"]).stdout)
    cs = sql_csv(memreport, fx, q)
    check(len(js) == 14 and js[0] == {"seq": 1, "kind": "malloc", "size": 1000, "callsite": 4,
                                      "odd": "a,\"b\"\nc", "n": None},
          "--json: an array of objects with numbers, text and null: %r" % js[:1])
    check(cs[0] == ["seq", "kind", "size", "callsite", "odd", "n"] and
          [[str(o["seq"]), o["kind"], str(o["size"]), str(o["callsite"]), o["odd"], ""]
           for o in js] == cs[1:], "--csv: RFC 4180 rows equal the JSON ones")
    raw = subprocess.run([memreport, "sql", fx, "select 1 as x", "--csv"],
                         capture_output=True).stdout
    check(raw == b"x\r\n1\r\n", "--csv lines end with CRLF: %r" % raw)
    empty = run([memreport, "sql", fx, "select * from events where seq < 0", "--json"]).stdout
    check(json.loads(empty) == [], "--json: no rows is an empty array")
    table = run([memreport, "sql", fx, "select seq, kind from events where seq <= 2"]).stdout
    check(table.splitlines() == ["seq  kind", "---  ------", "  1  malloc", "  2  malloc"],
          "default: an aligned table: %r" % table)

    # Statements from stdin (not a terminal): a script, stopping at the first error.
    p = run([memreport, "sql", fx, "--csv"],
            stdin="select count(*) as n from events;\n.tables\nselect 2 as m")
    check(p.stdout.split("\n")[:2] == ["n", "14"] and "allocations" in p.stdout and
          "events\n" in p.stdout and "stacks" in p.stdout and p.stdout.endswith("m\n2\n"),
          "stdin script: statements and .tables run in turn: %r" % p.stdout)
    p = run([memreport, "sql", fx], stdin="select nope from events;\nselect 1;\n", ok=False)
    check(p.returncode == 2 and p.stdout == "", "stdin script stops at the first error")

    # Errors: one line, exit 2; with -o nothing is left behind.
    p = run([memreport, "sql", fx, "selec 1"], ok=False)
    check(p.returncode == 2 and p.stderr.startswith("memreport: %s: SQL error: " % fx)
          and p.stderr.count("\n") == 1, "a bad query: exit 2, one line: %r" % p.stderr)
    outfile = os.path.join(work, "out.csv")
    p = run([memreport, "sql", fx, "select 1; select nope", "--csv", "-o", outfile], ok=False)
    check(p.returncode == 2 and not os.path.exists(outfile), "-o: no file after an error")
    p = run([memreport, "sql", os.path.join(work, "missing.db"), "select 1"], ok=False)
    check(p.returncode == 3, "a missing capture: exit 3")

    # Read-only: no statement changes the capture.
    before = hashlib.sha256(open(fx, "rb").read()).hexdigest()
    for q in ("delete from meta", "drop table meta", "pragma user_version = 7",
              "attach 'file:%s?mode=rw' as w; delete from w.meta" % fx,
              "create table main.t(x)"):
        p = run([memreport, "sql", fx, q], ok=False)
        check(p.returncode == 2 and "SQL error" in p.stderr, "refused: %s (%s)" %
              (q, p.stderr.strip()))
    check(hashlib.sha256(open(fx, "rb").read()).hexdigest() == before and
          sql_csv(memreport, fx, "select count(*) from meta")[1] != ["0"],
          "the capture is unchanged")

    # The extension in the sqlite3 shell.
    if shutil.which("sqlite3") is None:
        print("SKIP: sqlite3 (the Debian package sqlite3) is not installed")
        return 77 if not failures else 1
    load = ".load " + os.path.splitext(ext)[0]
    for name, cap in caps:
        q = "select count(*), sum(size) from events where kind = 'malloc'"
        p = run(["sqlite3", "-csv", cap, load, q])
        mine = sql_csv(memreport, cap, q)[1]
        check(p.stdout.strip().split(",") == mine,
              "extension in sqlite3, %s: %s = memreport sql's %r" % (name, p.stdout.strip(),
                                                                     mine))
    p = run(["sqlite3", "-csv", big, load,
             "select count(*) from allocations where freed_ts is null",
             "select count(*) from stacks"])
    check(len(p.stdout.split()) == 2, "extension: allocations and stacks too: %r" % p.stdout)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
