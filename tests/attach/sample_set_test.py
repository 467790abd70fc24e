#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The set of sampled blocks (MEMTRACE_SAMPLE_BYTES) across the captures of one process
# (sample_set_prog.c, whose heap gives freed addresses back):
#   reattach:   attach #1 samples every allocation (SAMPLE_BYTES=1) while the program keeps
#               1000 blocks; detach; the program frees them untraced; attach #2 samples
#               almost nothing (2^30) while it allocates 1000 blocks, mostly at those
#               addresses, and frees them. Capture #2 must hold no free of a block it did
#               not record: the set starts empty at each attach, so a free is recorded only
#               for a block this capture sampled, whatever was sampled before. This holds
#               whatever the draws (no seed is needed): only whether the defect shows
#               depends on them, and it shows unless every reused address is sampled again,
#               which at 2^30 has odds of about 512/2^30 per block.
#   reattach_interval: the other way round, 2^30 then 1: the second capture records all 1000
#               allocations of phase 3 and their frees. Each attach has every thread draw its
#               interval anew: one drawn at 2^30 (a mean of 1 GiB) would otherwise be left to
#               run down first, and at 1 every allocation is sampled whatever the draw (an
#               interval of mean 1 byte is under 40 bytes, smaller than any block here).
#   fork_child: a forked child's capture keeps the parent's set: the inherited blocks are
#               the same blocks at the same addresses, so the child records the frees of the
#               sampled ones, as an exact run's child records the free of every inherited
#               block (compared with MEMTRACE_SAMPLE_BYTES unset).
# The program's output and exit status are those of an untraced run.
# Usage: sample_set_test.py MEMTRACE MEMREPORT PROG WORKDIR CASE | --list
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, here)
from attach_test import TIMEOUT, Launcher, Prog  # noqa: E402
from checks import (bail, capture_meta, check, clean_env,  # noqa: E402
                    finish, kill_children, runner)

CASES = ("reattach", "reattach_interval", "fork_child")
BLOCKS = 1000
EVERY = 1  # SAMPLE_BYTES at which every allocation is sampled
ALMOST_NONE = 1 << 30  # the largest SAMPLE_BYTES the tracer takes


def addresses(mr, capture, freed):
    """The addresses of the capture's allocations (freed False) or frees (freed True)."""
    kinds = "kind LIKE '%FREE%'" if freed else "kind NOT LIKE '%FREE%'"
    text = mr("sql", capture, f"SELECT addr FROM events WHERE {kinds}", "--csv")
    return sorted(int(row["addr"]) for row in csv.DictReader(io.StringIO(text)))


def attach(memtrace, p, capture, sample_bytes):
    launcher = Launcher(memtrace, p.p.pid, capture, clean_env(SAMPLE_BYTES=sample_bytes))
    launcher.wait_for("memtrace: attached to process")
    return launcher


