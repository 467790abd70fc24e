#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The benchmark driver behind bench/run.sh: runs every workload natively, under the floor shim
# (bench/floor/floor_fp.c: frame-pointer walks only), under memtrace
# (MEMTRACE_UNWIND=auto, fp, libunwind; and sampled, mt-sample) and under heaptrack (full and
# --raw), interleaved and repeated, takes medians, checks each capture's counts against the
# workload's own, and prints the table (also written to bench/results.txt). It measures; it
# asserts no speed.
import datetime
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import results_file

HERE = os.path.dirname(os.path.abspath(__file__))

# name, binary, arguments
WORKLOADS = [
    ("st", "bench_st", []),
    ("st_fp", "bench_st_fp", []),
    ("st_noinfo", "bench_st_noinfo", []),
    ("st_deep", "bench_st", ["300"]),
    ("xt2", "bench_xt", ["2"]),
    ("xt2_fp", "bench_xt_fp", ["2"]),
    ("xt4", "bench_xt", ["4"]),
    ("xt4_fp", "bench_xt_fp", ["4"]),
    ("rs", "bench_rs", []),
    ("rs_fp", "bench_rs_fp", []),
    ("cxx", "bench_cxx", []),
    ("cxx_fp", "bench_cxx_fp", []),
    ("re", "bench_re", []),
    ("re_fp", "bench_re_fp", []),
]
MEMTRACE_MODES = ["auto", "fp", "libunwind"]
# mt-sample: MEMTRACE_UNWIND=auto with MEMTRACE_SAMPLE_BYTES=BENCH_SAMPLE_BYTES (default
# 512 KiB): its capture holds the sampled allocations only, so it is checked for its exact
# call counts and its pairing instead (check_sampled). Target: at most 1.05x native.
SAMPLE_BYTES_DEFAULT = 512 * 1024
TARGET_SAMPLE_RATIO = 1.05
# Modes run BENCH_SLOW_REPS times only (each takes several times the native time).
SLOW_MODES = {"mt-libunwind", "heaptrack", "heaptrack-raw"}

TARGET_RATIO = 1.5
TARGET_BYTES_PER_EVENT = 8.0
TARGET_EXTRA_RSS_MIB = 64.0
# Issue 31: C++ through libstdc++ at most 2.0x native or 1.25x the floor shim's time; 4
# threads on 2 cores (BENCH_CPUS=0,1 where the machine has more) at most 1.4x.
TARGETS_31 = {"cxx": (2.0, 1.25), "cxx_fp": (2.0, 1.25), "xt4": (1.4, None),
              "xt4_fp": (1.4, None)}


def env_int(name, default):
    v = os.environ.get(name, "")
    return int(v) if v else default


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_rev():
    if os.environ.get("BENCH_GIT_REV"):  # the tracer was built from another tree (an export)
        return os.environ["BENCH_GIT_REV"]
    try:
        return subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run(argv, env, stdout_path, timeout=None, mem_mib=None):
    """Runs argv in its own process group; returns (exit code, wall s, cpu s, max RSS KiB) of
    it and its descendants. Past `timeout` seconds the group is killed (exit code -9);
    mem_mib caps every process's address space (heaptrack's interpreter can eat it all)."""
    cpus = os.environ.get("BENCH_CPUS", "")

    def limit():
        if mem_mib:
            resource.setrlimit(resource.RLIMIT_AS, (mem_mib << 20, mem_mib << 20))
        if cpus:  # e.g. 0,1: 4 threads on 2 cores on a machine with more
            os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
    with open(stdout_path, "w") as out:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True, preexec_fn=limit)
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if timeout and time.monotonic() - t0 > timeout:
                os.killpg(p.pid, signal.SIGKILL)
                _, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.002)
        wall = time.monotonic() - t0
    try:
        os.killpg(p.pid, signal.SIGKILL)  # leftovers of a killed or crashed run
    except ProcessLookupError:
        pass
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def parse_workload_line(path):
    with open(path, errors="replace") as f:
        text = f.read()
    m = re.search(r"^bench_\w+: (.*)$", text, re.M)
    if not m:
        return None, text
    fields = dict(kv.split("=", 1) for kv in m.group(1).split())
    return {k: float(v) for k, v in fields.items()}, text


