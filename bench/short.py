#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# What tracing costs short-lived programs: start-up, capture creation, finalization and
# naming the frames at exit, which a 10-million-event run hides. Three parts, each run
# natively and under libmemtrace.so side by side (interleaved); asserts nothing:
# - programs: real programs nobody here wrote, with the symbol cache warm (a second trace of
#   the same program), cold (no cache: DWARF read at every exit) and MEMTRACE_SYMBOLIZE=0;
#   median wall ms of each;
# - startup: /bin/true and bench_tiny (one malloc, one free) run SHORT_STARTS times each,
#   cache warm; ms added per process (median of traced - native, and the total's mean),
#   traced with and without the exit watcher (MEMTRACE_EXIT_WATCH=0);
# - make: `make -j2` of a generated C project (SHORT_MAKE_FILES .c files, -O2 -g) natively
#   and traced whole by the memtrace launcher (`memtrace -o DIR/ make -j2`: make, sh, gcc,
#   cc1, as, ld, each its own capture), with a new symbol cache (cold: a first build) and
#   with the cache that run left (warm); wall and CPU ratios to native;
# - script: a shell script that runs SHORT_SCRIPT_PROCS short processes (true, cat, expr,
#   basename in turn), natively and traced whole, cache warm, under /bin/sh and under bash
#   (which forks where dash vforks); wall and CPU ratios;
# - phases: true, cat, expr and basename SHORT_PHASE_RUNS times each, traced whole and with
#   one part of the tracer's work off at a time (the leak scan, the exit watcher, names, all
#   recording): the CPU each part adds to a short process (not in the default parts).
# With SHORT_BEFORE=OTHER_BUILD_DIR (another tree's build, e.g. main's), the startup, make
# and script parts also run that build's tracer in the same interleaved rounds ("before";
# make: warm cache only), so the two are compared side by side under the same load.
# Usage: bench/short.py [BUILD_DIR]   (settings: SHORT_PARTS=programs,startup,make,script;
# SHORT_REPS 9, SHORT_STARTS 200, SHORT_MAKE_FILES 40, SHORT_MAKE_REPS 3,
# SHORT_SCRIPT_PROCS 1000, SHORT_SCRIPT_REPS 5, SHORT_PHASE_RUNS 60, SHORT_BEFORE,
# BENCH_RESULTS)
import datetime
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import results_file
from run import git_rev

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = [
    ("true", ["/bin/true"]),
    ("ls", ["ls", "/usr/lib"]),
    ("sqlite3", ["sqlite3", ":memory:", "select 1"]),
    ("git status", ["git", "-C", os.path.dirname(HERE), "status", "--short"]),
    ("python3", ["/usr/bin/python3", "-c", "pass"]),
]


def clean_env():
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMTRACE_")}
    base.pop("LD_PRELOAD", None)
    return base


FAILURES = []  # runs that exited non-zero: argv, exit code, the end of their stderr