def detach(memtrace, p, launcher):
    d = subprocess.run([memtrace, "--detach", str(p.p.pid)], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(d.returncode == 0, f"memtrace --detach: {d.stderr.strip()}")
    check(launcher.end() == 0, "the launcher sees the detach")


def reattach(memtrace, mr, prog, work, first_bytes, second_bytes):
    """Attach #1 at first_bytes for phase 1, detach, phase 2, attach #2 at second_bytes for
    phase 3; returns the summaries of both captures."""
    if not shutil.which("gdb"):
        print("skip: gdb is not installed (scripts/install-deps.sh --test installs it)")
        sys.exit(77)
    untraced = Prog(prog, "-", clean_env())
    for n in (1, 2, 3):
        untraced.phase(n)
    want_out, want_code = untraced.finish()

    first, second = os.path.join(work, "first.db"), os.path.join(work, "second.db")
    p = Prog(prog, "-", clean_env())
    launcher = attach(memtrace, p, first, first_bytes)
    p.phase(1)  # keeps 1000 blocks
    detach(memtrace, p, launcher)
    p.phase(2)  # frees them, untraced
    launcher = attach(memtrace, p, second, second_bytes)
    p.phase(3)  # 1000 blocks again, mostly at those addresses, freed
    out, code = p.finish()
    check(launcher.end() == 0, "the second launcher exits 0 when the process does")
    reused = re.search(rb"reused (\d+) of", out)
    if not reused or int(reused.group(1)) == 0:
        bail(f"the heap gave no address back, so this tests nothing: {out!r}")
    print(f"note: {int(reused.group(1))} of {BLOCKS} addresses reused")
    check(code == want_code == 7 and out.split(b"reused")[0] == want_out.split(b"reused")[0],
          f"output and exit status as untraced ({out!r} {code}; {want_out!r} {want_code})")

    s1, s2 = (json.loads(mr("summary", "--json", c)) for c in (first, second))
    check(capture_meta(first).get("sample_bytes") == str(first_bytes) and
          capture_meta(second).get("sample_bytes") == str(second_bytes),
          f"sampled at {first_bytes}, then {second_bytes}: {capture_meta(first).get('sample_bytes')}, "
          f"{capture_meta(second).get('sample_bytes')}")
    check(s2["calls"]["malloc"] == BLOCKS and s2["calls"]["free"] == BLOCKS,
          f"capture #2 counts phase 3's calls: {s2['calls']}")
    check(s2["unmatched_frees"] == 0 and s2["frees"] == s2["allocations"],
          f"capture #2 records the free of no block it did not sample: {s2['frees']} frees, "
          f"{s2['allocations']} allocations, {s2['unmatched_frees']} without theirs")
    stale = set(addresses(mr, second, True)) - set(addresses(mr, second, False))
    check(not stale, f"no free in capture #2 at an address only capture #1 sampled: "
          f"{len(stale)}")
    return s1, s2


def fork_captures(memtrace, prog, work, name, env):
    """Runs `prog fork` under memtrace -o DIR/; returns (parent, child) capture paths."""
    caps = os.path.join(work, name)
    r = subprocess.run([memtrace, "-o", caps + "/", "--", prog, "fork"], capture_output=True,
                       text=True, timeout=TIMEOUT, env=env)
    check(r.returncode == 0, f"{name}: the program exits 0 under memtrace ({r.stderr.strip()})")
    paths = [os.path.join(caps, f) for f in sorted(os.listdir(caps)) if f.endswith(".db")]
    parents = [c for c in paths if "parent_capture" not in capture_meta(c)]
    children = [c for c in paths if "parent_capture" in capture_meta(c)]
    if len(parents) != 1 or len(children) != 1:
        bail(f"{name}: a parent and a child capture expected: {paths}")
    return parents[0], children[0]


def fork_child(memtrace, mr, prog, work):
    parent, child = fork_captures(memtrace, prog, work, "sampled",
                                  clean_env(SAMPLE_BYTES=EVERY))
    sp, sc = (json.loads(mr("summary", "--json", c)) for c in (parent, child))
    check(sp["allocations"] == BLOCKS and sp["frees"] == BLOCKS and sp["unmatched_frees"] == 0,
          f"parent: every block sampled and freed: {sp['allocations']}, {sp['frees']}")
    kept = addresses(mr, parent, False)
    check(sc["allocations"] == 0 and addresses(mr, child, True) == kept,
          f"child: the frees of the {BLOCKS} inherited sampled blocks, at the parent's "
          f"addresses: {sc['frees']} frees")
    _, exact_child = fork_captures(memtrace, prog, work, "exact", clean_env())
    se = json.loads(mr("summary", "--json", exact_child))
    check(se["frees"] == sc["frees"] and se["unmatched_frees"] == sc["unmatched_frees"],
          f"as an exact run's child: {se['frees']} frees, {se['unmatched_frees']} without "
          f"their allocation; sampled {sc['frees']}, {sc['unmatched_frees']}")


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return
    memtrace, memreport, prog, work, case = sys.argv[1:6]
    work = os.path.join(work, "sample_set_" + case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    mr = runner(memreport)
    if case == "reattach":
        s1, _ = reattach(memtrace, mr, prog, work, EVERY, ALMOST_NONE)
        check(s1["allocations"] == BLOCKS and s1["frees"] == 0,
              f"capture #1 sampled every block kept: {s1['allocations']} allocations, "
              f"{s1['frees']} frees")
    elif case == "reattach_interval":
        _, s2 = reattach(memtrace, mr, prog, work, ALMOST_NONE, EVERY)
        check(s2["allocations"] == BLOCKS and s2["frees"] == BLOCKS,
              f"capture #2 samples every block at 1: {s2['allocations']} allocations, "
              f"{s2['frees']} frees")
    elif case == "fork_child":
        fork_child(memtrace, mr, prog, work)
    else:
        bail(f"unknown case {case}")
    finish()


if __name__ == "__main__":
    try:
        main()
    finally:
        kill_children()