class Bench:
    def __init__(self, build):
        self.build = build
        self.lib = os.path.join(build, "preload", "libmemtrace.so")
        self.memreport = os.path.join(build, "reporter", "memreport")
        self.events = env_int("BENCH_EVENTS", 10_000_000)
        self.reps = max(1, env_int("BENCH_REPS", 3))
        self.slow_reps = max(0, min(self.reps, env_int("BENCH_SLOW_REPS", 1)))
        only = os.environ.get("BENCH_WORKLOADS", "")
        self.workloads = [w for w in WORKLOADS if not only or w[0] in only.split(",")]
        self.heaptrack = shutil.which("heaptrack") if env_int("BENCH_HEAPTRACK", 1) else None
        self.timeout = env_int("BENCH_TIMEOUT", 300)
        self.heaptrack_timeout = env_int("BENCH_HEAPTRACK_TIMEOUT", 120)
        self.heaptrack_mem = env_int("BENCH_HEAPTRACK_MEM_MIB", 4096)
        self.tmp = tempfile.mkdtemp(prefix="memtrace-bench.", dir=os.environ.get("BENCH_TMP"))
        # warm: a symbol cache of the bench's own, filled by the zero-event baseline runs
        # (a user tracing a program the second time); cold: none, every run reads DWARF.
        self.symbol_cache = os.environ.get("BENCH_SYMBOL_CACHE", "warm")
        if self.symbol_cache not in ("warm", "cold"):
            sys.exit("bench: BENCH_SYMBOL_CACHE must be warm or cold")
        self.modes = ["native", "floor-fp"] + ["mt-" + m for m in MEMTRACE_MODES] + ["mt-sample"]
        self.floor_lib = os.path.join(build, "bench", "libbench_floor_fp.so")
        self.sample_bytes = env_int("BENCH_SAMPLE_BYTES", SAMPLE_BYTES_DEFAULT)
        only_modes = os.environ.get("BENCH_MODES", "")  # e.g. native,mt-auto,mt-sample
        if only_modes:
            self.modes = [m for m in self.modes if m in only_modes.split(",")]
        if self.heaptrack:
            heaptrack_modes = ["heaptrack"]
            # --raw (record only, no interpreter): older heaptracks lack it, so ask.
            h = subprocess.run([self.heaptrack, "--help"], capture_output=True, text=True)
            if "--raw" in h.stdout + h.stderr:
                heaptrack_modes.append("heaptrack-raw")
            self.modes += [m for m in heaptrack_modes
                           if not only_modes or m in only_modes.split(",")]
        self.rev = git_rev()  # now: the tree may move on while the bench runs
        self.lib_time = (datetime.datetime.fromtimestamp(os.path.getmtime(self.lib))
                         .strftime("%Y-%m-%d %H:%M") if os.path.exists(self.lib) else "?")
        # Full heaptrack runs out of memory on every workload here (see README), so by default
        # it runs on the one-thread ones only; heaptrack --raw runs on all.
        full = os.environ.get("BENCH_HEAPTRACK_FULL", "st,st_fp")
        self.heaptrack_full = None if full == "all" else set(full.split(","))
        self.baseline = {}  # workload -> (allocations, frees) the runtime makes by itself
        self.samples = {}   # (workload, mode) -> list of dicts
        self.problems = []

    def workload_env(self, events):
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("MEMTRACE_") or k == "LD_PRELOAD":
                del env[k]
        env["BENCH_EVENTS"] = str(events)
        return env

    def summary(self, capture):
        r = subprocess.run([self.memreport, "summary", "--json", capture],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return None, r.stderr.strip()
        return json.loads(r.stdout), None

    def run_memtrace(self, name, exe, args, unwind, events, sample_bytes=0):
        capture = os.path.join(self.tmp, f"{name}.{unwind}.db")
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(capture + suffix):
                os.unlink(capture + suffix)
        env = self.workload_env(events)
        env.update(LD_PRELOAD=self.lib, MEMTRACE_OUTPUT=capture, MEMTRACE_UNWIND=unwind,
                   MEMTRACE_SYMBOL_CACHE=os.path.join(self.tmp, "symbols.db")
                   if self.symbol_cache == "warm" else "0")
        if sample_bytes:
            env["MEMTRACE_SAMPLE_BYTES"] = str(sample_bytes)
        out = os.path.join(self.tmp, "out.txt")
        rc, wall, cpu, rss = run([exe] + args, env, out, timeout=self.timeout)
        res = {"rc": rc, "wall": wall, "cpu": cpu, "rss": rss}
        res["prog"], res["text"] = parse_workload_line(out)
        if os.path.exists(capture):
            res["bytes"] = os.path.getsize(capture)
            res["summary"], res["summary_error"] = self.summary(capture)
            os.unlink(capture)
        return res

    def measure_baselines(self):
        for name, binary, args in self.workloads:
            exe = os.path.join(self.build, "bench", binary)
            res = self.run_memtrace(name, exe, args, "auto", 0)
            s = res.get("summary")
            if res["rc"] != 0 or not s:
                self.problems.append(f"{name}: the zero-event baseline run failed "
                                     f"(exit {res['rc']}): {res.get('summary_error', '')}")
                continue
            self.baseline[name] = (s["allocations"], s["frees"])

    def check_counts(self, name, mode, res):
        """Says whether the capture holds exactly the workload's heap calls (plus the
        runtime's own, measured by the zero-event run of the same program)."""
        s, prog = res.get("summary"), res.get("prog")
        if res["rc"] != 0:
            return f"FAIL exit {res['rc']}"
        if not s:
            return "FAIL no capture: " + (res.get("summary_error") or "missing")
        if not prog:
            return "FAIL no workload line"
        if name not in self.baseline:
            return "? no baseline"
        ba, bf = self.baseline[name]
        want_a, want_f = int(prog["mallocs"]) + ba, int(prog["frees"]) + bf
        if s["status"] != "complete":
            return f"FAIL status {s['status']}"
        if s["allocations"] != want_a or s["frees"] != want_f:
            return (f"FAIL allocs {s['allocations']}/{want_a} frees {s['frees']}/{want_f}")
        return "exact"

    def check_sampled(self, name, res):
        """A sampled capture: complete, every recorded free paired with its allocation, and the
        allocation calls counted exactly (the workload's plus the runtime's own, as the
        exact check; a realloc counts as an allocation there)."""
        s, prog = res.get("summary"), res.get("prog")
        if res["rc"] != 0 or not s or not prog:
            return f"FAIL exit {res['rc']} " + (res.get("summary_error") or "")
        if s["status"] != "complete" or s["unmatched_frees"]:
            return f"FAIL status {s['status']}, {s['unmatched_frees']} unmatched frees"
        calls = s.get("calls", {})
        allocs = sum(v for k, v in calls.items() if not k.startswith("free"))
        want = int(prog["mallocs"]) + self.baseline.get(name, (0, 0))[0]
        if allocs != want:
            return f"FAIL allocation calls {allocs}/{want}"
        return "sampled"

    def run_heaptrack(self, name, exe, args, raw, events):
        base = os.path.join(self.tmp, f"{name}.heaptrack{'-raw' if raw else ''}")
        argv = [self.heaptrack] + (["--raw"] if raw else []) + ["-o", base, exe] + args
        out = os.path.join(self.tmp, "out.txt")
        rc, wall, cpu, rss = run(argv, self.workload_env(events), out,
                                 timeout=self.heaptrack_timeout, mem_mib=self.heaptrack_mem)
        res = {"rc": rc, "wall": wall, "cpu": cpu, "rss": rss}
        res["prog"], res["text"] = parse_workload_line(out)
        for f in os.listdir(self.tmp):
            path = os.path.join(self.tmp, f)
            if path.startswith(base + "."):
                res["bytes"] = os.path.getsize(path)
                os.unlink(path)
        if rc != 0 or not res["prog"]:
            if rc == -9:
                tail = f"killed after {self.heaptrack_timeout} s (BENCH_HEAPTRACK_TIMEOUT)"
            elif "std::bad_alloc" in res["text"]:
                tail = (f"heaptrack_interpret ran out of memory (std::bad_alloc under the "
                        f"{self.heaptrack_mem} MiB cap, BENCH_HEAPTRACK_MEM_MIB); the program "
                        f"then died of SIGPIPE" if rc == 141 else "")
            else:
                tail = " ".join(res["text"].strip().splitlines()[-2:])[:160]
            self.problems.append(f"{name} {'heaptrack --raw' if raw else 'heaptrack'}: "
                                 f"exit {rc}: {tail}")
        return res

    def run_one(self, name, binary, args, mode):
        exe = os.path.join(self.build, "bench", binary)
        if mode in ("native", "floor-fp"):
            out = os.path.join(self.tmp, "out.txt")
            env = self.workload_env(self.events)
            if mode == "floor-fp":
                env["LD_PRELOAD"] = self.floor_lib
            rc, wall, cpu, rss = run([exe] + args, env, out, timeout=self.timeout)
            res = {"rc": rc, "wall": wall, "cpu": cpu, "rss": rss}
            res["prog"], res["text"] = parse_workload_line(out)
            if rc != 0:
                self.problems.append(f"{name} {mode}: exit {rc}")
        elif mode == "mt-sample":
            res = self.run_memtrace(name, exe, args, "auto", self.events, self.sample_bytes)
            res["check"] = self.check_sampled(name, res)
            if res["check"] != "sampled":
                self.problems.append(f"{name} {mode}: {res['check']}")
        elif mode.startswith("mt-"):
            res = self.run_memtrace(name, exe, args, mode[3:], self.events)
            res["check"] = self.check_counts(name, mode, res)
            if res["check"] != "exact":
                self.problems.append(f"{name} {mode}: {res['check']}")
        else:
            res = self.run_heaptrack(name, exe, args, mode == "heaptrack-raw", self.events)
        res.pop("text", None)
        self.samples.setdefault((name, mode), []).append(res)
        return res

    def go(self):
        t_start = time.monotonic()
        self.measure_baselines()
        for rep in range(self.reps):
            for name, binary, args in self.workloads:
                for mode in self.modes:
                    if mode in SLOW_MODES and rep >= self.slow_reps:
                        continue
                    if (mode == "heaptrack" and self.heaptrack_full is not None
                            and name not in self.heaptrack_full):
                        continue
                    res = self.run_one(name, binary, args, mode)
                    print(f"  [{rep + 1}/{self.reps}] {name:7} {mode:14} {res['wall']:7.2f} s"
                          f"{'  ' + res['check'] if 'check' in res else ''}",
                          file=sys.stderr, flush=True)
        self.total_s = time.monotonic() - t_start
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- reporting ------------------------------------------------------------------------

    def med(self, name, mode, key, ok_only=True):
        vals = [s[key] for s in self.samples.get((name, mode), [])
                if key in s and s[key] is not None and (not ok_only or s["rc"] == 0)]
        return statistics.median(vals) if vals else None

    def events_of(self, name, mode):
        for s in self.samples.get((name, mode), []):
            if s.get("summary"):
                return s["summary"]["events"]
            if s.get("prog"):
                return s["prog"]["events"]
        return None

    def report(self, load_before):
        L = []
        now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
        L.append(f"memtrace bench, {now}, tracer built from git {self.rev} "
                 f"(libmemtrace.so of {self.lib_time})")
        L.append(f"machine: nproc={os.cpu_count()}, {cpu_model()}, kernel {platform.release()}, "
                 f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}")
        L.append(f"BENCH_EVENTS={self.events}, repetitions {self.reps} (libunwind and heaptrack "
                 f"modes {self.slow_reps}), medians; symbol cache {self.symbol_cache}; "
                 f"run took {self.total_s:.0f} s")
        L.append("wall = process wall time (tracer start-up and finalization included); "
                 "cpu = user+sys of the process tree")
        L.append("")
        hdr = (f"{'workload':8} {'mode':14} {'wall s':>7} {'x nat':>6} {'cpu s':>7} {'x nat':>6} "
               f"{'ns/pair':>8} {'B/event':>8} {'+RSS MiB':>9}  counts")
        L.append(hdr)
        L.append("-" * len(hdr))
        for name, _, _ in self.workloads:
            nat_wall = self.med(name, "native", "wall")
            nat_cpu = self.med(name, "native", "cpu")
            nat_rss = self.med(name, "native", "rss")
            for mode in self.modes:
                if (name, mode) not in self.samples:
                    continue
                wall, cpu = self.med(name, mode, "wall"), self.med(name, mode, "cpu")
                rss = self.med(name, mode, "rss")
                prog = [s["prog"]["ns_per_pair"] for s in self.samples[(name, mode)]
                        if s.get("prog")]
                nspp = statistics.median(prog) if prog else None
                size = self.med(name, mode, "bytes")
                ev = self.events_of(name, mode)

                def fmt(v, f):
                    return format(v, f) if v is not None else "-".rjust(int(f.split(".")[0]))
                ratio_w = wall / nat_wall if wall and nat_wall else None
                ratio_c = cpu / nat_cpu if cpu and nat_cpu else None
                bpe = size / ev if size and ev else None
                extra = (rss - nat_rss) / 1024 if rss and nat_rss and mode != "native" else None
                checks = [s.get("check") for s in self.samples[(name, mode)] if s.get("check")]
                fails = [c for c in checks if c not in ("exact", "sampled")]
                chk = (f"{checks[0]} {len(checks)}/{len(checks)}" if checks and not fails
                       else fails[0] if fails else "")
                if any(s["rc"] != 0 for s in self.samples[(name, mode)]):
                    chk = (chk + " " if chk else "") + "(a run failed)"
                L.append(f"{name:8} {mode:14} {fmt(wall, '7.2f')} {fmt(ratio_w, '6.2f')} "
                         f"{fmt(cpu, '7.2f')} {fmt(ratio_c, '6.2f')} {fmt(nspp, '8.0f')} "
                         f"{fmt(bpe, '8.2f')} {fmt(extra, '9.1f')}  {chk}")
            L.append("")

        L.append("Against the targets (memtrace, MEMTRACE_UNWIND=auto):")

        def ratio(name, mode, key="wall"):
            a, b = self.med(name, mode, key), self.med(name, "native", key)
            return a / b if a and b else None

        for name, _, _ in self.workloads:
            r, c = ratio(name, "mt-sample"), ratio(name, "mt-sample", "cpu")
            if r is not None:
                L.append(f"  {name:7} sampled ({self.sample_bytes} B) traced/native wall {r:.2f}x, "
                         f"cpu {c:.2f}x (target <= {TARGET_SAMPLE_RATIO}x): "
                         f"{'met' if r <= TARGET_SAMPLE_RATIO else 'NOT met'}")
        for name, (most, of_floor) in TARGETS_31.items():
            r, fl = ratio(name, "mt-auto"), ratio(name, "floor-fp")
            if r is None:
                continue
            met = r <= most or (of_floor and fl and r / fl <= of_floor)
            x_floor = f", {r / fl:.2f}x the floor's ({fl:.2f}x)" if fl else ""
            want = f"<= {most}x" + (f" or {of_floor}x the floor" if of_floor else "")
            L.append(f"  {name:7} traced/native wall {r:.2f}x{x_floor} (issue 31: {want}): "
                     f"{'met' if met else 'NOT met'}")
        for name in ("st", "st_fp"):
            r = ratio(name, "mt-auto")
            if r is not None:
                L.append(f"  {name:7} traced/native wall {r:.2f}x (target <= {TARGET_RATIO}x): "
                         f"{'met' if r <= TARGET_RATIO else 'NOT met'}")
        for name, _, _ in self.workloads:
            ev = self.events_of(name, "mt-auto")
            size = self.med(name, "mt-auto", "bytes")
            if ev and size:
                b = size / ev
                L.append(f"  {name:7} capture {b:.2f} bytes/event (target <= "
                         f"{TARGET_BYTES_PER_EVENT:.0f}): "
                         f"{'met' if b <= TARGET_BYTES_PER_EVENT else 'NOT met'}")
        for name, _, _ in self.workloads:
            rss, nat = self.med(name, "mt-auto", "rss"), self.med(name, "native", "rss")
            if rss and nat:
                x = (rss - nat) / 1024
                L.append(f"  {name:7} extra RSS {x:.1f} MiB (target <= {TARGET_EXTRA_RSS_MIB:.0f}):"
                         f" {'met' if x <= TARGET_EXTRA_RSS_MIB else 'NOT met'}")
        # Scaling: the cross-thread workloads make as many events as the one-thread one with
        # the same per-pair work, so wall(st)/wall(xtN) is their speed-up from N threads.
        for variant in ("", "_fp"):
            st = "st" + variant
            for n in (2, 4):
                xt = f"xt{n}{variant}"
                parts = []
                for mode in self.modes:
                    a, b = self.med(st, mode, "wall"), self.med(xt, mode, "wall")
                    if a and b:
                        parts.append(f"{mode} {a / b:.2f}x")
                if parts:
                    L.append(f"  {n} threads vs 1 ({xt}/{st}), throughput: " + ", ".join(parts))
                a, b = self.med(st, "native", "wall"), self.med(xt, "native", "wall")
                if n == 2 and a and b and a / b < 1.3:
                    L.append("    (native gains little from 2 threads here: the machine had no "
                             "free second core, so scaling was not measurable in this run)")
        # Load-proof view of the same: CPU the tracer adds per event (all its threads). When
        # it is no higher with 2 or 4 threads than with 1, the tracer does not serialise them.
        L.append("  tracer CPU per event (traced cpu - native cpu) / events, in ns:")
        for name, _, _ in self.workloads:
            nat = self.med(name, "native", "cpu")
            parts = []
            for mode in self.modes[1:]:
                # A sampled capture holds few events (the floor none): per event of the
                # workload instead.
                ev = self.events_of(name, mode if mode.startswith("mt-") and mode != "mt-sample"
                                    else "native")
                c = self.med(name, mode, "cpu")
                if c and nat and ev:
                    parts.append(f"{mode} {(c - nat) / ev * 1e9:.0f}")
            if parts:
                L.append(f"    {name:7} " + ", ".join(parts))
        L.append("memtrace/heaptrack wall (auto vs heaptrack, vs heaptrack --raw):")
        for name, _, _ in self.workloads:
            mt = self.med(name, "mt-auto", "wall")
            ht, raw = self.med(name, "heaptrack", "wall"), self.med(name, "heaptrack-raw", "wall")
            if mt and (ht or raw):
                a = (f"{mt / ht:.2f}x" if ht else "heaptrack failed" if "heaptrack" in self.modes
                     else "heaptrack not run")
                b = (f"{mt / raw:.2f}x" if raw else "heaptrack --raw failed"
                     if "heaptrack-raw" in self.modes else "heaptrack --raw not run")
                L.append(f"  {name:7} {a}, {b}")
        L.append("")
        L.append("Correctness: every memtrace capture must hold exactly the workload's mallocs "
                 "and frees plus the runtime's own (measured by a zero-event run):")
        bad = self.problems
        n_checked = sum(1 for v in self.samples.values() for s in v
                        if s.get("check") and s["check"] != "sampled")
        n_exact = sum(1 for v in self.samples.values() for s in v if s.get("check") == "exact")
        L.append(f"  {n_exact} of {n_checked} captures exact; baselines (allocations, frees): " +
                 ", ".join(f"{k} {v}" for k, v in self.baseline.items()))
        if bad:
            L.append("Problems:")
            L.extend("  " + p for p in bad)
        return "\n".join(L) + "\n"


def main():
    if len(sys.argv) != 2:
        print("usage: run.py BUILD_DIR", file=sys.stderr)
        return 1
    build = os.path.abspath(sys.argv[1])
    for path in ("preload/libmemtrace.so", "reporter/memreport", "bench/bench_st"):
        if not os.path.exists(os.path.join(build, path)):
            print(f"bench: {build}/{path} is missing (run bench/run.sh to build it)",
                  file=sys.stderr)
            return 1
    b = Bench(build)
    load = os.getloadavg()
    if load[0] > 0.5 * (os.cpu_count() or 1):
        print(f"bench: warning: load average {load[0]:.2f} on {os.cpu_count()} CPUs; wall times "
              "will be noisy (the cpu columns less so)", file=sys.stderr)
    print(f"bench: {len(b.workloads)} workloads x {len(b.modes)} modes, BENCH_EVENTS={b.events}, "
          f"{b.reps} repetitions, captures in {b.tmp}", file=sys.stderr)
    try:
        b.go()
    finally:
        shutil.rmtree(b.tmp, ignore_errors=True)
    text = b.report(load)
    sys.stdout.write(text)
    results_file.write(main=text)  # the other scripts' sections stay
    return 0


if __name__ == "__main__":
    sys.exit(main())
