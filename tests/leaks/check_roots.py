#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The leak scan's roots (docs/leaks.md) on tests/leaks/roots.c, whose 4 MiB bss is in
# memory: each module's writable segments are read once, the program's included (its block
# held from there still reachable, the lost one definitely lost), and the tracer's never
# (its tables hold the program's addresses). A segment's bss past its file's last page is an
# anonymous mapping, which the scan must not read again as memory the program mapped, nor
# read at all for the tracer's own module: the capture's leak_scan_roots_bytes is at least the
# program's writable segments, less than twice them, and what is left is less than the
# tracer's writable segments alone.
import json
import os
import struct
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import capture_meta, check, clean_env, finish, fresh_dir  # noqa: E402

PT_LOAD, PF_W = 1, 2


def writable_bytes(path):
    """The bytes of an ELF64 file's writable PT_LOAD segments in memory (their p_memsz)."""
    with open(path, "rb") as f:
        elf = f.read()
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    total = 0
    for i in range(phnum):
        p_type, p_flags = struct.unpack_from("<II", elf, phoff + i * phentsize)
        p_memsz, = struct.unpack_from("<Q", elf, phoff + i * phentsize + 40)
        if p_type == PT_LOAD and p_flags & PF_W:
            total += p_memsz
    return total


def main():
    lib, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    db = os.path.join(work, "roots.db")
    r = subprocess.run([prog], capture_output=True, env=clean_env(OUTPUT=db) | {"LD_PRELOAD": lib})
    check(r.returncode == 0, f"exit status 0 ({r.returncode}, {r.stderr})")
    meta = capture_meta(db)
    check(meta.get("leak_scan") == "complete", f"scan complete ({meta.get('leak_scan_why')})")
    summary = subprocess.run([memreport, "summary", db, "--json"], capture_output=True,
                             text=True, check=True).stdout
    kinds = {k: (v["bytes"], v["blocks"]) for k, v in json.loads(summary)["leak_kinds"].items()
             if v["blocks"]}
    want = {"still_reachable": (123, 1), "definitely_lost": (45, 1)}
    check(kinds == want, f"kinds {kinds} as {want}")
    roots = int(meta.get("leak_scan_roots_bytes", 0))
    mine, tracer = writable_bytes(prog), writable_bytes(lib)
    check(roots >= mine, f"roots {roots} B: the program's writable segments ({mine} B) read")
    check(roots < 2 * mine, f"roots {roots} B: the program's writable segments ({mine} B) "
          "read once")
    check(roots - mine < tracer, f"the other roots ({roots - mine} B) fewer than the tracer's "
          f"writable segments ({tracer} B): those not read")
    finish()


if __name__ == "__main__":
    main()
