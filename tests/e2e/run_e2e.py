#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of the capture pipeline: run programs under libmemtrace.so, read the
captures with `memreport summary --json`, and compare them with known truth.

Programs of tests/e2e/progs write their truth (what they allocated, freed, leaked, their
peak and calls per entry point) to $TRUTH_FILE. The runtime's own allocations (libc,
libstdc++'s emergency pool, thread set-up) are measured, never guessed: each program runs a
second time with E2E_BASELINE=1, doing the same start-up, threads and exit but none of its
work, and the expected summary is baseline + truth. Every program also runs untraced, and
its stdout, stderr, exit status and truth must be the same as traced.

Usage: run_e2e.py --lib LIBMEMTRACE --launcher MEMTRACE --memreport MEMREPORT
                  --prog NAME=PATH... CASE...
       run_e2e.py --list      (the cases, one a line: tests/capture.cmake makes a test of each)
The paths are CMake's $<TARGET_FILE>s; NAME is a program of tests/e2e/progs, or dump_events.
Python 3 standard library only.
"""
import argparse
import glob
import json
import os
import re
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import wait_for_commit_after_now  # noqa: E402

CALLS = ["malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
         "aligned_alloc", "memalign", "valloc", "pvalloc"]
# CPython's allocators (heap python): counted beside libc's, never in a C program's truth.
PY_CALLS = ["python_malloc", "python_calloc", "python_realloc", "python_free"]
ADDITIVE = ["allocations", "frees", "bytes_allocated", "leaked_bytes", "leaked_allocations"]
TIMEOUT = 60


class Failure(Exception):
    pass


# A case that cannot run here (a program it needs is missing): the run exits 77, which ctest
# shows as skipped (SKIP_RETURN_CODE), never as passed.
class Skip(Exception):
    pass


class Ctx:
    def __init__(self, args):
        self.preload = args.lib
        self.launcher = args.launcher
        self.memreport = args.memreport
        self.progs = dict(args.prog)
        self.tmp = tempfile.mkdtemp(prefix="mt_e2e.")
        self.keep = args.keep
        self.errors = []
        for f in [self.preload, self.launcher, self.memreport] + list(self.progs.values()):
            if not os.path.exists(f):
                raise Failure(f"{f} is not built")

    def prog(self, name):
        if name not in self.progs:
            raise Failure(f"no --prog {name}=PATH given")
        return self.progs[name]

    def fresh_dir(self, name):
        d = os.path.join(self.tmp, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return d

    def check(self, cond, what):
        if not cond:
            self.errors.append(what)
            print("FAIL:", what)
        return cond

    def check_eq(self, label, got, want, detail=""):
        ok = got == want
        if not ok:
            msg = f"{label}: expected {want}, got {got}"
            if detail:
                msg += f" ({detail})"
            self.errors.append(msg)
            print("FAIL:", msg)
        return ok

    def cleanup(self):
        if self.keep or self.errors:
            print(f"(files kept in {self.tmp})")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(ctx, argv, env_extra, traced, outdir=None, cwd=None, stdin=None, kill_after_ready=False,
        launcher=False):
    """Runs argv; returns (returncode, stdout, stderr, pid). kill_after_ready: SIGKILL once
    the program printed 'ready' and (traced) the tracer committed what came before it."""
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("MEMTRACE_") or k in ("LD_PRELOAD", "E2E_BASELINE", "TRUTH_FILE"):
            del env[k]
    env.update(env_extra)
    if traced and not launcher:
        env["LD_PRELOAD"] = ctx.preload
        env["MEMTRACE_OUTPUT"] = os.path.join(outdir, "cap.%p.db")
    if launcher:
        argv = [ctx.launcher, "-o", os.path.join(outdir, "cap.launcher.db"), "--"] + argv
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE if stdin else None,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=no_core)
    if kill_after_ready:
        line = p.stdout.readline()
        if line != b"ready\n":
            p.kill()
            raise Failure(f"{argv}: expected 'ready', got {line!r}")
        # Not a sleep: a loaded machine may starve the writer for seconds (the capture then
        # held nothing, and the case failed).
        if launcher:
            wait_for_commit_after_now(ctx.memreport, os.path.join(outdir, "cap.launcher.db"))
        elif traced:
            wait_for_commit_after_now(ctx.memreport, os.path.join(outdir, f"cap.{p.pid}.db"))
        p.send_signal(signal.SIGKILL)
        out, err = p.communicate(timeout=TIMEOUT)
        out = line + out
    else:
        try:
            out, err = p.communicate(input=stdin, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise Failure(f"{argv} timed out after {TIMEOUT} s (traced={traced})")
    return p.returncode, out, err, p.pid


def summary(ctx, path):
    r = subprocess.run([ctx.memreport, "summary", path, "--json"], capture_output=True,
                       timeout=TIMEOUT)
    if r.returncode != 0:
        raise Failure(f"memreport summary {path} exited {r.returncode}: "
                      f"{r.stderr.decode(errors='replace').strip()}")
    s = json.loads(r.stdout)
    # The programs' truth counts every block live at the end; summary splits those into the
    # program's leaks and the blocks the C runtime holds: compare their sum.
    s["leaked_bytes"] += s.get("runtime_held_bytes", 0)
    s["leaked_allocations"] += s.get("runtime_held_allocations", 0)
    # Text mode must work on the same capture too.
    t = subprocess.run([ctx.memreport, "summary", path], capture_output=True, timeout=TIMEOUT)
    if t.returncode != 0 or b"allocations:" not in t.stdout:
        raise Failure(f"memreport summary (text) {path} exited {t.returncode}")
    return s


def capture_of(ctx, outdir, pid):
    path = os.path.join(outdir, f"cap.{pid}.db")
    if not os.path.exists(path):
        raise Failure(f"no capture {path}; files: {sorted(os.listdir(outdir))}")
    return path


def read_truth(path):
    with open(path) as f:
        return json.load(f)


def consistency(ctx, label, s):
    """Facts every capture of every program must satisfy."""
    ctx.check_eq(f"{label}: events", s["events"], s["allocations"] + s["frees"])
    ctx.check_eq(f"{label}: leaked_allocations", s["leaked_allocations"],
                 s["allocations"] - (s["frees"] - s["unmatched_frees"]),
                 "live blocks must equal allocations minus matched frees")
    ctx.check(s["peak_bytes"] >= s["leaked_bytes"], f"{label}: peak_bytes < leaked_bytes")
    ctx.check(s["bytes_allocated"] >= s["peak_bytes"], f"{label}: bytes_allocated < peak")
    calls = s.get("calls", {})
    alloc_calls = sum(calls.get(k, 0) for k in CALLS + PY_CALLS if "free" not in k)
    ctx.check(alloc_calls >= s["allocations"],
              f"{label}: {s['allocations']} allocations but only {alloc_calls} calls")
    free_calls = sum(calls.get(k, 0) for k in ("free", "realloc", "reallocarray", "python_free",
                                                 "python_realloc"))
    ctx.check(free_calls >= s["frees"], f"{label}: {s['frees']} frees but {free_calls} calls")
    ctx.check(s["duration_ns"] >= 0, f"{label}: negative duration")
    ctx.check(0 <= s["peak_time_ns"] <= max(s["duration_ns"], s["peak_time_ns"]),
              f"{label}: peak_time_ns out of range")


def expected_from(base, truth):
    exp = {k: base[k] + truth[k] for k in ADDITIVE}
    # The runtime's blocks are allocated at start-up and stay (they are the baseline's
    # leak), so the program's peak sits on top of them.
    exp["peak_bytes"] = truth["peak_bytes"] + base["leaked_bytes"]
    exp["events"] = exp["allocations"] + exp["frees"]
    exp["unmatched_frees"] = base["unmatched_frees"]
    exp["threads"] = truth["threads"]
    exp["calls"] = {k: base.get("calls", {}).get(k, 0) + truth["calls"].get(k, 0)
                    for k in CALLS}
    return exp


def compare(ctx, label, got, exp, base, truth):
    print(f"{label}: allocations {got['allocations']} frees {got['frees']} "
          f"bytes {got['bytes_allocated']} peak {got['peak_bytes']} leaked "
          f"{got['leaked_bytes']}/{got['leaked_allocations']} (baseline: "
          f"{base['allocations']} allocations, {base['leaked_bytes']} B live)")
    for k in ADDITIVE + ["peak_bytes", "events", "unmatched_frees", "threads"]:
        how = {"peak_bytes": "truth peak + baseline leaked_bytes",
               "events": "allocations + frees", "unmatched_frees": "baseline's",
               "threads": "truth"}.get(k, f"baseline {base.get(k)} + truth {truth.get(k)}")
        ctx.check_eq(f"{label}: {k}", got[k], exp[k], how)
    calls = got.get("calls", {})
    for k in CALLS:
        ctx.check_eq(f"{label}: calls.{k}", calls.get(k, 0), exp["calls"][k],
                     f"baseline {base.get('calls', {}).get(k, 0)} + truth "
                     f"{truth['calls'].get(k, 0)}")


def traced_and_native(ctx, name, argv, env=None, expect_rc=0, kill=False, status="complete",
                      same_work_each_run=True):
    """Runs argv untraced, traced as baseline, traced for real; returns the three results.
    Checks behaviour is unchanged and both captures are consistent."""
    env = dict(env or {})
    d = ctx.fresh_dir(name)
    res = {}
    for mode in ("native", "baseline", "traced"):
        md = os.path.join(d, mode)
        os.makedirs(md)
        e = dict(env, TRUTH_FILE=os.path.join(md, "truth.json"))
        # Set in every run, so each has as many variables: tcmalloc's start calls setenv,
        # whose new environment array is sized by their count (8 bytes more in baseline).
        e["E2E_BASELINE"] = "1" if mode == "baseline" else "0"
        rc, out, err, pid = run(ctx, argv, e, mode != "native", outdir=md,
                                kill_after_ready=kill)
        if not os.path.exists(e["TRUTH_FILE"]):
            raise Failure(f"{name} ({mode}): no truth written; exit status {rc}, "
                          f"stderr {err[-500:]!r}")
        res[mode] = dict(rc=rc, out=out, err=err, pid=pid, dir=md,
                         truth=read_truth(e["TRUTH_FILE"]))
    n, t = res["native"], res["traced"]
    ctx.check_eq(f"{name}: exit status", t["rc"], expect_rc, f"stderr: {t['err'][-300:]!r}")
    ctx.check_eq(f"{name}: exit status traced vs untraced", t["rc"], n["rc"])
    ctx.check_eq(f"{name}: stdout traced vs untraced", t["out"], n["out"])
    ctx.check_eq(f"{name}: stderr traced vs untraced", t["err"], n["err"])
    def same_work(truth):  # children's pids differ from run to run
        return {k: v for k, v in truth.items() if not k.endswith("_pid")}
    if same_work_each_run:
        ctx.check_eq(f"{name}: truth traced vs untraced", same_work(t["truth"]),
                     same_work(n["truth"]))
    for mode in ("baseline", "traced"):
        r = res[mode]
        r["capture"] = capture_of(ctx, r["dir"], r["pid"])
        r["summary"] = summary(ctx, r["capture"])
        s = r["summary"]
        consistency(ctx, f"{name} ({mode})", s)
        if status:
            ctx.check_eq(f"{name} ({mode}): status", s["status"], status)
        ctx.check_eq(f"{name} ({mode}): pid", s["pid"], r["pid"])
        ctx.check_eq(f"{name} ({mode}): command", s["command"], argv)
    return res


def exact_case(ctx, name, argv, env=None, expect_rc=0, kill=False, status="complete",
               same_work_each_run=True):
    res = traced_and_native(ctx, name, argv, env, expect_rc, kill, status, same_work_each_run)
    base, got, truth = res["baseline"]["summary"], res["traced"]["summary"], \
        res["traced"]["truth"]
    compare(ctx, name, got, expected_from(base, truth), base, truth)
    return res


# ---- cases

def case_peak(ctx):
    exact_case(ctx, "peak", [ctx.prog("peak")])


def case_leaks(ctx):
    exact_case(ctx, "leaks", [ctx.prog("leaks")])


def case_realloc(ctx):
    exact_case(ctx, "realloc_chain", [ctx.prog("realloc_chain")])


def case_entry_points(ctx):
    exact_case(ctx, "entry_points", [ctx.prog("entry_points")])


def case_threads(ctx):
    exact_case(ctx, "threads", [ctx.prog("threads")])


def allocator_case(ctx, alloc):
    """leaks.c and threads.c linked against another allocator (-l<alloc>): exact as with
    glibc's, and the blocks are that allocator's (its library is among the modules)."""
    names = [f"{prog}_{alloc}" for prog in ("leaks", "threads")]
    if not all(n in ctx.progs for n in names):
        raise Skip(f"lib{alloc} is not installed (scripts/install-deps.sh --test)")
    for name in names:
        res = exact_case(ctx, name, [ctx.prog(name)])
        db = sqlite3.connect(f"file:{res['traced']['capture']}?mode=ro", uri=True)
        paths = [p for (p,) in db.execute("SELECT path FROM mapping")]
        db.close()
        ctx.check(any(f"/lib{alloc}." in p for p in paths),
                  f"{name}: lib{alloc} is among the modules ({paths})")


def case_allocator_jemalloc(ctx):
    allocator_case(ctx, "jemalloc")


def case_allocator_tcmalloc(ctx):
    allocator_case(ctx, "tcmalloc")


def case_cxx(ctx):
    exact_case(ctx, "cxx", [ctx.prog("cxx")])


def case_signal_alloc(ctx):
    # A signal handler's heap calls count, also when they interrupt a hook of the tracer.
    # Timer signals: how many land where differs from run to run; each run's own truth counts.
    res = exact_case(ctx, "signal_alloc", [ctx.prog("signal_alloc")], same_work_each_run=False)
    print(f"signal_alloc: {res['traced']['truth'].get('alarms')} alarms")


def child_summaries(ctx, res, names):
    """Summaries of the child captures of a fork_exec run, by role."""
    out = {}
    for mode in ("baseline", "traced"):
        r = res[mode]
        t = r["truth"]
        out[mode] = {}
        for role, key in names:
            pid = t[key]
            out[mode][role] = (pid, os.path.join(r["dir"], f"cap.{pid}.db"))
    return out


def case_fork_exec(ctx):
    leaks = ctx.prog("leaks")
    argv = [ctx.prog("fork_exec"), leaks]
    res = exact_case(ctx, "fork_exec", argv)
    kids = child_summaries(ctx, res, [("child", "child_pid"), ("exec", "exec_pid")])
    # The forked child, ended by _exit: its own capture, its own work only.
    sums = {}
    for mode in ("baseline", "traced"):
        pid, path = kids[mode]["child"]
        if not ctx.check(os.path.exists(path), f"fork_exec ({mode}): no capture {path} "
                         f"for the forked child; files: {os.listdir(res[mode]['dir'])}"):
            return
        s = sums[mode] = summary(ctx, path)
        consistency(ctx, f"fork child ({mode})", s)
        ctx.check_eq(f"fork child ({mode}): status", s["status"], "complete")
        ctx.check_eq(f"fork child ({mode}): pid", s["pid"], pid)
    truth = read_truth(os.path.join(res["traced"]["dir"], "truth.json.child"))
    compare(ctx, "fork child", sums["traced"], expected_from(sums["baseline"], truth),
            sums["baseline"], truth)
    # The exec'd program (e2e_leaks) gets a capture of its own, the same as when run alone.
    for mode in ("baseline", "traced"):
        pid, path = kids[mode]["exec"]
        if not ctx.check(os.path.exists(path), f"fork_exec ({mode}): no capture {path} "
                         f"for the exec'd child; files: {os.listdir(res[mode]['dir'])}"):
            return
        s = sums[mode] = summary(ctx, path)
        consistency(ctx, f"exec child ({mode})", s)
        ctx.check_eq(f"exec child ({mode}): status", s["status"], "complete")
        ctx.check_eq(f"exec child ({mode}): command", s["command"], [leaks])
    truth = read_truth(os.path.join(res["traced"]["dir"], "truth.json.exec"))
    compare(ctx, "exec child", sums["traced"], expected_from(sums["baseline"], truth),
            sums["baseline"], truth)


def case_fork_nofollow(ctx):
    argv = [ctx.prog("fork_exec"), ctx.prog("leaks"), "noexec"]
    res = exact_case(ctx, "fork_nofollow", argv, env={"MEMTRACE_FOLLOW_FORK": "0"})
    for mode in ("baseline", "traced"):
        pid = res[mode]["truth"]["child_pid"]
        files = sorted(os.listdir(res[mode]["dir"]))
        ctx.check(not any(f".{pid}." in f for f in files),
                  f"fork_nofollow ({mode}): the untraced child {pid} left a capture: {files}")


def exit_case(ctx, mode, expect_rc):
    exact_case(ctx, "exit_" + mode, [ctx.prog("exits"), mode], expect_rc=expect_rc)


def case_timestamps(ctx):
    # Event times come from the TSC, mapped to CLOCK_MONOTONIC by the writer's calibration:
    # the capture's time between two allocations must lie within what the program measured
    # around them (plus 50 us for the calibration's own error). The times are the events'
    # own, listed by e2e_dump_events (the plot's series keep a few points per pixel column,
    # where the 11111-byte allocation can merge with the program's start-up ones).
    d = ctx.fresh_dir("timestamps")
    rc, out, err, pid = run(ctx, [ctx.prog("exits"), "timed"], {}, True, outdir=d)
    ctx.check_eq("timestamps: exit status", rc, 0)
    lo, hi = (int(x) for x in out.decode().split()[1:3])
    cap = capture_of(ctx, d, pid)
    r = subprocess.run([ctx.prog("dump_events"), cap], capture_output=True, timeout=TIMEOUT)
    if r.returncode != 0:
        raise Failure(f"e2e_dump_events exited {r.returncode}: {r.stderr!r}")
    events = [line.split() for line in r.stdout.decode().splitlines()]
    times = [int(ts) for _, ts, _, _ in events]
    ctx.check(times == sorted(times), "timestamps: event times go back in seq order")
    at = {}
    for _, ts, kind, size in events:
        if kind == "malloc" and size in ("11111", "22222"):
            at.setdefault(size, []).append(int(ts))
    if sorted(at) != ["11111", "22222"] or any(len(t) != 1 for t in at.values()):
        raise Failure(f"timestamps: expected one malloc of 11111 and of 22222 bytes: {at}")
    between = at["22222"][0] - at["11111"][0]
    ctx.check(lo - 50000 <= between <= hi + 50000,
              f"timestamps: {between} ns between the allocations, the program saw {lo}-{hi}")


def case_exit_return(ctx):
    exit_case(ctx, "return", 0)


def case_exit_exit(ctx):
    exit_case(ctx, "exit", 3)


def case_exit_kill(ctx):
    # Killed after its work: no exit handler runs, and the exit watcher finishes the
    # capture (complete, all of it in it). A writer killed while it holds its lock leaves
    # the capture truncated (docs/tracer.md): that known limit is tried again, at most twice.
    argv = [ctx.prog("exits"), "kill"]
    for attempt in range(3):
        res = traced_and_native(ctx, "exit_kill", argv, expect_rc=-signal.SIGKILL, kill=True,
                                status=None)
        status = {m: res[m]["summary"]["status"] for m in ("baseline", "traced")}
        if attempt < 2 and "recording" in status.values():
            print(f"exit_kill: {status}, the known limit (the writer killed holding its lock); "
                  "again")
            continue
        for mode, st in status.items():
            ctx.check_eq(f"exit_kill ({mode}): status", st, "complete")
        base, got = res["baseline"]["summary"], res["traced"]["summary"]
        truth = res["traced"]["truth"]
        compare(ctx, "exit_kill", got, expected_from(base, truth), base, truth)
        return


def case_exit_signals(ctx):
    # abort and SIGSEGV 0.4 s after the work: the capture reads and holds all of it.
    # Whether the tracer finalizes in a signal handler (complete) or not (truncated) is its
    # choice; both are accepted, and printed.
    for mode, sig in (("abort", signal.SIGABRT), ("segv", signal.SIGSEGV)):
        res = exact_case(ctx, "exit_" + mode, [ctx.prog("exits"), mode], expect_rc=-sig,
                         status=None)
        st = res["traced"]["summary"]["status"]
        ctx.check(st in ("complete", "truncated"), f"exit_{mode}: status {st}")
        print(f"exit_{mode}: status {st}")
    # abort at once: whatever was recorded reads, and nothing is invented.
    res = traced_and_native(ctx, "exit_abort_now", [ctx.prog("exits"), "abort_now"],
                            expect_rc=-signal.SIGABRT, status=None)
    s, base, truth = res["traced"]["summary"], res["baseline"]["summary"], \
        res["traced"]["truth"]
    exp = expected_from(base, truth)
    for k in ("allocations", "frees", "bytes_allocated"):
        ctx.check(s[k] <= exp[k], f"exit_abort_now: {k} {s[k]} > expected {exp[k]}")
    print(f"exit_abort_now: status {s['status']}, {s['allocations']} of {exp['allocations']}"
          " allocations recorded")


def case_exit_thread(ctx):
    # A thread calls exit(5) while three threads loop on malloc(64)/free: the capture is
    # complete and consistent; beyond the known work, at most one 64-byte block per
    # looping thread may be caught between its malloc and its free.
    res = traced_and_native(ctx, "exit_thread", [ctx.prog("exits"), "thread_exit"],
                            expect_rc=5)
    s, base, truth = res["traced"]["summary"], res["baseline"]["summary"], \
        res["traced"]["truth"]
    exp = expected_from(base, truth)
    extra_blocks = s["leaked_allocations"] - exp["leaked_allocations"]
    extra_bytes = s["leaked_bytes"] - exp["leaked_bytes"]
    ctx.check(0 <= extra_blocks <= 3, f"exit_thread: {extra_blocks} unexpected live blocks")
    ctx.check_eq("exit_thread: extra live bytes", extra_bytes, 64 * extra_blocks)
    ctx.check(s["allocations"] >= exp["allocations"] + 100,
              f"exit_thread: only {s['allocations']} allocations (churn not recorded?)")
    ctx.check_eq("exit_thread: unmatched_frees", s["unmatched_frees"], 0)
    ctx.check(s["threads"] >= 2, f"exit_thread: {s['threads']} threads")
    extra_calls = s["calls"].get("malloc", 0) - exp["calls"]["malloc"]
    ctx.check(extra_calls >= s["allocations"] - exp["allocations"],
              "exit_thread: fewer malloc calls than malloc events")


def case_launcher(ctx):
    # The launcher passes the exit code through and names the capture on stderr.
    d = ctx.fresh_dir("launcher")
    truth = os.path.join(d, "truth.json")
    rc, out, err, _ = run(ctx, [ctx.prog("exits"), "exit"], {"TRUTH_FILE": truth}, True,
                          outdir=d, launcher=True)
    path = os.path.join(d, "cap.launcher.db")
    ctx.check_eq("launcher: exit status", rc, 3)
    ctx.check_eq("launcher: stdout", out, b"")
    ctx.check(path.encode() in err, f"launcher: capture path not on stderr: {err!r}")
    if ctx.check(os.path.exists(path), f"launcher: no capture at {path}"):
        s = summary(ctx, path)
        consistency(ctx, "launcher", s)
        ctx.check_eq("launcher: status", s["status"], "complete")
        ctx.check(s["allocations"] >= read_truth(truth)["allocations"],
                  "launcher: fewer allocations than the program made")
    os.unlink(path)  # an existing capture is never overwritten without -f (e2e.trust_launcher)
    rc, out, err, _ = run(ctx, [ctx.prog("exits"), "return"], {"TRUTH_FILE": truth}, True,
                          outdir=d, launcher=True)
    ctx.check_eq("launcher: exit status 0", rc, 0)


def case_unwritable(ctx):
    # A tracer failure (the output cannot be created) is one "memtrace: ..." line on
    # stderr; the program runs on untraced, with the same stdout, exit status and truth.
    d = ctx.fresh_dir("unwritable")
    res = []
    for traced in (False, True):
        truth = os.path.join(d, f"truth{int(traced)}.json")
        env = {"TRUTH_FILE": truth}
        if traced:
            env["LD_PRELOAD"] = ctx.preload
            env["MEMTRACE_OUTPUT"] = os.path.join(d, "no-such-dir", "cap.db")
        rc, out, err, _ = run(ctx, [ctx.prog("exits"), "exit"], env, False)
        res.append((rc, out, err, read_truth(truth) if os.path.exists(truth) else None))
    (nrc, nout, nerr, ntruth), (trc, tout, terr, ttruth) = res
    ctx.check_eq("unwritable: exit status", trc, nrc)
    ctx.check_eq("unwritable: stdout", tout, nout)
    ctx.check_eq("unwritable: truth", ttruth, ntruth)
    lines = terr.decode(errors="replace").splitlines()
    ctx.check(len(lines) == 1 and lines[0].startswith("memtrace: "),
              f"unwritable: expected one 'memtrace: ...' line on stderr, got {terr!r}")
    ctx.check(not os.path.exists(os.path.join(d, "no-such-dir")),
              "unwritable: the tracer created the missing directory")


# ---- real programs nobody here wrote

def real_program(ctx, name, argv, cwd_setup=None, stdin=None, env=None):
    """Runs argv untraced and traced in the same fresh directory; output must be
    identical; every capture written (one per process) must read and be consistent."""
    d = ctx.fresh_dir(name)
    results = []
    for traced in (False, True):
        work = os.path.join(d, "work")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        if cwd_setup:
            cwd_setup(work)
        caps = os.path.join(d, "caps")
        shutil.rmtree(caps, ignore_errors=True)
        os.makedirs(caps)
        e = {"HOME": work, "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
             "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
             "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}
        e.update(env or {})
        results.append(run(ctx, argv, e, traced, outdir=caps, cwd=work, stdin=stdin))
    (nrc, nout, nerr, _), (trc, tout, terr, tpid) = results
    ctx.check_eq(f"{name}: exit status traced vs untraced", trc, nrc)
    ctx.check_eq(f"{name}: stdout traced vs untraced", tout, nout)
    ctx.check_eq(f"{name}: stderr traced vs untraced", terr, nerr)
    caps = sorted(glob.glob(os.path.join(d, "caps", "cap.*.db")))
    ctx.check(os.path.join(d, "caps", f"cap.{tpid}.db") in caps,
              f"{name}: no capture of the process itself ({caps})")
    for path in caps:
        s = summary(ctx, path)
        label = f"{name} {os.path.basename(path)}"
        consistency(ctx, label, s)
        ctx.check_eq(f"{label}: status", s["status"], "complete")
        ctx.check(s["events"] > 0, f"{label}: no events")
        ctx.check_eq(f"{label}: unmatched_frees", s["unmatched_frees"], 0)
        print(f"{label}: {s['events']} events, {s['allocations']} allocations, peak "
              f"{s['peak_bytes']}, leaked {s['leaked_bytes']} in {s['leaked_allocations']}, "
              f"{s['threads']} threads")
    return nrc, nout


PY_SCRIPT = r"""
import json, sys, collections
words = collections.Counter(w for w in ("lorem ipsum dolor sit amet " * 2000).split())
table = {i: [str(j) * (i % 7) for j in range(i % 50)] for i in range(3000)}
print(json.dumps(sorted(words.items())))
print(sum(len(v) for v in table.values()), len(json.dumps(table)))
print("to stderr", file=sys.stderr)
sys.exit(4)
"""


def case_real_python(ctx):
    rc, out = real_program(ctx, "python3", [sys.executable, "-c", PY_SCRIPT])
    ctx.check_eq("python3: exit status", rc, 4)
    ctx.check(b'"amet"' in out, "python3: unexpected output")


def case_real_git(ctx):
    git = shutil.which("git")
    if not git:
        raise Skip("git is not installed (scripts/install-deps.sh --test)")
    rc, out = real_program(ctx, "git_version", [git, "--version"])
    ctx.check(rc == 0 and out.startswith(b"git version"), "git --version failed")
    script = ("set -e; git init -q -b main repo; cd repo; echo hello > a.txt; git add a.txt; "
              "git -c user.name=T -c user.email=t@example.org commit -q -m first; "
              "git log --format='%H %an %s'; git status --short; git log nosuchref || true")
    rc, out = real_program(ctx, "git", ["/bin/sh", "-c", script])
    ctx.check_eq("git: exit status", rc, 0)
    ctx.check(b" T first" in out, f"git: unexpected output {out!r}")


SQL = b"""
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)
INSERT INTO t SELECT x, printf('name-%05d', x), x * 0.5 FROM c;
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(v), max(name) FROM t;
SELECT name FROM t WHERE id % 1000 = 0 ORDER BY name DESC;
.tables
SELECT * FROM no_such_table;
"""


def case_real_sqlite3(ctx):
    sq = shutil.which("sqlite3")
    if not sq:
        raise Failure("sqlite3 is not installed (scripts/install-deps.sh --test)")
    rc, out = real_program(ctx, "sqlite3", [sq, "test.db"], stdin=SQL)
    ctx.check(b"5000|6251250.0|name-05000" in out, f"sqlite3: unexpected output {out!r}")


# ---- memreport on bad files

def case_cli_errors(ctx):
    d = ctx.fresh_dir("cli_errors")
    good = os.path.join(d, "good.db")
    # A real capture to damage: one of the known programs, traced.
    rc, _, _, pid = run(ctx, [ctx.prog("leaks")], {"TRUTH_FILE": os.path.join(d, "t.json")},
                        True, outdir=d)
    os.rename(capture_of(ctx, d, pid), good)
    r = subprocess.run([ctx.memreport, "summary", good, "--json"], capture_output=True)
    ctx.check_eq("cli: good capture exit status", r.returncode, 0)
    size = os.path.getsize(good)
    with open(good, "rb") as f:
        data = f.read()

    def variant(name, content=None, sql=None):
        p = os.path.join(d, name)
        if content is not None:
            with open(p, "wb") as f:
                f.write(content)
        else:
            shutil.copyfile(good, p)
            db = sqlite3.connect(p)
            db.executescript(sql)
            db.commit()
            db.close()
        return p

    def expect(label, path, code, words):
        r = subprocess.run([ctx.memreport, "summary", path, "--json"], capture_output=True,
                           timeout=TIMEOUT)
        err = r.stderr.decode(errors="replace")
        ctx.check_eq(f"cli {label}: exit status", r.returncode, code, err.strip())
        ctx.check(err.startswith(f"memreport: {path}: "),
                  f"cli {label}: message does not name the file: {err!r}")
        ctx.check(any(w in err for w in words), f"cli {label}: unclear message {err!r}")
        ctx.check_eq(f"cli {label}: stdout", r.stdout, b"")
        ctx.check(len(err.strip().splitlines()) == 1, f"cli {label}: not one line: {err!r}")

    expect("text file", variant("text.db", b"just some text\n" * 20), 2, ["not a memtrace"])
    expect("empty file", variant("empty.db", b""), 2, ["empty"])
    other = os.path.join(d, "other.db")
    db = sqlite3.connect(other)
    db.executescript("CREATE TABLE x(a); INSERT INTO x VALUES (1);")
    db.close()
    expect("foreign sqlite", other, 2, ["not a memtrace"])
    expect("truncated", variant("half.db", data[:size // 2]), 2, ["truncated"])
    expect("newer schema", variant("newer.db", sql="PRAGMA user_version=99;"), 2,
           ["newer", "version 99"])
    expect("corrupt chunk",
           variant("chunk.db", sql="UPDATE event_chunk SET data = zeroblob(length(data))"
                                   " WHERE id = (SELECT min(id) FROM event_chunk);"
                                   "UPDATE event_chunk SET count = count + 1"
                                   " WHERE id = (SELECT min(id) FROM event_chunk);"),
           2, ["corrupt"])
    mid = size // 2 - 32768
    expect("garbage pages", variant("garbage.db", data[:mid] + b"\x5a" * 65536 +
                                    data[mid + 65536:]), 2, ["corrupt", "not a memtrace"])
    missing = os.path.join(d, "missing.db")
    r = subprocess.run([ctx.memreport, "summary", missing], capture_output=True)
    ctx.check(r.returncode in (2, 3), f"cli missing file: exit status {r.returncode}")
    ctx.check(r.stderr.decode().startswith(f"memreport: {missing}: "),
              f"cli missing file: {r.stderr!r}")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def prog_arg(text):
    name, sep, path = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=PATH")
    return name, path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="print the cases, one a line")
    ap.add_argument("--lib", help="libmemtrace.so")
    ap.add_argument("--launcher", help="the memtrace launcher")
    ap.add_argument("--memreport", help="memreport")
    ap.add_argument("--prog", action="append", type=prog_arg, default=[],
                    metavar="NAME=PATH", help="a test program (e2e_NAME), once each")
    ap.add_argument("--keep", action="store_true", help="keep the temporary files")
    ap.add_argument("cases", nargs="*", metavar="CASE", help="a case of --list, or all")
    args = ap.parse_args()
    if args.list:
        print("\n".join(sorted(CASES)))
        return 0
    if not (args.lib and args.launcher and args.memreport and args.cases):
        ap.error("--lib, --launcher, --memreport and a case are required")
    unknown = set(args.cases) - set(CASES) - {"all"}
    if unknown:
        ap.error(f"no case {', '.join(sorted(unknown))} (see --list)")
    names = sorted(CASES) if "all" in args.cases else args.cases
    try:
        ctx = Ctx(args)
    except Failure as e:
        print("FAIL:", e)
        return 1
    skipped = []
    for n in names:
        print(f"== {n}")
        try:
            CASES[n](ctx)
        except Skip as e:
            skipped.append(n)
            print("SKIP:", e)
        except (Failure, OSError, ValueError, KeyError) as e:
            ctx.errors.append(f"{n}: {e!r}")
            print("FAIL:", repr(e))
    ctx.cleanup()
    if ctx.errors:
        print(f"{len(ctx.errors)} failures")
        return 1
    if skipped:
        print("skipped:", " ".join(skipped))
        return 77
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
