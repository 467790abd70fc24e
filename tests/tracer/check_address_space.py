#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program under ulimit -v set to its untraced need plus 48 MiB runs traced as untraced,
with complete captures (address_space.c: 2 M events, a fork, 256 MiB held by parent and
child). The writer thread's heap calls made glibc give it an arena of 64 MiB of address
space (128 MiB for a moment) while the program was small; when the program grew to its
need, its own mallocs failed. The margin holds the tracer's usual 20-25 MiB and the event
buffers a writer slowed by a loaded machine lets pile up.

Usage: check_address_space.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import re
import resource
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, clean_env, finish, fresh_dir  # noqa: E402

MARGIN_KB = 48 * 1024


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    lib = os.path.join(os.path.dirname(launcher), "libmemtrace.so")
    fresh_dir(work)
    native = subprocess.run([prog], capture_output=True, text=True, env=clean_env(),
                            timeout=120)
    check(native.returncode == 0, f"untraced: exit 0 ({native.returncode}, {native.stdout!r})")
    peaks = [int(k) for k in re.findall(r"VmPeak:\s+(\d+) kB", native.stderr)]
    if not check(len(peaks) == 2, f"untraced: parent's and child's VmPeak ({native.stderr!r})"):
        finish()
    limit_kb = max(peaks) + MARGIN_KB

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit_kb << 10, limit_kb << 10))
    out = os.path.join(work, "caps") + "/"
    env = dict(clean_env(OUTPUT=out), LD_PRELOAD=lib)
    r = subprocess.run([prog], capture_output=True, text=True, env=env, preexec_fn=limited,
                       timeout=120)
    check(r.returncode == 0 and r.stdout == native.stdout,
          f"traced under ulimit -v {limit_kb} kB (untraced need + 48 MiB): exit 0 and the same "
          f"output ({r.returncode}, {r.stdout!r}; untraced {native.stdout!r})")
    traced = [int(k) for k in re.findall(r"VmPeak:\s+(\d+) kB", r.stderr)]
    print(f"VmPeak kB untraced {peaks}, traced {traced}")
    caps = sorted(os.listdir(out)) if os.path.isdir(out) else []
    check(len(caps) == 2, f"a capture for the parent and the child ({caps})")
    allocations = []
    for cap in caps:
        s = subprocess.run([memreport, "summary", "--json", os.path.join(out, cap)],
                           capture_output=True, text=True, timeout=120)
        summary = json.loads(s.stdout) if s.returncode == 0 else {}
        check(summary.get("status") == "complete", f"{cap}: readable and complete "
              f"({summary.get('status')})")
        allocations.append(summary.get("allocations", 0))
    # The child holds the 256 big blocks; the parent the churn's million too.
    check(len(allocations) == 2 and min(allocations) >= 256 and max(allocations) >= 1000256,
          f"the captures hold the calls ({allocations})")
    finish()


if __name__ == "__main__":
    main()
