#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memtrace --pid on a running program (attach_prog.c, driven phase by phase over a pipe):
# attached after phase 1, the capture holds exactly what the program did afterwards until
# the detach (Ctrl-C to the launcher, memtrace --detach PID) or its exit, and a second
# attach after a detach records phase 3 into a capture of its own; the frees of blocks
# from before an attach are not errors; the program's output and exit status are those of an
# untraced run. Every wait has a time limit and kills what it waits for.
# Usage: attach_test.py MEMTRACE MEMREPORT PROG LIB WORKDIR CASE | --list
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import (bail, check, children, failures, finish, kill_children,  # noqa: E402
                    runner, wait_readable)

CASES = ("sigint", "detach", "exit", "reattach")
TIMEOUT = 120


class Prog:
    """attach_prog with its phases driven through stdin, acknowledged on a pipe."""

    def __init__(self, path, lib, env=None):
        self.ack_r, ack_w = os.pipe()
        self.p = subprocess.Popen([path, str(ack_w), lib], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, pass_fds=(ack_w,), env=env)
        children.append(self.p)
        os.close(ack_w)

    def phase(self, n):
        self.p.stdin.write(b"go\n")
        self.p.stdin.flush()
        wait_readable(self.ack_r, f"phase {n}")
        got = os.read(self.ack_r, 1)
        if got != str(n).encode():
            bail(f"phase {n}: the program said {got!r}")

    def finish(self):
        self.p.stdin.write(b"go\n")
        self.p.stdin.close()
        wait_readable(self.p.stdout.fileno(), "the program's output")
        try:
            out = self.p.stdout.read()
            code = self.p.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            bail("the program did not exit")
        os.close(self.ack_r)
        return out, code


class Launcher:
    """memtrace --pid PID -o FILE, its stderr read line by line."""

    def __init__(self, memtrace, pid, out, env=None):
        """out None: no -o (MEMTRACE_OUTPUT in env, or the default name)."""
        self.p = subprocess.Popen([memtrace, "--pid", str(pid)] + (["-o", out] if out else []),
                                  stderr=subprocess.PIPE, env=env)
        children.append(self.p)
        self.err = b""

    def wait_for(self, text):
        while text.encode() not in self.err:
            wait_readable(self.p.stderr.fileno(), f"the launcher to say {text!r}")
            chunk = os.read(self.p.stderr.fileno(), 4096)
            if not chunk:
                bail(f"the launcher ended without saying {text!r}: {self.err.decode()}")
            self.err += chunk

    def end(self):
        try:
            code = self.p.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            bail("the launcher did not exit")
        self.err += self.p.stderr.read()
        return code


