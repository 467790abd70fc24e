#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport export --format massif, read by valgrind's ms_print: on the standard fixture
# (tests/reports/fixture.c) it accepts the file and prints the known peak (10364 bytes at
# seq 7) as the peak snapshot with the known tree; --leaks puts the detailed snapshot at the
# end (4814 bytes); an imported NPU log exports with steps as time and summary's peak. With
# the tracer, python3 traced (real_program.py): ms_print's peak snapshot is summary's peak.
# Usage: massif_test.py MEMREPORT REPORTS_FIXTURE NPU_LOG WORKDIR [MEMTRACE_LAUNCHER]
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check_quietly as check, finish, runner  # noqa: E402
from real_program import trace_python  # noqa: E402

memreport, fixture, npu_log, work = sys.argv[1:5]
launcher = sys.argv[5] if len(sys.argv) > 5 else None
ms_print = shutil.which("ms_print")
if not ms_print:
    print("SKIP: ms_print (valgrind) is not installed (scripts/install-deps.sh --test)")
    sys.exit(77)
run = runner(memreport)


def export_and_print(cap, name, *opts):
    out = os.path.join(work, name)
    run("export", cap, "--format", "massif", "-f", "-o", out, *opts)
    p = subprocess.run([ms_print, out], capture_output=True, text=True)
    check(p.returncode == 0, f"ms_print {name}: exit {p.returncode}: {p.stderr}")
    return p.stdout


def snapshots(text):
    # ms_print's table rows: n, time, total(B), useful-heap(B), extra, stacks.
    rows = re.findall(r"^\s*(\d+)\s+([\d.,]+)\s+([\d,]+)\s+([\d,]+)\s+0\s+0\s*$", text, re.M)
    return {int(n): int(total.replace(",", "")) for n, _, total, _ in rows}


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
cap = os.path.join(work, "fx.db")
subprocess.run([fixture, cap], check=True)
peak = json.loads(run("summary", cap, "--json"))["peak_bytes"]
check(peak == 10364, f"summary's peak {peak}")

text = export_and_print(cap, "peak.out")
snaps = snapshots(text)
m = re.search(r"Detailed snapshots: \[(\d+) \(peak\)\]", text)
check(m is not None, "one detailed snapshot, the peak")
check(len(snaps) >= 50, f"{len(snaps)} snapshots")
if m:
    check(snaps.get(int(m.group(1))) == peak, f"peak snapshot {snaps.get(int(m.group(1)))}")
check(max(snaps.values(), default=0) == peak, "no snapshot above the peak")
# The tree at the peak: worker's 5000 bytes, make_node's 4000 under main, and the unnamed
# frame's 64 bytes below the 1% threshold.
check(re.search(r"->48\.24% \(5,000B\) 0x[0-9A-F]+: worker \(worker\.c:7\)", text), "worker")
check(re.search(r"->38\.60% \(4,000B\) 0x[0-9A-F]+: make_node \(tree\.c:40\)\n"
                r"\| ->38\.60% \(4,000B\) 0x[0-9A-F]+: main \(prog\.c:10\)", text), "make_node")
check("in 1+ places, all below ms_print's threshold" in text or
      "(64B) in 1 place, below massif's threshold" in text, "the 64 bytes below threshold")

text = export_and_print(cap, "leaks.out", "--leaks")
m = re.search(r"Detailed snapshots: \[(\d+)\]", text)
check(m is not None and snapshots(text).get(int(m.group(1))) == 4814, "--leaks: 4814 bytes")

npu = os.path.join(work, "npu.db")
run("import", npu_log, "-o", npu)
npeak = json.loads(run("summary", npu, "--json"))["peak_bytes"]
text = export_and_print(npu, "npu.out")
m = re.search(r"Detailed snapshots: \[(\d+) \(peak\)\]", text)
check(m is not None and snapshots(text).get(int(m.group(1))) == npeak, f"NPU peak {npeak}")
check("time(i)" in text, "NPU time in steps")

if launcher:
    pcap, _ = trace_python(launcher, work)
    ppeak = json.loads(run("summary", pcap, "--json"))["peak_bytes"]
    text = export_and_print(pcap, "python3.out")
    snaps = snapshots(text)
    m = re.search(r"Detailed snapshots: \[(\d+) \(peak\)\]", text)
    check(m is not None and snaps.get(int(m.group(1))) == ppeak,
          f"python3: peak snapshot {m and snaps.get(int(m.group(1)))} != summary's {ppeak}")
    check(max(snaps.values(), default=0) == ppeak, "python3: no snapshot above the peak")

finish()
if not launcher:
    print("SKIP: the tracer is not built: no real program checked")
    sys.exit(77)
print("ok")
