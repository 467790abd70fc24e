#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport leaks and summary on a real traced program (progs/runtime_leaks.c): the
# program's leaks exactly in the main group, stdout's buffer and the thread's DTV in the
# "held by the C runtime" group, every live block counted once; every view's leaked bytes
# the same, and diff's total and gate naming the runtime's part; LeakSanitizer suppressions
# and the report of one that matches nothing.
# Usage: e2e_runtime.py MEMTRACE_LAUNCHER MEMREPORT PROG WORKDIR
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402


def functions(group):
    return [f["function"] for f in group["stack"]]


def summary_held_text(n):
    """A byte count as the reports print it: ["4.33", "KiB"]."""
    return ["%.2f" % (n / 1024), "KiB"] if n >= 1024 else [str(n), "B"]


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cap = os.path.join(work, "prog.db")
    # stdout is a pipe: libc gives it a full buffer on the first printf.
    run = subprocess.run([launcher, "-o", cap, "--", prog], check=True, capture_output=True,
                         text=True)
    check(run.stdout == "leaking 4 blocks\n", "the program's output: %r" % run.stdout)

    def report(*args):
        p = subprocess.run([memreport] + list(args), check=True, capture_output=True, text=True)
        return (json.loads(p.stdout) if "--json" in args else p.stdout), p.stderr

    leaks, _ = report("leaks", cap, "--json", "--all-frames")
    own = sorted((g["bytes"], g["blocks"], [f for f in functions(g) if f in
                                            ("leak_here", "worker_leak")]) for g in leaks["groups"])
    check(own == [(2000, 1, ["worker_leak"]), (3000, 3, ["leak_here"])],
          "the main group holds exactly the program's two leaks: %r" % own)
    check((leaks["bytes"], leaks["blocks"], leaks["stacks"]) == (5000, 4, 2),
          "program totals: 5000 bytes in 4 blocks from 2 stacks")
    held = leaks["runtime_held"]
    stacks = [functions(g) for g in held["groups"]]
    check(any(any("_IO_file_doallocate" in f for f in s) for s in stacks),
          "stdout's buffer is held by the C runtime: %r" % stacks)
    check(any(any("_dl_allocate_tls" in f for f in s) for s in stacks),
          "the thread's DTV is held by the C runtime: %r" % stacks)
    check(not any("leak_here" in s or "worker_leak" in s for s in stacks),
          "no program leak among the runtime's")

    summary, _ = report("summary", cap, "--json")
    check((summary["leaked_bytes"], summary["leaked_allocations"]) == (5000, 4),
          "summary's leaked_bytes are the program's leaks: %d in %d" %
          (summary["leaked_bytes"], summary["leaked_allocations"]))
    check((summary["runtime_held_bytes"], summary["runtime_held_allocations"]) ==
          (held["bytes"], held["blocks"]), "summary's runtime-held bytes are leaks' group")
    text, _ = report("summary", cap)
    check("leaked:       4.88 KiB in 4 blocks (+" in text and "held by the C runtime)" in text,
          "summary's leaked line: %r" % [l for l in text.splitlines() if "leaked" in l])

    # One question, one answer: every view's leaked bytes are the same 5000 (issue 26).
    page = os.path.join(work, "leaks.html")
    report("flamegraph", "--leaks", "-o", page, cap)
    html = open(page, encoding="utf-8").read()
    data = json.loads(re.search(r'id="fg-data">(.*?)</script>', html, re.S).group(1))
    check(data["total_bytes"] == 5000, "flamegraph --leaks: %d bytes" % data["total_bytes"])
    stacks, _ = report("stacks", "--json", cap)
    got = sum(st["leaked_bytes"] for st in stacks["stacks"])
    check(got == 5000, "stacks: leaked bytes of every stack sum to %d" % got)
    top, _ = report("top", "--json", "--metric", "leaked", cap)
    check(top["total"] == 5000, "top --metric leaked: total %r" % top["total"])
    diff, _ = report("diff", "--json", cap, cap)
    got = diff["totals"]["leaked_bytes"]["new"]
    check(got == 5000, "diff: leaked_bytes %d" % got)
    got = diff["totals"].get("runtime_held_bytes", {}).get("new")
    check(got == held["bytes"], "diff: runtime_held_bytes %r, leaks' group %d" %
          (got, held["bytes"]))
    text, _ = report("diff", cap, cap)
    rows = [l.split()[:3] for l in text.splitlines() if l.startswith(("leaked_bytes ",
                                                                     "runtime_held_bytes "))]
    check(rows == [["leaked_bytes", "4.88", "KiB"], ["runtime_held_bytes"] +
                   summary_held_text(held["bytes"])],
          "diff's text names both totals: %r" % rows)
    kinds = summary["leak_kinds"]
    got = sum(k["bytes"] for name, k in kinds.items())
    check(got == 5000, "summary's leak kinds sum to the leaked bytes: %d" % got)
    folded, _ = report("export", "--format", "folded", "--leaks", "-o", "-", cap)
    got = sum(int(l.rsplit(" ", 1)[1]) for l in folded.splitlines() if l)
    check(got == 5000, "export --leaks (folded): %d bytes" % got)
    view = os.path.join(work, "view.html")
    report("view", "-o", view, cap)
    vhtml = open(view, encoding="utf-8").read()
    classes = json.loads(re.search(r'"leaks":(\{"scanned".*?\]\})', vhtml).group(1))["classes"]
    got = {c["name"]: c["bytes"] for c in classes}
    check(sum(v for k, v in got.items() if k != "runtime_held") == 5000 and
          got.get("runtime_held") == held["bytes"],
          "view: the program's kinds sum to 5000, runtime_held apart: %r" % got)
    procs_dir = os.path.join(work, "procs")
    os.makedirs(procs_dir)
    shutil.copy(cap, procs_dir)
    procs, _ = report("summary", "--json", procs_dir)
    check(procs["total"]["leaked_bytes"] == 5000,
          "summary of a directory: %d" % procs["total"]["leaked_bytes"])
    # The CI gate of docs/reports.md counts the program's leaks, not stdout's buffer.
    gate = [subprocess.run([memreport, "diff", cap, cap, "--fail-if", "leaked_bytes>%d" % n],
                           capture_output=True).returncode for n in (5000, 4999)]
    check(gate == [0, 4], "diff --fail-if leaked_bytes>5000 passes, >4999 fails: %r" % gate)
    # ... and the runtime's part has a name of its own there, on captures and directories.
    gate = [subprocess.run([memreport, "diff", a, a, "--fail-if", "runtime_held_bytes>%d" % n],
                           capture_output=True).returncode
            for a in (cap, procs_dir) for n in (held["bytes"], held["bytes"] - 1)]
    check(gate == [0, 4, 0, 4], "diff --fail-if runtime_held_bytes>%d passes, >%d fails: %r" %
          (held["bytes"], held["bytes"] - 1, gate))

    supp = os.path.join(work, "lsan.supp")
    with open(supp, "w") as f:
        # (a pattern on the file runtime_leaks.c would also match main's frame, under the
        # runtime's stacks: LeakSanitizer matches every frame)
        f.write("# LeakSanitizer's format\nleak:worker_l\nleak:^leak_here$\n"
                "leak:no_such_function\n")
    text, err = report("leaks", cap, "--suppressions", supp)
    check("leaked: 0 B (0 bytes) in 0 blocks from 0 stacks; " in text and
          "(5000 bytes) in 4 blocks from 2 stacks suppressed" in text,
          "LeakSanitizer suppressions hide both leaks: %r" %
          [l for l in text.splitlines() if l.startswith("leaked")])
    said = [l for l in err.splitlines() if "matched no leak" in l]
    check(said == ["memreport: %s:4: suppression 'no_such_function' matched no leak" % supp],
          "the unmatched line is reported: %r" % err)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