def timed(argv, env, cwd=None):
    """Wall ms and CPU ms (user+sys of the process tree) of one run; a failed run is
    recorded in FAILURES (and reported) instead of stopping the bench."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, errors="replace")
    wall = (time.monotonic() - t0) * 1000
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000
    if p.returncode != 0:
        tail = [ln for ln in p.stderr.splitlines() if "capture written" not in ln][-6:]
        FAILURES.append(f"{' '.join(argv)} (in {cwd or '.'}): exit {p.returncode}: "
                        + " | ".join(tail))
        print("short.py: " + FAILURES[-1], file=sys.stderr, flush=True)
    return wall, cpu


def before_build():
    """The other build to compare with (SHORT_BEFORE), or None."""
    d = os.environ.get("SHORT_BEFORE")
    if not d:
        return None
    d = os.path.abspath(d)
    if not os.path.exists(os.path.join(d, "preload", "libmemtrace.so")):
        sys.exit(f"short.py: SHORT_BEFORE={d}: no preload/libmemtrace.so there")
    return d


def remove_captures(tmp):
    for f in os.listdir(tmp):
        if f.startswith("cap."):
            os.unlink(os.path.join(tmp, f))


def part_programs(lib, tmp):
    reps = int(os.environ.get("SHORT_REPS", "9"))
    cache = os.path.join(tmp, "symbols.db")
    base = clean_env()
    traced = dict(base, LD_PRELOAD=lib, MEMTRACE_OUTPUT=os.path.join(tmp, "cap.%p.db"))
    modes = [
        ("native", base),
        ("warm", dict(traced, MEMTRACE_SYMBOL_CACHE=cache)),
        ("cold", dict(traced, MEMTRACE_SYMBOL_CACHE="0")),
        ("no names", dict(traced, MEMTRACE_SYMBOLIZE="0")),
    ]
    rows = []
    for name, argv in PROGRAMS:
        if not shutil.which(argv[0]):
            continue
        # Fills the cache for "warm", as a first trace of the program would.
        subprocess.run(argv, env=modes[1][1], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times = {m: [] for m, _ in modes}
        for _ in range(reps):
            for mode, env in modes:
                times[mode].append(timed(argv, env)[0])
                remove_captures(tmp)
        rows.append((name, {m: statistics.median(v) for m, v in times.items()}))

    L = [f"median wall ms of {reps} runs each (interleaved); in brackets: added to native"]
    L.append(f"{'program':12} " + " ".join(f"{m:>16}" for m, _ in modes))
    for name, med in rows:
        cells = [f"{med['native']:16.1f}"]
        for mode, _ in modes[1:]:
            cells.append(f"{med[mode]:7.1f} (+{med[mode] - med['native']:5.1f})")
        L.append(f"{name:12} " + " ".join(cells))
    return L


def part_startup(lib, build, tmp):
    n = int(os.environ.get("SHORT_STARTS", "200"))
    cache = os.path.join(tmp, "symbols.db")
    base = clean_env()
    traced = dict(base, LD_PRELOAD=lib, MEMTRACE_OUTPUT=os.path.join(tmp, "cap.%p.db"),
                  MEMTRACE_SYMBOL_CACHE=cache)
    # The exit watcher's share (preload/writer/exit_watch.c): the same, without it.
    modes = [("", traced), (", no watcher", dict(traced, MEMTRACE_EXIT_WATCH="0"))]
    before = before_build()
    if before:
        modes.insert(0, (", before", dict(traced, LD_PRELOAD=os.path.join(
            before, "preload", "libmemtrace.so"))))
    L = [f"start-up and exit: {n} runs each, native and traced alternately, symbol cache warm; "
         "ms added per process: median of (traced - native) over the pairs, and the "
         "difference of the totals / runs; cpu = user+sys"]
    L.append(f"{'program':24} {'native ms':>10} {'traced ms':>10} {'added med':>10} "
             f"{'added mean':>11} {'cpu added':>10}  added p10-p90")
    for name, argv in [("true", ["/bin/true"]),
                       ("bench_tiny", [os.path.join(build, "bench", "bench_tiny")])]:
        if not os.path.exists(argv[0]):
            continue
        timed(argv, traced)  # fills the cache
        remove_captures(tmp)
        nat, ncpu = [], []
        tr = {label: ([], [], []) for label, _ in modes}  # wall, paired difference, cpu
        for _ in range(n):
            w0, c0 = timed(argv, base)
            nat.append(w0)
            ncpu.append(c0)
            for label, env in modes:
                w1, c1 = timed(argv, env)
                remove_captures(tmp)
                tr[label][0].append(w1)
                tr[label][1].append(w1 - w0)
                tr[label][2].append(c1)
        for label, _ in modes:
            wall, diff, cpu = tr[label]
            q = statistics.quantiles(diff, n=10)
            L.append(f"{name + label:24} {statistics.median(nat):10.2f} "
                     f"{statistics.median(wall):10.2f} {statistics.median(diff):10.2f} "
                     f"{(sum(wall) - sum(nat)) / n:11.2f} {(sum(cpu) - sum(ncpu)) / n:10.2f}  "
                     f"{q[0]:.2f}-{q[-1]:.2f}")
    return L


PHASE_PROGRAMS = [("true", ["/bin/true"]), ("cat", ["cat", "/etc/passwd"]),
                  ("expr", ["expr", "1", "+", "4"]), ("basename", ["basename", "/a/b/c"])]
# Each setting turns one part of a process's cost off: the difference to the whole is that
# part's CPU. MEMTRACE_START=stopped records nothing, but loads, starts and ends the tracer.
PHASE_MODES = [("whole", {}), ("no leak scan", {"MEMTRACE_LEAKS": "0"}),
               ("no exit watcher", {"MEMTRACE_EXIT_WATCH": "0"}),
               ("no names", {"MEMTRACE_SYMBOLIZE": "0"}),
               ("recording stopped", {"MEMTRACE_START": "stopped"})]


def part_phases(lib, tmp):
    """CPU (user+sys) a short program gains, whole and with one part of the tracer's work
    off at a time, for this build and SHORT_BEFORE's; native, then each mode, in turn."""
    n = int(os.environ.get("SHORT_PHASE_RUNS", "60"))
    base = clean_env()
    traced = dict(base, MEMTRACE_OUTPUT=os.path.join(tmp, "cap.%p.db"),
                  MEMTRACE_SYMBOL_CACHE=os.path.join(tmp, "symbols.db"))
    libs = [("", lib)]
    before = before_build()
    if before:
        libs.insert(0, ("before: ", os.path.join(before, "preload", "libmemtrace.so")))
    modes = [(label + name, dict(traced, LD_PRELOAD=path, **settings))
             for label, path in libs for name, settings in PHASE_MODES]
    L = [f"a short program's cost by part: {n} runs each, native and every mode in turn, symbol "
         "cache warm; CPU ms (user+sys) added per process over native (mean), wall ms added "
         "(median of the run's own)"]
    L.append(f"{'mode':32}" + "".join(f"{p:>17}" for p, _ in PHASE_PROGRAMS))
    rows = {name: [] for name, _ in modes}
    for _, argv in PHASE_PROGRAMS:
        for _, env in modes:
            timed(argv, env)  # fills the cache
        remove_captures(tmp)
        nat = ([], [])
        got = {name: ([], []) for name, _ in modes}
        for _ in range(n):
            w, c = timed(argv, base)
            nat[0].append(w)
            nat[1].append(c)
            for name, env in modes:
                w, c = timed(argv, env)
                got[name][0].append(w)
                got[name][1].append(c)
            remove_captures(tmp)
        for name, _ in modes:
            w, c = got[name]
            rows[name].append((statistics.mean(c) - statistics.mean(nat[1]),
                               statistics.median(w) - statistics.median(nat[0])))
    for name, _ in modes:
        L.append(f"{name:32}" + "".join(f"   {c:+6.2f} ({w:+6.2f})" for c, w in rows[name]))
    return L


