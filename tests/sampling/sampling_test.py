#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Sampling by bytes (MEMTRACE_SAMPLE_BYTES) on sampling_prog.c, whose sites hold known
# amounts (its header). The truth is an exact capture of the same program (it allocates the
# same sequence every run); the sampled runs use a fixed MEMTRACE_SAMPLE_SEED, so they are
# the same every run, yet what is checked is the estimator: break the weights and the
# estimates fail.
#   estimates: N = 4096: the estimated bytes at the peak and leaked of every function that
#              holds at least 5% of the peak, and the totals, within 10% of the truth. The
#              relative standard deviation of an estimate of B bytes of small blocks is about
#              sqrt(N/B): 1.3% for the 24 MiB site, 2.2% for the 8 MiB ones, so 10% is more
#              than 4.5 standard deviations (large blocks, >= N, are all but exact);
#   capture:   output and exit status as untraced; meta sample_bytes and sample_method; no
#              free without its allocation (threads freeing other threads' blocks, realloc of
#              sampled and unsampled blocks); call counts equal the exact run's; far fewer
#              events; the same seed gives the same events;
#   dense:     N = 64 (almost every block sampled: the set holds ~100K blocks and grows):
#              no free without its allocation, estimates within 2%;
#   reports:   every report and the flame graph page say the capture is sampled, in text and
#              JSON; exports scale (folded's total is top's);
#   unsampled: an exact capture says nothing of sampling;
#   signals:   SIGNAL_PROG (tests/e2e/progs/signal_alloc.c: a SIGALRM handler allocating and
#              freeing while the program's own heap calls run) at N = 64 and 4096: it ends
#              normally, the capture is complete and has no free without its allocation;
#   mmap:      MMAP_PROG (tests/mmap/mmap_prog.c) with MEMTRACE_MMAP=1: the mmap heap is never
#              sampled: its figures are the exact run's;
#   bad_meta:  a sampled capture whose meta names an unknown method, or a mean interval over
#              the tracer's limit, is refused with one line naming the file (never misread).
# Usage: sampling_test.py MEMTRACE MEMREPORT PROG WORKDIR CASE [SIGNAL_PROG MMAP_PROG] | --list
import csv
import io
import json
import os
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, finish, runner  # noqa: E402

CASES = ("estimates", "capture", "dense", "reports", "unsampled", "signals", "mmap", "bad_meta")
SEED = "20261124"
SITES = ("small_blocks", "leak_medium", "leak_large", "grow_by_realloc", "thread_alloc")
NOTE = "sampled: Poisson by bytes, mean interval "


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, env=dict(os.environ, **(env or {})),
                       timeout=300)
    return p.stdout, p.returncode, p.stderr.decode()


def trace(memtrace, prog, capture, env=None):
    for f in (capture, capture + "-wal", capture + "-shm"):
        if os.path.exists(f):
            os.unlink(f)
    return run([memtrace, "-o", capture, prog], env)


def by_function(memreport, capture, metric):
    """{function: self bytes} for a metric of top (live at the peak, or leaked)."""
    top = json.loads(runner(memreport)("top", capture, "--metric", metric, "--top", "0",
                                       "--json"))
    return {f["function"]: f["self"] for f in top["functions"]}, top


def check_estimates(memreport, exact, sampled, tolerance, what):
    """Every function holding >= 5% of the exact peak, and the totals, within tolerance."""
    ex = json.loads(runner(memreport)("summary", exact, "--json"))
    sa = json.loads(runner(memreport)("summary", sampled, "--json"))
    for key in ("peak_bytes", "leaked_bytes"):
        rel = abs(sa[key] - ex[key]) / ex[key]
        check(rel <= tolerance, f"{what}: {key} {sa[key]} within {tolerance:.0%} of the "
              f"truth {ex[key]} ({rel:.2%})")
    floor = 0.05 * ex["peak_bytes"]
    seen = set()
    for metric in ("live", "leaked"):
        truth, _ = by_function(memreport, exact, metric)
        estimate, _ = by_function(memreport, sampled, metric)
        for fn, b in sorted(truth.items()):
            if b < floor:
                continue
            seen.add(fn)
            got = estimate.get(fn, 0)
            rel = abs(got - b) / b
            check(rel <= tolerance, f"{what}: {metric} bytes of {fn}: {got} within "
                  f"{tolerance:.0%} of the truth {b} ({rel:.2%})")
    check(seen == set(SITES), f"{what}: the sites above 5% of the peak are the program's: "
          f"{sorted(seen)}")


