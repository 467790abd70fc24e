#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program ended by a signal's default action (killed.c: SIGKILL, SIGTERM) runs no exit
handler of the tracer's; its exit watcher (preload/exit_watch.h) finishes the capture: it is
complete, says it ended unseen, the launcher names it written, and it holds every heap call
the program made (1000 blocks of 100-109 B at make_blocks, the 500 kept ones leaked). Before
the watcher, such a capture stayed truncated and lost the events after its last commit.
The watcher is in a session of its own, under a name of its own: a SIGKILL of the whole
process group (launcher and program: `timeout -s KILL`, a harness ending a job) spares it,
and the capture is finished all the same.
No leak scan can run in a process that is gone: every report that gives leak kinds says
so and why (docs/leaks.md), rather than a silent "no leaks".

Usage: check_killed.py MEMTRACE MEMREPORT PROGRAM WORKDIR
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import (bail, check, children, clean_env, exit_watchers, finish,  # noqa: E402
                    fresh_dir, memreport_sql, wait_for_exit_watchers, wait_readable)

KEPT_BYTES = sum(100 + i % 10 for i in range(0, 1000, 2))


def status_of(memreport, cap):
    return memreport_sql(memreport, cap, "SELECT value FROM meta WHERE key = 'capture_status'")


def start(launcher, prog, cap, env, new_session=False):
    """The launcher running the program into `cap`, once the program has said it is ready
    and the writer has created the capture (its first commit gives the -wal its first
    frame). The launcher's Popen, the program's pid."""
    p = subprocess.Popen([launcher, "-o", cap, "--", prog], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=new_session)
    children.append(p)
    wait_readable(p.stdout.fileno(), "the program's 'ready'")
    ready = p.stdout.readline().split()
    if len(ready) != 2 or ready[0] != "ready":
        bail(f"the program did not start ({ready})")
    for _ in range(600):
        if os.path.exists(cap + "-wal") and os.path.getsize(cap + "-wal") > 0:
            break
        time.sleep(0.01)
    return p, int(ready[1])


def case(launcher, memreport, prog, work, sig):
    # A writer killed holding a lock of SQLite's own (docs/tracer.md) leaves
    # the capture truncated, and named so: that known limit is tried again, at most twice;
    # anything else counts.
    for attempt in range(3):
        cap = os.path.join(work, f"killed-{sig.name if sig else 'group'}-{attempt}.db")
        if not one_run(launcher, memreport, prog, cap, sig, attempt == 2):
            return


def one_run(launcher, memreport, prog, cap, sig, last):
    """False once judged; True: truncated as by the known limit, worth another try. `sig`
    None: SIGKILL to the process group of launcher and program."""
    group = sig is None
    p, pid = start(launcher, prog, cap, clean_env(), group)
    watchers = wait_for_exit_watchers(cap)
    name = "group SIGKILL" if group else sig.name
    check(len(watchers) == 1, f"{name}: one task named memtrace-watch watches it ({watchers})")
    check(all(os.getsid(w) == w for w in watchers), f"{name}: in a session of its own")
    if group:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        # No launcher is left to wait for the watcher: the capture is polled until it ends
        # (while the watcher writes it, it is locked and reads no status: []).
        for _ in range(600):
            if status_of(memreport, cap) not in (["recording"], []) or not exit_watchers(cap):
                break
            time.sleep(0.05)
        err = ""
    else:
        os.kill(pid, sig)
        _, err = p.communicate(timeout=60)
    status = status_of(memreport, cap)
    if not last and status == ["recording"] and (group or "truncated capture written" in err):
        print(f"{name}: truncated, the known limit (the writer killed holding a lock); again")
        return True
    if group:
        check(status == ["complete"], f"{name}: the watcher finished it ({status})")
        return check_contents(memreport, cap, name)
    check(p.returncode == -sig, f"{sig.name}: the launcher dies as the program did "
          f"({p.returncode})")
    told = [ln for ln in err.splitlines() if cap in ln or os.path.relpath(cap) in ln]
    check(len(told) == 1 and told[0].startswith("memtrace: capture written to "),
          f"{sig.name}: the launcher names it written ({err!r})")
    return check_contents(memreport, cap, sig.name)


def check_contents(memreport, cap, name):
    s = subprocess.run([memreport, "leaks", "--json", cap], capture_output=True, text=True)
    if not check(s.returncode == 0, f"{name}: memreport reads it ({s.stderr!r})"):
        return False
    leaks = json.loads(s.stdout)
    check(leaks["status"] == "complete", f"{name}: complete ({leaks['status']})")
    unseen = memreport_sql(memreport, cap, "SELECT value FROM meta WHERE key = 'ended_unseen'")
    check(unseen == ["1"], f"{name}: it says it ended unseen")
    made = memreport_sql(memreport, cap, "SELECT count(*) FROM events WHERE kind = 'malloc'"
                         " AND size BETWEEN 100 AND 109")
    check(made == ["1000"], f"{name}: its 1000 allocations")
    ours = [(g["bytes"], g["blocks"]) for g in leaks["groups"]
            if g["stack"] and g["stack"][0]["function"] == "make_blocks"]
    check(ours == [(KEPT_BYTES, 500)], f"{name}: the 500 blocks it kept, "
          f"{KEPT_BYTES} B, leaked ({ours})")
    no_scan(memreport, cap, name, leaks)
    return False


def case_no_watcher(launcher, memreport, prog, work):
    """MEMTRACE_EXIT_WATCH=0: no watcher; a SIGKILL leaves the capture truncated, named so."""
    cap = os.path.join(work, "no-watcher.db")
    p, pid = start(launcher, prog, cap, clean_env(EXIT_WATCH=0))
    check(exit_watchers(cap) == [], "MEMTRACE_EXIT_WATCH=0: no watcher")
    os.kill(pid, signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    check(status_of(memreport, cap) == ["recording"] and "truncated capture written" in err,
          f"MEMTRACE_EXIT_WATCH=0: truncated, and named so ({err!r})")


def no_scan(memreport, cap, name, leaks):
    """Each report of leak kinds says the blocks are not classified, and why."""
    why = "the process ended without its exit handler"
    check(why in leaks.get("no_leak_kinds", ""), f"{name}: leaks --json says why no "
          f"kinds ({leaks.get('no_leak_kinds')!r})")
    mr = lambda *args: subprocess.run([memreport, *args, cap], capture_output=True, text=True)
    text = mr("leaks").stdout
    check(f"no leak kinds (not classified): {why}" in text, f"{name}: leaks says why no "
          f"kinds ({text[-400:]!r})")
    summary = json.loads(mr("summary", "--json").stdout)
    check(why in summary.get("no_leak_kinds", ""), f"{name}: summary --json says why")
    text = mr("summary").stdout
    check(f"no leak kinds (not classified): {why}" in text, f"{name}: summary says why")
    for args in (["leaks", "--kind", "definite"], ["flamegraph", "--leaks", "--kind", "definite",
                                                   "-o", cap + ".svg"],
                 ["diff", "--fail-if", "definitely_lost_bytes>0", cap]):
        r = mr(*args)
        check(r.returncode == 2 and why in r.stderr, f"{name}: {args[0]} refused, saying "
              f"why ({r.returncode}, {r.stderr!r})")


def main():
    launcher, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    for sig in (signal.SIGKILL, signal.SIGTERM, None):
        case(launcher, memreport, prog, work, sig)
    case_no_watcher(launcher, memreport, prog, work)
    finish()


if __name__ == "__main__":
    main()
