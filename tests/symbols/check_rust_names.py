#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Rust symbol names, as the symbolizer writes them, against c++filt (binutils' Rust
demangler): every symbol of a Rust program built with the v0 mangling and with the legacy
one names the same, without the hash (c++filt's crate disambiguators "[0123abcd]" and
legacy "::h<16 hex>" removed, as rustfilt prints them).

Usage: check_rust_names.py DEMANGLE_TOOL PROGRAM.rs WORKDIR
Without rustc (PATH, or ~/.cargo/bin) or c++filt the test is skipped (exit 77).
"""
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402

LEGACY = re.compile(r"^_ZN.*17h[0-9a-f]{16}E$")


def tool(name):
    found = shutil.which(name) or shutil.which(name, path=os.path.expanduser("~/.cargo/bin"))
    if not found:
        print(f"skipped: no {name}")
        sys.exit(77)
    return found


def names(exe):
    r = subprocess.run(["nm", exe], capture_output=True, text=True, check=True)
    return sorted({line.split()[-1] for line in r.stdout.splitlines() if line.split()})


def main():
    demangle, source, work = sys.argv[1:4]
    rustc, cxxfilt = tool("rustc"), tool("c++filt")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    builds = {"v0": ["-C", "symbol-mangling-version=v0"],
              "legacy": ["-Z", "unstable-options", "-C", "symbol-mangling-version=legacy"]}
    for label, flags in builds.items():
        exe = os.path.join(work, label)
        env = dict(os.environ, RUSTC_BOOTSTRAP="1")  # legacy is unstable on newer rustc
        r = subprocess.run([rustc, "-g", *flags, "-o", exe, source], capture_output=True,
                           text=True, env=env)
        if r.returncode != 0 and label == "legacy":  # an older rustc: legacy by default
            r = subprocess.run([rustc, "-g", "-o", exe, source], capture_output=True, text=True)
        if not check(r.returncode == 0, f"rustc {label}: {r.stderr[-300:]!r}"):
            continue
        mangled = [n for n in names(exe)
                   if (n.startswith("_R") if label == "v0" else LEGACY.match(n))]
        check(len(mangled) >= 5, f"{label}: the program has Rust symbols ({len(mangled)})")
        text = "\n".join(mangled) + "\n"
        ours = subprocess.run([demangle], input=text, capture_output=True, text=True).stdout
        theirs = subprocess.run([cxxfilt], input=text, capture_output=True, text=True).stdout
        ours, theirs = ours.splitlines(), theirs.splitlines()
        if label == "v0":
            theirs = [re.sub(r"\[[0-9a-f]+\]", "", t) for t in theirs]
        else:
            theirs = [re.sub(r"::h[0-9a-f]{16}$", "", t) for t in theirs]
        wrong = [(m, o, t) for m, o, t in zip(mangled, ours, theirs) if o != t]
        check(len(ours) == len(mangled) and not wrong,
              f"{label}: {len(mangled) - len(wrong)} of {len(mangled)} names as c++filt's; "
              f"first differences: {wrong[:3]}")
        check(not any(o.startswith(("_R", "_ZN")) or re.search(r"::h[0-9a-f]{16}$", o)
                      for o in ours), f"{label}: every name demangled, no hash")
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
