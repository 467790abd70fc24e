#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport stats counts temporary allocations as heaptrack does: the same program
# (progs/temporaries.c, truth in its header) traced by memtrace and by Debian's heaptrack
# gives the same count, in total and per function. heaptrack loads libstdc++ into the
# process (the program does not link it): allocations made in libstdc++ are heaptrack's own
# and are left out of its count. Skips (77) when heaptrack is not installed.
# Usage: e2e_temporaries.py MEMTRACE_LAUNCHER MEMREPORT PROG WORKDIR
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402


# Function -> temporaries, by design of progs/temporaries.c.
TRUTH = {"temp_loop": 1000, "kept": 1, "realloc_chain": 3000, "cross_thread": 1,
         "interleaved": 0, "main_between": 0}


def memtrace_counts(launcher, memreport, prog, work):
    cap = os.path.join(work, "prog.db")
    subprocess.run([launcher, "-o", cap, "--", prog], check=True)
    out = subprocess.run([memreport, "stats", cap, "--json", "--top", "1000"], check=True,
                         capture_output=True, text=True).stdout
    stats = json.loads(out)
    by_fn = {}
    for row in stats["temporary_by_site"]:
        by_fn[row["site"]] = by_fn.get(row["site"], 0) + row["temporary"]
    return stats["temporary"], by_fn


# heaptrack_print's "MOST TEMPORARY ALLOCATIONS": entries "N temporary allocations of M
# allocations in total (P%) from", then the function, "  at FILE:LINE", "  in MODULE".
ENTRY = re.compile(r"^(\d+) temporary allocations of \d+ allocations in total \(.*\) from$")


def heaptrack_counts(prog, work):
    subprocess.run(["heaptrack", "-o", os.path.join(work, "ht"), prog], check=True,
                   stdout=subprocess.DEVNULL)
    data = glob.glob(os.path.join(work, "ht.*"))
    if len(data) != 1:
        sys.exit("heaptrack wrote %r" % data)
    text = subprocess.run(["heaptrack_print", "-f", data[0], "-p", "0", "-a", "0", "-l", "0",
                           "-T", "1", "-n", "100000", "-s", "0"], check=True,
                          capture_output=True, text=True).stdout
    total = int(re.search(r"^temporary memory allocations: (\d+)", text, re.M).group(1))
    section = text.split("MOST TEMPORARY ALLOCATIONS", 1)[1].split("\ntotal runtime", 1)[0]
    lines = section.split("\n")
    by_fn, own, listed = {}, 0, 0
    for i, line in enumerate(lines):
        m = ENTRY.match(line)
        if not m:
            continue
        n, fn = int(m.group(1)), lines[i + 1].strip()
        module = next((x.strip()[3:] for x in lines[i + 2:i + 4] if x.startswith("  in ")), "")
        listed += n
        if os.path.basename(module).startswith("libstdc++"):
            own += n
        else:
            by_fn[fn] = by_fn.get(fn, 0) + n
    return total, own, listed, by_fn


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    if not shutil.which("heaptrack") or not shutil.which("heaptrack_print"):
        print("SKIP: heaptrack is not installed (scripts/install-deps.sh --test installs it)")
        return 77
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    mt_total, mt_fn = memtrace_counts(launcher, memreport, prog, work)
    for fn, n in TRUTH.items():
        check(mt_fn.get(fn, 0) == n, "memtrace: %s has %d temporaries (%r)"
              % (fn, n, mt_fn.get(fn)))
    check(mt_total == sum(TRUTH.values()),
          "memtrace: %d temporaries in all (%d)" % (sum(TRUTH.values()), mt_total))

    ht_total, ht_own, ht_listed, ht_fn = heaptrack_counts(prog, work)
    print("heaptrack: %d temporaries, %d of them in its own libstdc++; memtrace: %d"
          % (ht_total, ht_own, mt_total))
    check(ht_listed == ht_total, "heaptrack_print lists every temporary (%d of %d)"
          % (ht_listed, ht_total))
    check(ht_total - ht_own == mt_total, "same total as heaptrack: %d == %d"
          % (ht_total - ht_own, mt_total))
    for fn in TRUTH:
        check(ht_fn.get(fn, 0) == mt_fn.get(fn, 0), "%s: heaptrack %d, memtrace %d"
              % (fn, ht_fn.get(fn, 0), mt_fn.get(fn, 0)))
    check(set(ht_fn) == {fn for fn, n in mt_fn.items() if n},
          "the same functions have temporaries: %r / %r" % (ht_fn, mt_fn))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
