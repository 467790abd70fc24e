#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport's folded export against `heaptrack_print -F` (Debian's heaptrack) for the same
# program (tests/reports/progs/reports_prog.c), traced by each tool.
#
# What is compared: heaptrack's -F has no "bytes allocated" weight; its flame graph cost
# types are allocations (a count), peak (bytes live at the highest total) and leaked (bytes
# live at the end), which are memreport's --metric count, --metric live (at the peak, the
# default) and --metric live --leaks. For each pair, both outputs are reduced to the
# stacks whose leaf is one of the program's own functions, keeping only its own frames
# (heaptrack writes "name (file)" and roots threads at clone3/start_thread; memreport hides
# noise frames): {"main;leak_here": 3000, "worker;worker_leak": 10000, ...}. These must be
# equal. Stacks whose leaf is in libc or the loader are left out: they are each tool's own
# runtime (heaptrack preloads libstdc++, whose start-up pool is 72704 B at the peak) and the
# libc internals the two unwinders name differently.
# Usage: folded_heaptrack_test.py MEMTRACE_LAUNCHER MEMREPORT PROG WORKDIR
#        (exit 77 = skipped: heaptrack is not installed)
import glob
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check_quietly as check, failures  # noqa: E402

# The functions of progs/reports_prog.c.
OWN = {"main", "worker", "leak_here", "worker_leak", "peak_phase", "temp_loop"}
# memreport --metric options -> heaptrack_print --flamegraph-cost-type.
PAIRS = [(["--metric", "live"], "peak"), (["--metric", "live", "--leaks"], "leaked"),
         (["--metric", "count"], "allocations")]


def own_stacks(lines, strip):
    """{own frames joined by ';': total} of the lines whose leaf is an own function."""
    totals = {}
    for line in lines:
        m = re.match(r"^(.*?);? (\d+)$", line)
        if not m:
            sys.exit("malformed folded line %r" % line)
        frames = [strip(f) for f in m.group(1).split(";")]
        value = int(m.group(2))
        if not frames or frames[-1] not in OWN or value == 0:
            continue
        key = ";".join(f for f in frames if f in OWN)
        totals[key] = totals.get(key, 0) + value
    return totals


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    if not shutil.which("heaptrack") or not shutil.which("heaptrack_print"):
        print("SKIP: heaptrack is not installed (scripts/install-deps.sh --test installs it)")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = os.path.join(work, "prog.db")
    subprocess.run([launcher, "-o", cap, "--", prog], check=True)
    subprocess.run(["heaptrack", "-o", os.path.join(work, "ht"), prog], check=True,
                   stdout=subprocess.DEVNULL)
    data = glob.glob(os.path.join(work, "ht.*"))
    if len(data) != 1:
        sys.exit("heaptrack wrote %r" % data)
    for args, cost in PAIRS:
        ours = subprocess.run([memreport, "export", cap, "--format", "folded", *args],
                              check=True, capture_output=True, text=True).stdout
        stacks = os.path.join(work, "heaptrack-%s.txt" % cost)
        subprocess.run(["heaptrack_print", "-f", data[0], "--flamegraph-cost-type", cost,
                        "-F", stacks], check=True, stdout=subprocess.DEVNULL)
        theirs = open(stacks, encoding="utf-8").read()
        mine = own_stacks(ours.splitlines(), lambda f: f)
        ht = own_stacks(theirs.splitlines(), lambda f: re.sub(r" \([^()]*\)$", "", f))
        print("%s: memreport %r, heaptrack %r" % (cost, mine, ht))
        check(len(mine) >= 2, "%s: memreport has the program's stacks" % cost)
        check(mine == ht, "%s: same stacks and totals as heaptrack_print -F" % cost)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
