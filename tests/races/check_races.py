#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""unit.test_program_races: the multi-threaded test programs, built with ThreadSanitizer
(tests/races.cmake), run untraced as their tests run them; any race ThreadSanitizer
reports, or an exit status other than the program's own, fails.

Usage: check_races.py WORKDIR NAME=PATH...   (no program: ThreadSanitizer is missing, skip)
"""
import os
import platform
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402

TIMEOUT = 240
# NAME: (arguments, environment, exit status), as the program's own test runs it. TRUTH_FILE
# is the e2e programs' truth (tests/e2e/progs/truth.h), written into the work directory.
RUNS = {
    "many_threads": [([], {}, 0)],
    "fork_storm": [([], {}, 0)],
    "busy_threads": [(["2", "20"], {}, 0)],
    "small_stack": [([], {}, 0)],
    "thread_churn": [([], {}, 0)],
    "vfork_first_call": [([], {}, 0)],
    "getattr_first_call": [([], {}, 0)],
    "e2e_threads": [([], {}, 0), ([], {"E2E_BASELINE": "1"}, 0)],
    "e2e_exits": [(["thread_exit"], {}, 5), (["thread_exit"], {"E2E_BASELINE": "1"}, 5)],
    "top_prog": [([], {}, 0)],
    "e2e_stacks": [(["threads"], {}, 0)],
    "runtime_leaks": [([], {}, 0)],
    "reports_prog": [([], {}, 0)],
    "temporaries": [([], {}, 0)],
    "mmap_fork": [([], {}, 0)],
    "sampling_prog": [([], {}, 3)],
    "exit_in_dlopen": [([], {}, 0)],
    "sleep_prog": [(["1"], {}, 0)],
    "leak_kinds": [([], {}, 0)],
}
# Exit status of a run in which ThreadSanitizer reported something.
TSAN_EXIT = 66
# gcc 12's ThreadSanitizer refuses the layout of a kernel with more mmap randomization
# (vm.mmap_rnd_bits above 28); without address randomization it runs.
UNMAPPED = "ThreadSanitizer: unexpected memory mapping"


def run(argv, env):
    p = subprocess.run(argv, env=env, capture_output=True, text=True, errors="replace",
                       timeout=TIMEOUT)
    if UNMAPPED in p.stderr and shutil.which("setarch"):
        p = subprocess.run(["setarch", platform.machine(), "-R", *argv], env=env,
                           capture_output=True, text=True, errors="replace", timeout=TIMEOUT)
    return p


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    work, progs = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
    if not progs:
        print("SKIP: the compiler has no ThreadSanitizer (-fsanitize=thread)")
        return 77
    check(sorted(progs) == sorted(RUNS), f"every program has its runs: {sorted(progs)}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for name, path in sorted(progs.items()):
        for n, (args, extra, want_rc) in enumerate(RUNS.get(name, [])):
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("MEMTRACE_", "TSAN_")) and k != "LD_PRELOAD"}
            env.update(extra, TRUTH_FILE=os.path.join(work, f"{name}.{n}.truth"),
                       TSAN_OPTIONS=f"halt_on_error=0 exitcode={TSAN_EXIT}")
            label = " ".join([name, *args, *(f"{k}={v}" for k, v in extra.items())])
            p = run([path, *args], env)
            if UNMAPPED in p.stderr:
                print(f"SKIP: ThreadSanitizer cannot run here: {p.stderr.strip()[:300]}")
                return 77
            races = p.stderr.count("WARNING: ThreadSanitizer:")
            check(races == 0, f"{label}: {races} race report(s)")
            check(p.returncode == want_rc, f"{label}: exit status {p.returncode}, want {want_rc}")
            if races or p.returncode != want_rc:
                print(p.stderr[-6000:])
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