def write_project(root, nfiles):
    """A small C project: nfiles units of ~40 functions each, a main calling them all."""
    src = os.path.join(root, "src")
    os.makedirs(src)
    for i in range(nfiles):
        with open(os.path.join(src, f"unit{i}.c"), "w") as f:
            f.write("#include <stdio.h>\n#include <string.h>\n\n")
            f.write(f"struct rec{i} {{ int id; double w; char name[16]; }};\n\n")
            for j in range(40):
                f.write(f"static int f{j}(struct rec{i}* r, int n) {{\n"
                        f"    int acc = {j};\n"
                        f"    for (int k = 0; k < n; k++) {{\n"
                        f"        acc += r[k % 4].id * {j + 1} + (int)r[k % 4].w;\n"
                        f"        if (acc % {j + 3} == 0) acc ^= (int)strlen(r[k % 4].name);\n"
                        f"    }}\n    return acc;\n}}\n\n")
            f.write(f"int unit{i}(int n) {{\n    struct rec{i} r[4];\n"
                    f"    memset(r, 0, sizeof r);\n    snprintf(r[0].name, 16, \"u%d\", n);\n"
                    f"    return " + " + ".join(f"f{j}(r, n)" for j in range(40)) + ";\n}\n")
    with open(os.path.join(src, "main.c"), "w") as f:
        f.write("#include <stdio.h>\n")
        f.write("".join(f"int unit{i}(int);\n" for i in range(nfiles)))
        f.write("int main(void) {\n    int s = 0;\n")
        f.write("".join(f"    s += unit{i}(3);\n" for i in range(nfiles)))
        f.write('    printf("%d\\n", s);\n    return 0;\n}\n')
    with open(os.path.join(root, "Makefile"), "w") as f:
        f.write("SRCS := $(wildcard src/*.c)\nOBJS := $(SRCS:src/%.c=obj/%.o)\n"
                "prog: $(OBJS)\n\t$(CC) -o $@ $^\n"
                "obj/%.o: src/%.c | obj\n\t$(CC) -O2 -g -c -o $@ $<\n"
                "obj:\n\tmkdir -p $@\n"
                "clean:\n\trm -rf obj prog\n")