def meta(capture):
    db = sqlite3.connect(capture)
    m = dict(db.execute("SELECT key, value FROM meta"))
    db.close()
    return m


def summary(memreport, capture):
    return json.loads(runner(memreport)("summary", capture, "--json"))


def case_capture(memtrace, memreport, prog, work, want):
    exact, sampled = os.path.join(work, "exact.db"), os.path.join(work, "sampled.db")
    env = {"MEMTRACE_SAMPLE_BYTES": "4096", "MEMTRACE_SAMPLE_SEED": SEED}
    check(trace(memtrace, prog, exact)[:2] == want, "exact run: output and status as untraced")
    out, code, err = trace(memtrace, prog, sampled, env)
    check((out, code) == want, f"sampled run: output and status as untraced ({out!r} {code}; "
          f"untraced {want[0]!r} {want[1]}) {err.strip()}")
    m = meta(sampled)
    check(m.get("sample_bytes") == 4096 and m.get("sample_method") == "poisson-bytes",
          f"meta sample_bytes 4096, sample_method poisson-bytes: {m.get('sample_bytes')!r} "
          f"{m.get('sample_method')!r}")
    check("sample_set_full" not in m, "every sampled block entered the set")
    ex, sa = summary(memreport, exact), summary(memreport, sampled)
    check(sa["unmatched_frees"] == 0 and ex["unmatched_frees"] == 0,
          f"no free without its allocation (threads, realloc): {sa['unmatched_frees']}")
    check(sa["frees"] <= sa["allocations"], "no more frees than allocations recorded")
    check(sa["calls"] == ex["calls"], f"call counts are the exact run's: {sa['calls']} "
          f"vs {ex['calls']}")
    check(sa["events"] * 2 < ex["events"], f"fewer events: {sa['events']} of {ex['events']}")
    # Threads: the consumer freed the producer's sampled blocks; they are not leaked.
    leaked, _ = by_function(memreport, sampled, "leaked")
    check(leaked.get("thread_alloc", 0) == 0 and leaked.get("small_blocks", 0) == 0,
          f"blocks freed, in another thread too, are not leaked: {leaked}")
    again = os.path.join(work, "again.db")
    trace(memtrace, prog, again, env)
    sb = summary(memreport, again)
    check((sb["events"], sb["peak_bytes"], sb["leaked_bytes"]) ==
          (sa["events"], sa["peak_bytes"], sa["leaked_bytes"]),
          "the same seed samples the same allocations")


def case_estimates(memtrace, memreport, prog, work, want, n, tolerance):
    exact, sampled = os.path.join(work, "exact.db"), os.path.join(work, f"sampled{n}.db")
    trace(memtrace, prog, exact)
    out, code, err = trace(memtrace, prog, sampled,
                           {"MEMTRACE_SAMPLE_BYTES": str(n), "MEMTRACE_SAMPLE_SEED": SEED})
    check((out, code) == want, f"output and status as untraced {err.strip()}")
    if n < 4096:  # nearly every block sampled: the set holds ~70K blocks at the peak
        s, ex = summary(memreport, sampled), summary(memreport, exact)
        check(s["unmatched_frees"] == 0 and s["allocations"] > 0.9 * ex["allocations"],
              f"N={n}: no free without its allocation, {s['allocations']} of "
              f"{ex['allocations']} allocations sampled (the set grew past its first tables)")
    check_estimates(memreport, exact, sampled, tolerance, f"N={n}")


