#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Start and stop, and bounded captures, on startstop_prog.c (phases driven over a pipe, no
# sleeps):
#   toggle: MEMTRACE_START=stopped, SIGUSR2 before phases 2 and 4 and after phase 2: the
#           capture holds exactly phases 2 and 4, in two "recording" ranges; frees of blocks
#           allocated while stopped are ignored, not unmatched;
#   unset:  no MEMTRACE_START/SIGNAL: the program sees SIGUSR2's disposition unchanged and
#           everything is recorded;
#   delay:  memtrace --delay: phase 1 before the start, phases 2-4 recorded (run_delayed);
#   maxmb:  MEMTRACE_MAX_MB=1 on 2M heap calls: the capture stays near 1 MiB, says so in
#           meta and summary, the launcher says so, and calls and RSS are still counted.
# In every case the program's output and exit status are those of an untraced run.
# Usage: startstop_test.py MEMTRACE MEMREPORT PROG WORKDIR CASE | --list
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import (bail, check, children, failures, finish, kill_children,  # noqa: E402
                    runner, wait_readable)

CASES = ("toggle", "unset", "delay", "maxmb")
TIMEOUT = 120


class Prog:
    """startstop_prog (under `launcher`, a command prefix), driven through stdin."""

    def __init__(self, launcher, prog, mode, env=None):
        self.ack_r, ack_w = os.pipe()
        self.p = subprocess.Popen([*launcher, prog, str(ack_w), mode], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  pass_fds=(ack_w,), env=dict(os.environ, **(env or {})))
        children.append(self.p)
        os.close(ack_w)
        line = b""
        while not line.endswith(b"\n"):
            wait_readable(self.ack_r, "the program's pid")
            got = os.read(self.ack_r, 1)
            if not got:
                bail("the program ended before it started")
            line += got
        self.pid = int(line)

    def phase(self, n):
        self.p.stdin.write(b"go\n")
        self.p.stdin.flush()
        wait_readable(self.ack_r, f"phase {n}")
        got = os.read(self.ack_r, 1)
        if got != str(n).encode():
            bail(f"phase {n}: the program said {got!r}")

    def finish(self):
        try:
            out, err = self.p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            bail("the program did not exit")
        os.close(self.ack_r)
        return out, self.p.returncode, err.decode()


def run_phases(prog, toggles=(), before=None):
    """Phases 1-4; SIGUSR2 to the program before each phase in `toggles` (it is blocked
    in read(), so the handler runs before it reads the line); before(n) runs first."""
    for n in (1, 2, 3, 4):
        if before:
            before(n)
        if n in toggles:
            os.kill(prog.pid, signal.SIGUSR2)
        prog.phase(n)
    return prog.finish()


def run_delayed(memtrace, capture, prog, mode):
    """memtrace --delay D: phase 1 surely before the start (else again with a longer delay),
    phases 2-4 after it. The capture's clock starts after the launcher did and before the
    program's pid reached us, so the test waits D from then; the program's first heap call
    after the time starts recording (no wait for the writer thread)."""
    delay = 2.0
    while True:
        launched = time.monotonic()
        p = Prog([memtrace, "--delay", f"{int(delay * 1000)}ms", "-o", capture], prog, mode)
        started = time.monotonic()
        p.phase(1)
        if time.monotonic() - launched < delay:
            break
        p.finish()  # too slow for this delay: a longer one
        for f in (capture, capture + "-wal", capture + "-shm"):
            if os.path.exists(f):
                os.unlink(f)
        delay *= 2
        if delay > TIMEOUT:
            bail("the program never ran phase 1 within the delay")
    time.sleep(max(0.0, delay - (time.monotonic() - started)) + 0.01)
    for n in (2, 3, 4):
        p.phase(n)
    return p.finish() + (delay,)


def meta(db, key):
    row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else None


def windows(db):
    return db.execute("SELECT ts_begin, ts_end FROM mark WHERE name='recording' "
                      "ORDER BY ts_begin").fetchall()


def check_summary(memreport, capture, truth):
    s = json.loads(runner(memreport)("summary", "--json", capture))
    for key, value in truth.items():
        check(s.get(key) == value, f"summary {key} {s.get(key)} == {value}")
    return s


# Phases 2 and 4 recorded: B (20 x 2048), 3 calloc(4, 256), 4 x 512 allocated; 10 + 5 of B
# freed; frees of A (10) and C (7) ignored; B's 5 freed in phase 3 (stopped) still live.
TOGGLE_TRUTH = {"status": "complete", "allocations": 27,
                "bytes_allocated": 20 * 2048 + 3 * 1024 + 4 * 512, "frees": 32,
                "unmatched_frees": 0, "ignored_frees": 17, "recording_windows": 2,
                "peak_bytes": 20 * 2048 + 3 * 1024, "leaked_allocations": 12,
                "leaked_bytes": 5 * 2048 + 3 * 1024 + 4 * 512}