def part_make(build, tmp):
    nfiles = int(os.environ.get("SHORT_MAKE_FILES", "40"))
    reps = int(os.environ.get("SHORT_MAKE_REPS", "3"))
    launcher = os.path.join(build, "preload", "memtrace")
    project = os.path.join(tmp, "project")
    write_project(project, nfiles)
    caps = os.path.join(tmp, "make-captures")
    base = clean_env()
    cache = os.path.join(tmp, "make-symbols.db")
    samples = {"native": [], "cold": [], "warm": []}
    before = before_build()
    if before:
        samples["before"] = []  # warm: the cache the cold run left
    ncaps = []
    for _ in range(reps):
        for mode in samples:
            subprocess.run(["make", "-s", "clean"], cwd=project, env=base, check=True)
            if mode == "native":
                argv, env = ["make", "-s", "-j2"], base
            else:
                if mode == "cold":
                    for suffix in ("", "-wal", "-shm", "-journal"):
                        if os.path.exists(cache + suffix):
                            os.unlink(cache + suffix)
                shutil.rmtree(caps, ignore_errors=True)
                which = os.path.join(before, "preload", "memtrace") if mode == "before" else launcher
                argv = [which, "-o", caps + "/", "make", "-s", "-j2"]
                env = dict(base, MEMTRACE_SYMBOL_CACHE=cache)
            samples[mode].append(timed(argv, env, cwd=project))
            if mode != "native":
                ncaps.append(len(os.listdir(caps)))
                shutil.rmtree(caps, ignore_errors=True)
    nw = statistics.median(w for w, _ in samples["native"])
    nc = statistics.median(c for _, c in samples["native"])
    L = [f"make -j2 of a generated C project ({nfiles + 1} files, -O2 -g), traced whole by "
         f"`memtrace -o DIR/` ({min(ncaps)}-{max(ncaps)} captures a build); {reps} runs each, "
         "interleaved, medians (min-max); cold: a new symbol cache, warm: the one it left"
         + ("; before: SHORT_BEFORE's tracer, warm" if before else "")
         + f"; load average {os.getloadavg()[0]:.2f} at the end"]
    L.append(f"{'mode':8} {'wall s':>8} {'x nat':>6} {'cpu s':>8} {'x nat':>6}  wall min-max")
    for mode, v in samples.items():
        w = statistics.median(x for x, _ in v)
        c = statistics.median(x for _, x in v)
        L.append(f"{mode:8} {w / 1000:8.2f} {w / nw:6.2f} {c / 1000:8.2f} {c / nc:6.2f}  "
                 f"{min(x for x, _ in v) / 1000:.2f}-{max(x for x, _ in v) / 1000:.2f}")
    return L


SCRIPT = """#!/bin/sh
i=0
while [ $i -lt $1 ]; do
    /bin/true
    cat "$0" > /dev/null
    i=$(expr $i + 4)
    basename /a/b/c > /dev/null
done
"""