def case_reports(memtrace, memreport, prog, work, want):
    sampled, exact = os.path.join(work, "sampled.db"), os.path.join(work, "exact.db")
    trace(memtrace, prog, sampled, {"MEMTRACE_SAMPLE_BYTES": "4096",
                                    "MEMTRACE_SAMPLE_SEED": SEED})
    trace(memtrace, prog, exact)
    mr = runner(memreport)
    html = os.path.join(work, "sampled.html")
    for args in (["summary", sampled], ["stats", sampled], ["stacks", sampled],
                 ["leaks", sampled], ["top", sampled], ["flow", sampled],
                 ["diff", exact, sampled]):
        text = mr(*args)
        check(text.startswith(NOTE + "4.00 KiB (bytes are estimates") or
              (args[0] == "diff" and f"sampled: {sampled}: Poisson by bytes" in text),
              f"{args[0]} says it is sampled: {text[:200]!r}")
        doc = json.loads(mr(*args, "--json"))
        s = doc.get("sampled")
        check(isinstance(s, list) and len(s) == 1 and s[0]["mean_interval_bytes"] == 4096 and
              s[0]["method"] == "poisson-bytes", f"{args[0]} --json has 'sampled': {s}")
    # stats' size histogram buckets the requested sizes: each bucket's bytes estimate the
    # truth's (those holding at least 5% of the bytes allocated, within 10%).
    est = {b["min"]: b["bytes"] for b in json.loads(mr("stats", sampled, "--json"))["sizes"]}
    truth = {b["min"]: b["bytes"] for b in json.loads(mr("stats", exact, "--json"))["sizes"]}
    total = sum(truth.values())
    big = {k: v for k, v in truth.items() if v >= 0.05 * total}
    check(len(big) >= 3 and all(abs(est.get(k, 0) - v) <= 0.1 * v for k, v in big.items()),
          f"stats' size histogram estimates the truth's bytes per size: {est} vs {truth}")
    live = mr("live", sampled, "--once")
    check(NOTE + "4.00 KiB" in live, f"live says it is sampled: {live[:300]!r}")
    mr("flamegraph", sampled, "-o", html, "-f")
    page = open(html, encoding="utf-8").read()
    check(NOTE + "4.00 KiB" in page and '"sampled":[' in page,
          "the flame graph page shows the note after its subtitle")
    folded = mr("export", sampled, "--format", "folded")
    total = sum(int(line.rsplit(" ", 1)[1]) for line in folded.splitlines() if line)
    check(total == summary(memreport, sampled)["peak_bytes"],
          f"export folded scales: its total {total} is the estimated peak")
    data = os.path.join(work, "plot.json")
    mr("plot", sampled, "-o", os.path.join(work, "plot.png"), "--data", data, "-f")
    with open(data) as f:
        s = json.load(f).get("sampled")
    check(isinstance(s, list) and len(s) == 1 and s[0]["mean_interval_bytes"] == 4096 and
          s[0]["method"] == "poisson-bytes", f"plot --data has 'sampled': {s}")
    check_csv(mr, sampled)


def check_csv(mr, sampled):
    """export --format csv of a sampled capture: each row's size is the size its event asked
    for (as sql shows it), its Attr's estimated_size the bytes it stands for: the MALLOC rows'
    add up to summary's estimated bytes allocated, and a FREE row has its allocation's."""
    asked = {r["seq"]: r["size"] for r in json.loads(mr(
        "sql", sampled, "--json", "SELECT seq, size FROM events WHERE heap = 1"))}
    rows = list(csv.DictReader(io.StringIO(mr("export", sampled, "--format", "csv"))))
    attrs = [(r["Event"], dict(kv.split(":", 1) for kv in r["Attr"].strip("{}").split(",")))
             for r in rows if r["Event"] in ("MALLOC", "FREE")]
    allocs = {int(a["allocation_id"]): a for e, a in attrs if e == "MALLOC"}
    check(allocs and all(int(a["size"]) == asked.get(i) for i, a in allocs.items()),
          f"csv: every MALLOC row's size is its requested size ({len(allocs)} rows)")
    estimated = sum(int(a["estimated_size"]) for a in allocs.values())
    want = json.loads(mr("summary", sampled, "--json"))["bytes_allocated"]
    check(estimated == want, f"csv: estimated_size adds up to bytes allocated: {estimated} == "
          f"{want}")
    frees = [a for e, a in attrs if e == "FREE" and a["allocation_id"] != "0"]
    check(frees and all(a["estimated_size"] == allocs[int(a["allocation_id"])]["estimated_size"]
                        and a["size"] == allocs[int(a["allocation_id"])]["size"] for a in frees),
          f"csv: each FREE row has its allocation's size and estimate ({len(frees)} rows)")


