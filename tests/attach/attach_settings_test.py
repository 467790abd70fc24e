#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memtrace --pid passes the launcher's MEMTRACE_* settings to the attached process, and only
# those (attach_settings_prog.c, whose truth is known: 20000 malloc(1000) and an 8 MiB mmap
# after the attach, all freed before it exits):
#   sampled:       MEMTRACE_SAMPLE_BYTES: meta sample_bytes set, a few hundred allocations
#                  recorded of 20000, every recorded free with its allocation;
#   mmap:          MEMTRACE_MMAP=1: the 8 MiB mapping in the mmap heap, every malloc recorded
#                  (and MEMTRACE_OUTPUT taken as -o);
#   not_inherited: the process's own environment (MEMTRACE_SAMPLE_BYTES, _MMAP, _DEPTH set
#                  when it started) chooses nothing;
#   refused:       a value a program start would not take, or a setting only a start takes
#                  (MEMTRACE_START, _SIGNAL, _DELAY_MS, --delay): the launcher says which,
#                  exits 1, attaches nothing and removes no -f file;
#   reattach:      a second attach after a detach records with the second launcher's settings.
# In every case the program's output and exit status are those of an untraced run.
# Usage: attach_settings_test.py MEMTRACE MEMREPORT PROG WORKDIR CASE | --list
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, here)
from attach_test import TIMEOUT, Launcher, Prog  # noqa: E402
from checks import capture_meta, check, clean_env, finish, kill_children, runner  # noqa: E402

CASES = ("sampled", "mmap", "not_inherited", "refused", "reattach")
BLOCKS = 20000
MIB = 1024 * 1024


