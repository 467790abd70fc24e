#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""e2e.live: memreport live on live_prog.c while it runs under the tracer.

The program waits for a line on stdin after each phase, so every check reads the capture
at a known state. The tracer commits on its own clock (MEMTRACE_COMMIT_MS), so a check
polls `memreport live --once` until the phase's live bytes and blocks show (up to DEADLINE
seconds, then the test fails with the last snapshot), and checks the rest of that snapshot.
Usage: live_test.py MEMREPORT MEMTRACE LIVE_PROG WORKDIR
"""
import fcntl
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import termios
import time

DEADLINE = 60
MEMREPORT, LAUNCHER, PROG, WORK = sys.argv[1:5]
PHASE1 = 10 * 100000
PHASE2 = 5 * 100000 + 4 * 250000
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def snapshot(cap):
    p = subprocess.run([MEMREPORT, "live", cap, "--once"], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        return None, p.stderr
    m = re.search(r"^heap: .*\((\d+) bytes in (\d+) blocks\), peak .*\((\d+) bytes\)",
                  p.stdout, re.M)
    ev = re.search(r"^events:\s+(\d+)", p.stdout, re.M)
    sites = re.findall(r"^\s+\S+ \S+\s+(\d+) B\s+(\d+) blocks  (.*)$", p.stdout, re.M)
    return {"live": int(m.group(1)), "blocks": int(m.group(2)), "peak": int(m.group(3)),
            "events": int(ev.group(1)), "sites": sites,
            "recording": "(recording)" in p.stdout.splitlines()[0]}, p.stdout


def wait_for(cap, want_live, want_blocks, what):
    """Polls until the snapshot shows want_live in want_blocks; checks events never go
    backwards. Both: the writer may commit part of a phase, and after two of phase 2's four
    allocations the live bytes are phase 2's already (in 12 blocks, not 9)."""
    end = time.monotonic() + DEADLINE
    last, text, events = None, "", 0
    while time.monotonic() < end:
        last, text = snapshot(cap)
        if last:
            check(last["events"] >= events, f"{what}: events went back to {last['events']}")
            events = last["events"]
            if last["live"] == want_live and last["blocks"] == want_blocks:
                return last, text
        time.sleep(0.05)
    check(False, f"{what}: never {want_live} bytes in {want_blocks} blocks; "
                 f"last snapshot:\n{text}")
    return last, text


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    # The truth: the program's own output and status, untraced.
    ref = subprocess.run([PROG], input="\n\n", capture_output=True, text=True, timeout=60)
    cap = os.path.join(WORK, "live.db")
    prog = subprocess.Popen([LAUNCHER, "-o", cap, "--", PROG], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(prog.stdout.readline() == "phase1\n", "the program reached phase 1")
    s, text = wait_for(cap, PHASE1, 10, "phase 1")
    if s:
        check(s["recording"], "phase 1: the capture reads as recording")
        check(s["blocks"] == 10, f"phase 1: 10 blocks live, got {s['blocks']}")
        check(s["peak"] == PHASE1, f"phase 1: peak {PHASE1}, got {s['peak']}")
        top = s["sites"][0] if s["sites"] else None
        # Frames are named while the program runs (from its binary, in memreport's memory).
        check(top and top[0] == str(PHASE1) and top[1] == "10" and top[2] == "phase_one",
              f"phase 1: top site phase_one with {PHASE1} B in 10 blocks, got {top}")
        again, _ = snapshot(cap)
        check(again and again["live"] == PHASE1 and again["events"] == s["events"],
              "phase 1: a second snapshot while the program waits is the same")
    prog.stdin.write("\n")
    prog.stdin.flush()
    check(prog.stdout.readline() == "phase2\n", "the program reached phase 2")
    s, text = wait_for(cap, PHASE2, 9, "phase 2")
    if s:
        check(s["peak"] == PHASE1 + 4 * 250000,
              f"phase 2: peak {PHASE1 + 4 * 250000}, got {s['peak']}")
        check(s["blocks"] == 9, f"phase 2: 9 blocks live, got {s['blocks']}")
        top = s["sites"][0] if s["sites"] else None
        check(top and top[0] == "1000000" and top[1] == "4" and top[2] == "phase_two",
              f"phase 2: top site phase_two with 1000000 B in 4 blocks, got {top}")
    interactive(cap, s["events"] if s else -1)
    prog.stdin.write("\n")
    prog.stdin.flush()
    out, err = prog.communicate(timeout=60)
    check("phase1\nphase2\n" + out == ref.stdout, "the program's output is unchanged")
    check(prog.returncode == ref.returncode == 3,
          f"exit status 3 kept, got {prog.returncode} (untraced {ref.returncode})")
    # The finished capture is unharmed: complete, and its summary is the program's truth.
    p = subprocess.run([MEMREPORT, "summary", cap, "--json"], capture_output=True, text=True)
    check(p.returncode == 0, f"summary of the finished capture: {p.stderr}")
    if p.returncode == 0:
        j = json.loads(p.stdout)
        truth = {"status": "complete", "allocations": 14, "frees": 14, "unmatched_frees": 0,
                 "bytes_allocated": 2 * PHASE1, "peak_bytes": PHASE1 + 1000000,
                 "leaked_bytes": 0}
        got = {k: j.get(k) for k in truth}
        check(got == truth, f"summary of the finished capture: {got}, want {truth}")
    s, text = snapshot(cap)
    check(s and not s["recording"] and s["live"] == 0 and s["peak"] == PHASE1 + 1000000,
          f"live on the finished capture:\n{text}")
    check(not any(f.startswith("live.db-") for f in os.listdir(WORK)),
          f"no -wal/-shm left: {os.listdir(WORK)}")
    print("\n".join(failures) if failures else "ok")
    return 1 if failures else 0


def controlling_tty():
    # The pty becomes the child's terminal, so Ctrl-C there sends it SIGINT.
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def run_pty(cap, keys):
    """Runs the interactive view on a pseudo-terminal; sends keys after 3 refreshes."""
    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    p = subprocess.Popen([MEMREPORT, "live", cap, "--interval", "0.2"], stdin=slave,
                         stdout=slave, stderr=slave, close_fds=True, preexec_fn=controlling_tty)
    buf, sent, end = b"", False, time.monotonic() + DEADLINE
    while time.monotonic() < end:
        r, _, _ = select.select([master], [], [], 0.5)
        if r:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            buf += data
        if not sent and buf.count(b"\033[H") >= 3:
            os.write(master, keys)
            sent = True
        if p.poll() is not None and not r:
            break
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    after = termios.tcgetattr(slave)
    os.close(master)
    os.close(slave)
    return rc, buf.decode("utf-8", "replace"), before, after


def interactive(cap, events):
    for keys, what in ((b"q", "q"), (b"\x03", "Ctrl-C")):
        rc, out, before, after = run_pty(cap, keys)
        check(rc == 0, f"interactive, {what}: exit 0, got {rc}\n{out[-2000:]}")
        check(out.count("\033[H") >= 3, f"interactive, {what}: at least 3 refreshes")
        check("\033[?1049h" in out and out.rstrip().count("\033[?1049l") == 1,
              f"interactive, {what}: alternate screen entered and left")
        check("\033[?25h" in out, f"interactive, {what}: cursor shown again")
        check(after[3] == before[3], f"interactive, {what}: terminal modes restored")
        tail = out.split("\033[?1049l")[-1]
        check(f"({PHASE2} bytes in 9 blocks)" in tail and "\033[" not in tail,
              f"interactive, {what}: a plain final snapshot after the screen:\n{tail}")
        # Each refresh read only new chunks: after many refreshes, every event once.
        check(re.search(rf"^events:\s+{events}\b", tail, re.M),
              f"interactive, {what}: {events} events, as --once counts them:\n{tail}")


if __name__ == "__main__":
    sys.exit(main())
