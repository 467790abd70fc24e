#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Capture size on real programs, memtrace against heaptrack side by side: each program runs
# natively, under libmemtrace.so and under `heaptrack -o` (full: recorder and interpreter),
# interleaved and repeated; prints the events memtrace recorded, both files' bytes, bytes
# per event (memtrace's event chunks alone too), their ratio, and wall and CPU ratios against
# native (medians). The programs:
# python3 (PYTHONMALLOC=malloc) round-tripping a 200,000-key dict through json three times,
# and a 20,000-key one twenty times (bench/python/workload.py json),
# sqlite3 running a script on an in-memory database, `git log -p` of this repository at a
# fixed commit, and bench_rs (the unrelated-stacks workload, 10 M events: heaptrack full and
# --raw). Asserts nothing.
# Usage: bench/size.py [BUILD_DIR]  (builds nothing: run bench/run.sh BUILD_DIR first)
# Settings: SIZE_REPS (3), SIZE_PROGRAMS (comma list of names, default all), BENCH_TMP,
# BENCH_HEAPTRACK_MEM_MIB (4096), BENCH_HEAPTRACK_TIMEOUT (600), BENCH_RESULTS.
import datetime
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile

import results_file
from run import cpu_model, env_int, git_rev, run

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)

PY_JSON = """
import json
for round in range(3):
    d = {f"key{i}": {"id": i, "name": f"item {i}", "tags": [i, i * 2, str(i)]}
         for i in range(200000)}
    text = json.dumps(d)
    back = json.loads(text)
    assert back == d
"""

SQL = """
create table t(id integer primary key, name text, v real);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 200000)
  insert into t select x, hex(randomblob(12)), random() from c;
create index t_name on t(name);
select count(*), sum(length(name)) from t where name like 'A%';
select substr(name, 1, 2) k, count(*), avg(v) from t group by k order by 2 desc limit 3;
update t set name = lower(name) where id % 3 = 0;
delete from t where id % 5 = 0;
select count(*) from t;
"""

# git log -p of this repository up to a fixed commit, so that the work does not grow with it.
GIT_REV = "d0f5c58"


def programs(build):
    git_dir = subprocess.run(["git", "-C", SRC, "rev-parse", "--git-dir"],
                             capture_output=True, text=True).stdout.strip()
    git_ok = git_dir and subprocess.run(
        ["git", "-C", SRC, "cat-file", "-e", GIT_REV + "^{commit}"],
        capture_output=True).returncode == 0
    return [
        # name, argv, extra environment, heaptrack --raw too
        ("python3-json", ["/usr/bin/python3", "-c", PY_JSON], {"PYTHONMALLOC": "malloc"},
         False),
        # bench/python/workload.py json: a 20,000-key dict through json 20 times (18 M events)
        ("python3-json-20k", ["/usr/bin/python3", os.path.join(HERE, "python", "workload.py"),
                              "json"], {"PYTHONMALLOC": "malloc"}, False),
        ("sqlite3", ["sqlite3", ":memory:", SQL], {}, False),
        ("git-log-p", ["git", "-C", SRC, "log", "-p", GIT_REV] if git_ok else None,
         {"GIT_PAGER": "cat"}, False),
        ("bench_rs", [os.path.join(build, "bench", "bench_rs")], {"BENCH_EVENTS": "10000000"},
         True),
    ]