def untraced(prog, lib):
    p = Prog(prog, lib)
    p.phase(1)
    p.phase(2)
    return p.finish()


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return
    memtrace, memreport, prog, lib, work, case = sys.argv[1:7]
    if not shutil.which("gdb"):
        print("skip: gdb is not installed (scripts/install-deps.sh --test installs it)")
        sys.exit(77)
    os.makedirs(work, exist_ok=True)
    capture = os.path.join(work, case + ".db")
    if os.path.exists(capture):
        os.unlink(capture)
    want_out, want_code = untraced(prog, lib)

    p = Prog(prog, lib)
    p.phase(1)
    if case == "detach":
        nogdb = subprocess.run([memtrace, "--pid", str(p.p.pid)], capture_output=True, text=True,
                               timeout=TIMEOUT, env=dict(os.environ, PATH="/nonexistent"))
        check(nogdb.returncode == 1 and "needs gdb" in nogdb.stderr,
              f"without gdb, --pid says it needs it ({nogdb.stderr.strip()})")
    launcher = Launcher(memtrace, p.p.pid, capture)
    launcher.wait_for("memtrace: attached to process")
    p.phase(2)
    if case == "sigint":
        launcher.p.send_signal(signal.SIGINT)
        check(launcher.end() == 0, "the launcher detaches on SIGINT and exits 0")
    elif case == "detach":
        d = subprocess.run([memtrace, "--detach", str(p.p.pid)], capture_output=True,
                           text=True, timeout=TIMEOUT)
        check(d.returncode == 0 and "detached" in d.stderr,
              f"memtrace --detach exits 0 ({d.returncode}: {d.stderr.strip()})")
        check(launcher.end() == 0, "the waiting launcher sees the detach and exits 0")
        again = subprocess.run([memtrace, "--detach", str(p.p.pid)], capture_output=True,
                               text=True, timeout=TIMEOUT)
        check(again.returncode == 1 and "not recording" in again.stderr,
              f"a second --detach says it is not recording ({again.stderr.strip()})")
        # The process goes on running: naming its frames (no symbol cache in tests) must not
        # load libdw, libelf or the debuginfod client into it; memreport names them.
        with open(f"/proc/{p.p.pid}/maps") as f:
            loaded = sorted({line.split()[-1] for line in f
                             if any(k in line for k in ("libdw", "libelf", "libdebuginfod"))})
        check(not loaded, f"the detach loaded no library into the process ({loaded})")
    elif case == "reattach":
        launcher.p.send_signal(signal.SIGINT)
        check(launcher.end() == 0, "the first launcher detaches on SIGINT")
        first = launcher
        second_capture = os.path.join(work, case + ".2.db")
        if os.path.exists(second_capture):
            os.unlink(second_capture)
        launcher = Launcher(memtrace, p.p.pid, second_capture)
        launcher.wait_for("memtrace: attached to process")
    out, code = p.finish()
    if case in ("exit", "reattach"):
        check(launcher.end() == 0, "the launcher exits 0 when the process does")
    if case == "reattach":
        # Phase 3 alone: every free is of a block from before this attach (5 of phase 1's,
        # 15 of phase 2's), and four malloc(512) are left.
        s2 = json.loads(runner(memreport)("summary", "--json", second_capture))
        truth2 = {"status": "complete", "attached": True, "allocations": 4,
                  "bytes_allocated": 2048, "frees": 20, "unmatched_frees": 20,
                  "leaked_allocations": 4, "leaked_bytes": 2048}
        for key, value in truth2.items():
            check(s2.get(key) == value, f"second capture: {key} {s2.get(key)} == {value}")
        launcher.err = first.err + launcher.err
    check(out == want_out and code == want_code == 7,
          f"output and exit status as untraced ({out!r} {code}; untraced {want_out!r} "
          f"{want_code})")
    check("capture written to" in launcher.err.decode(),
          f"the launcher names the capture: {launcher.err.decode().strip()}")
    if not check(os.path.exists(capture), "the capture exists"):
        finish()
        return

    s = json.loads(runner(memreport)("summary", "--json", capture))
    db = sqlite3.connect(capture)
    attached = db.execute("SELECT value FROM meta WHERE key='attached'").fetchone()
    db.close()
    check(attached is not None and int(attached[0]) == 1, "meta attached = 1")
    check(s["status"] == "complete", f"status complete ({s['status']})")
    # Phase 2: 20 malloc(2048), 3 calloc(4, 256), a realloc to 4096 (a free and an
    # allocation); 10 frees of its blocks and 5 of phase 1's (allocated before the attach);
    # then, in a library dlopen'ed after the attach, 3 malloc(777) and a free of one.
    truth = {"allocations": 27, "bytes_allocated": 20 * 2048 + 3 * 1024 + 4096 + 3 * 777,
             "frees": 17, "unmatched_frees": 5, "peak_bytes": 20 * 2048 + 3 * 1024 + 2048,
             "leaked_allocations": 15, "leaked_bytes": 9 * 2048 + 4096 + 3 * 1024 + 2 * 777}
    if case == "exit":
        # Phase 3 while attached: 5 more of phase 1's, the 15 left of phase 2's, and four
        # malloc(512) never freed.
        truth.update({"allocations": 31, "bytes_allocated": truth["bytes_allocated"] + 2048,
                      "frees": 37, "unmatched_frees": 10, "leaked_allocations": 4,
                      "leaked_bytes": 2048})
    for key, value in truth.items():
        check(s[key] == value, f"{key} {s[key]} == {value}")
    check(s.get("attached") is True, "summary --json says attached")
    if case == "detach":
        names = {f["function"] for st in json.loads(runner(memreport)(
            "stacks", "--json", "--all-frames", capture))["stacks"] for f in st["frames"]}
        check("main" in names, f"memreport names the frames the detach left ({sorted(names)[:8]})")
    text = runner(memreport)("summary", capture)
    ignored = f"attached:     to a running process; {truth['unmatched_frees']} frees of blocks"
    check(ignored in text, f"summary says the frees of older blocks were ignored: {text!r}")
    finish()


if __name__ == "__main__":
    try:
        main()
    finally:
        kill_children()
    if failures:
        sys.exit(1)