def part_script(build, tmp):
    procs = int(os.environ.get("SHORT_SCRIPT_PROCS", "1000"))
    reps = int(os.environ.get("SHORT_SCRIPT_REPS", "5"))
    launcher = os.path.join(build, "preload", "memtrace")
    script = os.path.join(tmp, "procs.sh")
    with open(script, "w") as f:
        f.write(SCRIPT)
    caps = os.path.join(tmp, "script-captures")
    base = clean_env()
    env = dict(base, MEMTRACE_SYMBOL_CACHE=os.path.join(tmp, "script-symbols.db"))
    # /bin/sh (dash on Debian) runs each command through vfork; bash forks, and its children
    # allocate before their exec: each is a traced process of its own.
    shells = [sh for sh in ("/bin/sh", shutil.which("bash")) if sh]
    before = before_build()
    launchers = {"traced": launcher}
    if before:
        launchers = {"before": os.path.join(before, "preload", "memtrace"), "traced": launcher}
    samples, ncaps = {}, {}
    for sh in shells:
        timed([launcher, "-o", caps + "/", sh, script, str(procs)], env)  # fills the cache
        shutil.rmtree(caps, ignore_errors=True)
        samples[sh] = {"native": []} | {mode: [] for mode in launchers}
        ncaps[sh] = []
    for _ in range(reps):
        for sh in shells:
            argv = [sh, script, str(procs)]
            samples[sh]["native"].append(timed(argv, base))
            for mode, which in launchers.items():
                samples[sh][mode].append(timed([which, "-o", caps + "/"] + argv, env))
                if mode == "traced":
                    ncaps[sh].append(len(os.listdir(caps)))
                shutil.rmtree(caps, ignore_errors=True)
    L = [f"a shell script running {procs} short processes (true, cat, expr, basename), traced "
         f"whole by `memtrace -o DIR/`; {reps} runs each, interleaved, medians (min-max), "
         "symbol cache warm" + ("; before: SHORT_BEFORE's tracer" if before else "")
         + f"; load average {os.getloadavg()[0]:.2f} at the end"]
    L.append(f"{'shell':14} {'mode':8} {'wall s':>8} {'x nat':>6} {'cpu s':>8} {'x nat':>6}  "
             "wall min-max   ms a process: wall cpu  captures")
    for sh in shells:
        nw = statistics.median(w for w, _ in samples[sh]["native"])
        nc = statistics.median(c for _, c in samples[sh]["native"])
        for mode, v in samples[sh].items():
            w = statistics.median(x for x, _ in v)
            c = statistics.median(x for _, x in v)
            n = f"{min(ncaps[sh])}-{max(ncaps[sh])}" if mode == "traced" else ""
            L.append(f"{sh:14} {mode:8} {w / 1000:8.2f} {w / nw:6.2f} {c / 1000:8.2f} "
                     f"{c / nc:6.2f}  {min(x for x, _ in v) / 1000:.2f}-"
                     f"{max(x for x, _ in v) / 1000:.2f}      {(w - nw) / procs:5.2f} "
                     f"{(c - nc) / procs:5.2f}  {n}")
    return L


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    lib = os.path.join(build, "preload", "libmemtrace.so")
    if not os.path.exists(lib):
        sys.exit(f"short.py: no {lib}: build first (make build)")
    parts = os.environ.get("SHORT_PARTS", "programs,startup,make,script").split(",")
    tmp = tempfile.mkdtemp(prefix="memtrace-short.")
    L = [f"short-lived programs, {datetime.datetime.now():%Y-%m-%d %H:%M}, tracer built from "
         f"git {git_rev()}; load average {os.getloadavg()[0]:.2f}"]
    try:
        if "programs" in parts:
            L += [""] + part_programs(lib, tmp)
        if "startup" in parts:
            L += [""] + part_startup(lib, build, tmp)
        if "phases" in parts:
            L += [""] + part_phases(lib, tmp)
        if "make" in parts:
            L += [""] + part_make(build, tmp)
        if "script" in parts:
            L += [""] + part_script(build, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        L += ["", "Failed runs (their times are in the figures above):"]
        L += ["  " + f for f in FAILURES]
    text = "\n".join(L) + "\n"
    sys.stdout.write(text)
    results_file.write(title="short-lived programs (bench/short.py)", section=text)


if __name__ == "__main__":
    main()