class Size:
    def __init__(self, build):
        self.build = build
        self.lib = os.path.join(build, "preload", "libmemtrace.so")
        self.memreport = os.path.join(build, "reporter", "memreport")
        self.reps = max(1, env_int("SIZE_REPS", 3))
        self.heaptrack = shutil.which("heaptrack")
        self.ht_mem = env_int("BENCH_HEAPTRACK_MEM_MIB", 4096)
        self.ht_timeout = env_int("BENCH_HEAPTRACK_TIMEOUT", 600)
        self.tmp = tempfile.mkdtemp(prefix="memtrace-size.", dir=os.environ.get("BENCH_TMP"))
        self.cache = os.path.join(self.tmp, "symbols.db")
        self.samples = {}  # (program, mode) -> list of dicts
        self.problems = []
        self.rev = git_rev()

    def env(self, extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTRACE_")}
        env.pop("LD_PRELOAD", None)
        env.update(extra)
        return env

    def native(self, argv, extra):
        rc, wall, cpu, rss = run(argv, self.env(extra), os.devnull, timeout=self.ht_timeout)
        return {"rc": rc, "wall": wall, "cpu": cpu}

    def memtrace(self, argv, extra):
        capture = os.path.join(self.tmp, "capture.db")
        env = self.env(extra)
        env.update(LD_PRELOAD=self.lib, MEMTRACE_OUTPUT=capture,
                   MEMTRACE_SYMBOL_CACHE=self.cache)
        rc, wall, cpu, rss = run(argv, env, os.devnull, timeout=self.ht_timeout)
        res = {"rc": rc, "wall": wall, "cpu": cpu}
        if os.path.exists(capture):
            res["bytes"] = os.path.getsize(capture)
            r = subprocess.run([self.memreport, "summary", "--json", capture],
                               capture_output=True, text=True)
            if r.returncode == 0:
                s = json.loads(r.stdout)
                res["events"], res["status"] = s["events"], s["status"]
            # The events' chunks alone: the rest of the file is stacks, frames, counters and
            # SQLite's page slack.
            db = sqlite3.connect(f"file:{capture}?mode=ro", uri=True)
            res["chunk_bytes"] = db.execute(
                "SELECT coalesce(sum(length(data)), 0) FROM event_chunk").fetchone()[0]
            db.close()
            os.unlink(capture)
        return res

    def heaptrack_run(self, argv, extra, raw):
        base = os.path.join(self.tmp, "ht")
        ht = [self.heaptrack] + (["--raw"] if raw else []) + ["-o", base]
        out = os.path.join(self.tmp, "ht.out")
        rc, wall, cpu, rss = run(ht + argv, self.env(extra), out, timeout=self.ht_timeout,
                                 mem_mib=self.ht_mem)
        res = {"rc": rc, "wall": wall, "cpu": cpu}
        for f in os.listdir(self.tmp):
            if f.startswith("ht."):
                if f != "ht.out":
                    res["bytes"] = os.path.getsize(os.path.join(self.tmp, f))
                os.unlink(os.path.join(self.tmp, f))
        return res

    def go(self):
        progs = programs(self.build)
        only = os.environ.get("SIZE_PROGRAMS", "")
        progs = [p for p in progs if p[1] and (not only or p[0] in only.split(","))]
        modes = ["native", "memtrace"]
        if self.heaptrack:
            modes.append("heaptrack")
        for name, argv, extra, raw in progs:
            # One traced run first, untimed: fills the symbol cache (a program traced the
            # second time), so that names at exit cost what they cost a returning user.
            self.memtrace(argv, extra)
        for rep in range(self.reps):
            for name, argv, extra, raw in progs:
                for mode in modes + (["heaptrack-raw"] if raw and self.heaptrack else []):
                    if mode == "native":
                        res = self.native(argv, extra)
                    elif mode == "memtrace":
                        res = self.memtrace(argv, extra)
                    else:
                        res = self.heaptrack_run(argv, extra, mode == "heaptrack-raw")
                    if res["rc"] != 0:
                        self.problems.append(f"{name} {mode}: exit {res['rc']}")
                    if mode == "memtrace" and res.get("status") != "complete":
                        self.problems.append(f"{name} memtrace: capture status "
                                             f"{res.get('status')}")
                    self.samples.setdefault((name, mode), []).append(res)
                    print(f"  [{rep + 1}/{self.reps}] {name:13} {mode:13} {res['wall']:7.2f} s"
                          f" {res.get('bytes', 0):>12} B", file=sys.stderr, flush=True)
        self.progs = progs
        self.modes = modes

    def med(self, name, mode, key):
        v = [s[key] for s in self.samples.get((name, mode), []) if s["rc"] == 0 and key in s]
        return statistics.median(v) if v else None

    def spread(self, name, mode, key):
        v = [s[key] for s in self.samples.get((name, mode), []) if s["rc"] == 0 and key in s]
        return (min(v), max(v)) if v else None

    def report(self):
        L = []
        now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
        L.append(f"capture size on real programs, {now}, tracer built from git {self.rev}; "
                 f"nproc={os.cpu_count()}, {cpu_model()}, load average "
                 f"{os.getloadavg()[0]:.2f}; {self.reps} repetitions, medians; symbol cache "
                 "warm")
        L.append("memtrace: capture file; heaptrack: its -o file (.zst, recorder and "
                 "interpreter); B/ev: bytes / memtrace's event count (heaptrack does not count); "
                 "chunks: memtrace's event chunks alone, B/ev")
        hdr = (f"{'program':13} {'events':>10} {'mt bytes':>11} {'B/ev':>6} {'chunks':>6} "
               f"{'ht bytes':>11} "
               f"{'B/ev':>6} {'mt/ht':>7}  {'nat s':>6} {'mt wall':>8} {'ht wall':>8} "
               f"{'mt cpu':>7} {'ht cpu':>7}")
        L.append(hdr)
        L.append("-" * len(hdr))

        def f(v, spec, width):
            return format(v, spec) if v is not None else "-".rjust(width)

        for name, _, _, raw in self.progs:
            ev = self.med(name, "memtrace", "events")
            nw, nc = self.med(name, "native", "wall"), self.med(name, "native", "cpu")
            for ht in ["heaptrack"] + (["heaptrack-raw"] if raw else []):
                mb, hb = self.med(name, "memtrace", "bytes"), self.med(name, ht, "bytes")
                cb = self.med(name, "memtrace", "chunk_bytes")
                mw, hw = self.med(name, "memtrace", "wall"), self.med(name, ht, "wall")
                mc, hc = self.med(name, "memtrace", "cpu"), self.med(name, ht, "cpu")
                label = name if ht == "heaptrack" else "  --raw"
                L.append(
                    f"{label:13} {f(ev, '10.0f', 10)} {f(mb, '11.0f', 11)} "
                    f"{f(mb / ev if mb and ev else None, '6.2f', 6)} "
                    f"{f(cb / ev if cb and ev else None, '6.2f', 6)} {f(hb, '11.0f', 11)} "
                    f"{f(hb / ev if hb and ev else None, '6.2f', 6)} "
                    f"{f(mb / hb if mb and hb else None, '6.1f', 6)}x  {f(nw, '6.2f', 6)} "
                    f"{f(mw / nw if mw and nw else None, '7.2f', 7)}x "
                    f"{f(hw / nw if hw and nw else None, '7.2f', 7)}x "
                    f"{f(mc / nc if mc and nc else None, '6.2f', 6)}x "
                    f"{f(hc / nc if hc and nc else None, '6.2f', 6)}x")
        L.append("spread (min-max wall s): " + "; ".join(
            f"{name} " + " ".join(f"{m} {a:.2f}-{b:.2f}" for m in self.modes
                                  + (["heaptrack-raw"] if raw else [])
                                  for a, b in [self.spread(name, m, "wall") or (0, 0)])
            for name, _, _, raw in self.progs))
        if self.problems:
            L.append("Problems:")
            L.extend("  " + p for p in self.problems)
        return "\n".join(L) + "\n"


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    for p in ("preload/libmemtrace.so", "reporter/memreport", "bench/bench_rs"):
        if not os.path.exists(os.path.join(build, p)):
            sys.exit(f"size.py: {build}/{p} is missing (run bench/run.sh {build} first)")
    s = Size(build)
    try:
        s.go()
    finally:
        shutil.rmtree(s.tmp, ignore_errors=True)
    text = s.report()
    sys.stdout.write(text)
    results_file.write(title="size (bench/size.py)", section=text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