# Phases 2, 3 and 4 recorded (after the delay): C's 7 x 3000 too; only A's 10 frees ignored.
DELAY_TRUTH = {"status": "complete", "allocations": 34,
               "bytes_allocated": 20 * 2048 + 3 * 1024 + 7 * 3000 + 4 * 512, "frees": 37,
               "unmatched_frees": 0, "ignored_frees": 10, "recording_windows": 1,
               "peak_bytes": 10 * 2048 + 3 * 1024 + 7 * 3000, "leaked_allocations": 7,
               "leaked_bytes": 3 * 1024 + 4 * 512}
# Everything: A's 10 x 1000 too, every free matched.
UNSET_TRUTH = {"status": "complete", "allocations": 44,
               "bytes_allocated": 10 * 1000 + 20 * 2048 + 3 * 1024 + 7 * 3000 + 4 * 512,
               "frees": 37, "unmatched_frees": 0, "leaked_allocations": 7,
               "leaked_bytes": 3 * 1024 + 4 * 512}


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return
    memtrace, memreport, prog, work, case = sys.argv[1:6]
    os.makedirs(work, exist_ok=True)
    capture = os.path.join(work, case + ".db")
    for f in (capture, capture + "-wal", capture + "-shm"):
        if os.path.exists(f):
            os.unlink(f)
    mode = {"unset": "show", "maxmb": "big"}.get(case, "")
    traced = [memtrace, "-o", capture]

    untraced = Prog([], prog, mode)
    if case == "maxmb":
        untraced.phase(1)
        want = untraced.finish()
    else:
        want = run_phases(untraced)

    delay = None
    if case == "toggle":
        p = Prog(traced, prog, mode, {"MEMTRACE_START": "stopped"})
        out, code, err = run_phases(p, toggles=(2, 3, 4))
    elif case == "unset":
        p = Prog(traced, prog, mode)
        out, code, err = run_phases(p)
        check(b"SIGUSR2: default" in out, f"SIGUSR2's disposition unchanged: {out!r}")
    elif case == "delay":
        out, code, err, delay = run_delayed(memtrace, capture, prog, mode)
    else:
        p = Prog(traced, prog, mode, {"MEMTRACE_MAX_MB": "1"})
        p.phase(1)
        out, code, err = p.finish()
    check((out, code) == want[:2] and code == 7,
          f"output and exit status as untraced ({out!r} {code}; untraced {want[0]!r} {want[1]})")
    if not check(os.path.exists(capture), f"the capture exists ({err.strip()})"):
        finish()
        return
    db = sqlite3.connect(capture)
    if case == "toggle":
        check_summary(memreport, capture, TOGGLE_TRUTH)
        w = windows(db)
        check(len(w) == 2 and all(e is not None and b <= e for b, e in w) and w[0][1] <= w[1][0],
              f"two closed recording ranges, one after the other: {w}")
        text = runner(memreport)("summary", capture)
        check("recording:    2 windows (start and stop); 17 frees of blocks allocated while "
              "stopped were ignored" in text, f"summary text says so: {text!r}")
    elif case == "unset":
        s = check_summary(memreport, capture, UNSET_TRUTH)
        check("recording_windows" not in s and windows(db) == [],
              "no recording ranges without start and stop")
    elif case == "delay":
        check_summary(memreport, capture, DELAY_TRUTH)
        w = windows(db)
        check(len(w) == 1 and w[0][0] >= delay * 1e9 and w[0][1] is not None,
              f"one recording range, from {delay} s on: {w}")
    else:
        size = os.path.getsize(capture)
        # 1 MiB and what one commit period (10 ms) wrote before the size was looked at.
        check(size < 2 * 2 ** 20, f"the capture stays near 1 MiB ({size} bytes)")
        check(meta(db, "events_stopped_at_mb") in (1, "1"), "meta events_stopped_at_mb = 1")
        cut = int(meta(db, "events_stopped_ns"))
        s = check_summary(memreport, capture, {"status": "complete", "events_stopped_at_mb": 1})
        calls = dict(db.execute("SELECT name, count FROM call_count").fetchall())
        check(calls.get("malloc", 0) >= 1000000 and calls.get("free", 0) >= 1000000,
              f"every call still counted ({calls.get('malloc')} malloc, {calls.get('free')} free)")
        check(0 < s["events"] < 2000000, f"events stopped part-way ({s['events']})")
        after = db.execute("SELECT count(*) FROM counter WHERE ts >= ?", (cut,)).fetchone()[0]
        check(after > 0, f"counters go on after the cut ({after} samples)")
        text = runner(memreport)("summary", capture)
        check("cut:          events stopped when the capture reached 1 MiB" in text,
              f"summary text says so: {text!r}")
        check("events stopped at 1 MiB (MEMTRACE_MAX_MB)" in err,
              f"the launcher says so: {err.strip()!r}")
    db.close()
    finish()


if __name__ == "__main__":
    try:
        main()
    finally:
        kill_children()
    if failures:
        sys.exit(1)
