# SPDX-License-Identifier: MIT
# What the export test drivers share: checks that are counted, not fatal, and memreport runs
# that must succeed.
import subprocess
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def runner(memreport):
    """A function running memreport with the given arguments, returning its stdout; a
    failing run ends the test with its stderr."""
    def run(*args):
        p = subprocess.run([memreport, *args], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"memreport {' '.join(args)} exited {p.returncode}: {p.stderr}")
        return p.stdout
    return run


def finish():
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