def attach(memtrace, p, capture, env):
    """memtrace --pid with env; -o capture, unless env names it as MEMTRACE_OUTPUT."""
    if os.path.exists(capture):
        os.unlink(capture)
    launcher = Launcher(memtrace, p.p.pid, None if "MEMTRACE_OUTPUT" in env else capture, env)
    launcher.wait_for("memtrace: attached to process")
    return launcher


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return
    memtrace, memreport, prog, work, case = sys.argv[1:6]
    if not shutil.which("gdb"):
        print("skip: gdb is not installed (scripts/install-deps.sh --test installs it)")
        sys.exit(77)
    work = os.path.join(work, "settings_" + case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    mr = runner(memreport)
    capture = os.path.join(work, "attached.db")

    untraced = Prog(prog, "-", clean_env())
    untraced.phase(1)
    want_out, want_code = untraced.finish()

    prog_env = clean_env()
    if case == "not_inherited":
        prog_env = clean_env(SAMPLE_BYTES=65536, MMAP=1, DEPTH=1)
    p = Prog(prog, "-", prog_env)
    launcher = None
    if case == "sampled":
        launcher = attach(memtrace, p, capture, clean_env(SAMPLE_BYTES=65536, SAMPLE_SEED=1))
    elif case == "mmap":
        launcher = attach(memtrace, p, capture, clean_env(MMAP=1, OUTPUT=capture))
    elif case == "not_inherited":
        launcher = attach(memtrace, p, capture, clean_env())
    elif case == "reattach":
        launcher = attach(memtrace, p, capture, clean_env(SAMPLE_BYTES=65536, SAMPLE_SEED=1))
    elif case == "refused":
        with open(capture, "w") as f:
            f.write("kept\n")
        bad = [({"SAMPLE_BYTES": "abc"}, "MEMTRACE_SAMPLE_BYTES=abc: not a value it takes "
                 "(a number from 0 to 1073741824)"),
               ({"SAMPLE_BYTES": "-1"}, "MEMTRACE_SAMPLE_BYTES=-1: not a value"),
               ({"DEPTH": "0"}, "MEMTRACE_DEPTH=0: not a value it takes (a number from 1 to "
                 "1024)"),
               ({"UNWIND": "dwarf"}, "MEMTRACE_UNWIND=dwarf: not a value it takes (one of "
                 "auto,fp,libunwind)"),
               ({"MMAP": "2"}, "MEMTRACE_MMAP=2: not a value"),
               ({"DEPTH": " 8"}, "MEMTRACE_DEPTH= 8: not a value"),
               ({"START": "stopped"}, "MEMTRACE_START does not apply to --pid"),
               ({"SIGNAL": "USR1"}, "MEMTRACE_SIGNAL does not apply to --pid"),
               ({"DELAY_MS": "100"}, "MEMTRACE_DELAY_MS does not apply to --pid")]
        for settings, words in bad:
            r = subprocess.run([memtrace, "--pid", str(p.p.pid), "-f", "-o", capture],
                               capture_output=True, text=True, timeout=TIMEOUT,
                               env=clean_env(**settings))
            check(r.returncode == 1 and words in r.stderr,
                  f"{settings} refused: {r.returncode} {r.stderr.strip()!r}")
        r = subprocess.run([memtrace, "--delay", "1s", "--pid", str(p.p.pid), "-o", capture,
                            "-f"], capture_output=True, text=True, timeout=TIMEOUT,
                           env=clean_env())
        check(r.returncode == 1 and "MEMTRACE_DELAY_MS does not apply to --pid" in r.stderr,
              f"--delay with --pid refused: {r.returncode} {r.stderr.strip()!r}")
        with open(capture) as f:
            check(f.read() == "kept\n", "the -f file is left as it was")
        d = subprocess.run([memtrace, "--detach", str(p.p.pid)], capture_output=True,
                           text=True, timeout=TIMEOUT, env=clean_env())
        check(d.returncode == 1 and "not attached" in d.stderr,
              f"nothing was injected: {d.stderr.strip()!r}")
    p.phase(1)
    first = None
    if case == "reattach":
        d = subprocess.run([memtrace, "--detach", str(p.p.pid)], capture_output=True,
                           text=True, timeout=TIMEOUT)
        check(d.returncode == 0, f"memtrace --detach: {d.stderr.strip()}")
        check(launcher.end() == 0, "the first launcher sees the detach")
        first = capture
        capture = os.path.join(work, "again.db")
        launcher = attach(memtrace, p, capture, clean_env(MMAP=1))
    out, code = p.finish()
    check(out == want_out and code == want_code == 7,
          f"output and exit status as untraced ({out!r} {code}; untraced {want_out!r} "
          f"{want_code})")
    if launcher:
        check(launcher.end() == 0, "the launcher exits 0 when the process does")
    if case == "refused":
        finish()
        return

    s = json.loads(mr("summary", "--json", capture))
    m = capture_meta(capture)
    check(s["status"] == "complete" and s.get("attached") is True,
          f"complete, attached: {s['status']}")
    calls = (0, BLOCKS // 2) if case == "reattach" else (BLOCKS, BLOCKS)  # reattach: phase 2
    check((s["calls"]["malloc"], s["calls"]["free"]) == calls,
          f"every call counted: {s['calls']['malloc']} malloc, {s['calls']['free']} free")
    if case == "sampled":
        check(m.get("sample_bytes") == "65536", f"meta sample_bytes 65536: {m.get('sample_bytes')}")
        # 20 MB at a mean of 64 KiB: about 300 samples (seeded, so always the same ones).
        check(100 <= s["allocations"] <= 1000,
              f"sampled: {s['allocations']} allocations recorded of {BLOCKS}")
        check(s["frees"] == s["allocations"] and s["unmatched_frees"] == 0,
              f"every recorded free has its allocation: {s['frees']} frees, "
              f"{s['unmatched_frees']} unmatched")
        check(s.get("sampled"), f"summary says the capture is sampled: {s.get('sampled')}")
    elif case in ("mmap", "not_inherited"):
        check("sample_bytes" not in m and s["allocations"] == BLOCKS and
              s["frees"] == BLOCKS and s["unmatched_frees"] == 0,
              f"every allocation and free recorded: {s['allocations']}, {s['frees']}")
        if case == "mmap":
            mm = s.get("mmap", {})
            check(mm.get("peak_bytes") == 8 * MIB and mm.get("live_bytes") == 0,
                  f"the 8 MiB mapping recorded and unmapped: {mm}")
        else:
            check("mmap" not in s and m.get("depth") == "256",
                  f"no mmap heap, depth 256: {s.get('mmap')}, {m.get('depth')}")
    elif case == "reattach":
        m1 = capture_meta(first)
        check(m1.get("sample_bytes") == "65536", "the first capture is sampled")
        # Phase 2 only: the 10000 frees of phase 1's blocks, none allocated in this capture.
        check("sample_bytes" not in m and s["allocations"] == 0 and s["frees"] == BLOCKS // 2,
              f"the second capture records every free, unsampled: {s['allocations']} "
              f"allocations, {s['frees']} frees, meta {m.get('sample_bytes')}")
        mm = s.get("mmap")
        check(mm is not None, f"the second capture has the mmap heap: {mm}")
    finish()


if __name__ == "__main__":
    try:
        main()
    finally:
        kill_children()