def case_unsampled(memtrace, memreport, prog, work, want):
    exact = os.path.join(work, "exact.db")
    check(trace(memtrace, prog, exact)[:2] == want, "output and status as untraced")
    check("sample_bytes" not in meta(exact), "no meta sample_bytes")
    mr = runner(memreport)
    for cmd in ("summary", "top", "leaks"):
        check("sampled:" not in mr(cmd, exact) and "sampled" not in
              json.loads(mr(cmd, exact, "--json")),
              f"{cmd} says nothing of sampling")
    data = os.path.join(work, "plot.json")
    mr("plot", exact, "-o", os.path.join(work, "plot.png"), "--data", data, "-f")
    with open(data) as f:
        check("sampled" not in json.load(f), "plot --data says nothing of sampling")
    check("estimated_size" not in mr("export", exact, "--format", "csv"),
          "export csv: no estimated_size")


def case_signals(memtrace, memreport, signal_prog, work):
    for n in ("64", "4096"):
        capture = os.path.join(work, f"signals{n}.db")
        out, code, err = trace(memtrace, signal_prog, capture, {"MEMTRACE_SAMPLE_BYTES": n})
        check(code == 0, f"N={n}: the program ends normally ({code}) {err.strip()}")
        s = summary(memreport, capture)
        check(s["status"] == "complete" and s["unmatched_frees"] == 0 and
              s["allocations"] <= s["calls"]["malloc"],
              f"N={n}: complete, no free without its allocation: {s['status']} "
              f"{s['unmatched_frees']} unmatched, {s['allocations']} of {s['calls']['malloc']} "
              "mallocs sampled")


def case_mmap(memtrace, memreport, mmap_prog, work):
    heaps = []
    for env in ({}, {"MEMTRACE_SAMPLE_BYTES": "4096"}):
        capture = os.path.join(work, f"mmap{len(heaps)}.db")
        env = dict(env, MEMTRACE_MMAP="1")
        for f in (capture, capture + ".file"):
            if os.path.exists(f):
                os.unlink(f)
        out, code, err = run([memtrace, "-o", capture, mmap_prog, capture + ".file"], env)
        check(code == 7, f"{env}: the program ends as untraced (7: {code}) {err.strip()}")
        s = json.loads(runner(memreport)("summary", capture, "--heap", "mmap", "--json"))
        heaps.append({k: s[k] for k in ("allocations", "frees", "peak_bytes", "leaked_bytes")})
    check(heaps[0] == heaps[1] and heaps[0]["peak_bytes"] == 64 << 20,
          f"the mmap heap of a sampled run is exact: {heaps[1]} (exact: {heaps[0]})")


def case_bad_meta(memtrace, memreport, prog, work, want):
    good = os.path.join(work, "sampled.db")
    check(trace(memtrace, prog, good, {"MEMTRACE_SAMPLE_BYTES": "4096"})[:2] == want,
          "output and status as untraced")
    for key, value, says in (("sample_method", "reservoir", "unknown method 'reservoir'"),
                             ("sample_bytes", 1 << 40, "mean interval of 1099511627776 bytes")):
        bad = os.path.join(work, f"bad_{key}.db")
        with open(good, "rb") as src, open(bad, "wb") as dst:
            dst.write(src.read())
        db = sqlite3.connect(bad)
        db.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
        db.commit()
        db.close()
        _, code, err = run([memreport, "summary", bad])
        check(code == 2 and err.startswith(f"memreport: {bad}: ") and says in err
              and err.count("\n") == 1, f"{key} = {value}: refused (exit {code}): {err!r}")


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return
    memtrace, memreport, prog, work, case = sys.argv[1:6]
    work = os.path.join(work, case)
    os.makedirs(work, exist_ok=True)
    if case in ("signals", "mmap"):
        extra = sys.argv[6] if case == "signals" else sys.argv[7]
        globals()["case_" + case](memtrace, memreport, extra, work)
        finish()
        return
    want = run([prog])[:2]
    check(want[1] == 3 and want[0].startswith(b"checksum "), f"untraced run: {want}")
    if case == "estimates":
        case_estimates(memtrace, memreport, prog, work, want, 4096, 0.10)
    elif case == "dense":
        case_estimates(memtrace, memreport, prog, work, want, 64, 0.02)
    else:
        globals()["case_" + case](memtrace, memreport, prog, work, want)
    finish()


if __name__ == "__main__":
    main()
