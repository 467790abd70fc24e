#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A leak scan that does not finish (docs/leaks.md): it takes longer than
# MEMTRACE_LEAK_SCAN_MS, in place (the program's last thread exits) or in a copy of the
# process (another thread is left), or its copy dies (killed here as soon as it appears).
# Either way the program's output and exit status are the untraced run's, the capture is
# complete and says the scan did not run and why, and `leaks` reads its blocks unclassified:
# no kinds, every block of held_heap's (N of 64 B, the array, the lost one) in one list, and
# the reason. The copy is the program's only child (a raw clone: its parent is the program).
# A program with no block live at exit (/bin/true) needs no copy: its scan is complete even
# with a 1 ms limit, and no copy's CPU time is counted.
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import capture_meta, check, children, clean_env, finish, fresh_dir  # noqa: E402

BLOCKS = 400000


def child_of(pid):
    """The pid of a process whose parent is pid, or None. Newer than pid: its pid is higher
    but where pids wrapped, and the fewer files read, the sooner the copy is seen."""
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) <= pid:
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
            return int(name)
    return None


def run(prog, lib, db, settings, kill_copy, thread=False):
    """(exit status, output, whether the copy was killed here) of one run, traced with a
    capture db; with thread, a thread of the program's is still there at its exit."""
    env = clean_env(OUTPUT=db, **settings) | {"LD_PRELOAD": lib} if db else clean_env()
    p = subprocess.Popen([prog, str(BLOCKS)] + (["thread"] if thread else []),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    children.append(p)
    out = p.stdout.readline()
    p.stdin.write(b"go\n")
    p.stdin.close()
    killed = False
    deadline = time.monotonic() + 60
    while kill_copy and not killed and p.poll() is None and time.monotonic() < deadline:
        copy = child_of(p.pid)
        if copy:
            os.kill(copy, 9)
            killed = True
    out += p.stdout.read()
    return p.wait(), out, killed


def main():
    lib, memreport, prog, work = sys.argv[1:5]
    fresh_dir(work)
    plain = run(prog, lib, None, {}, False)
    check(plain[0] == 3 and plain[1] == b"ready\nbye\n", f"untraced: {plain[:2]}")
    cases = [("timeout", {"LEAK_SCAN_MS": 1}, False, False,
              "timeout: the scan took more than 1 ms"),
             ("timeout, copy", {"LEAK_SCAN_MS": 1}, False, True,
              "timeout: the scan took more than 1 ms"),
             ("killed", {}, True, True, "the scanning copy died of signal 9")]
    for name, settings, kill_copy, thread, why in cases:
        for attempt in range(3):  # the copy may end before it is seen
            db = os.path.join(work, f"{name.replace(', ', '-')}-{attempt}.db")
            status, out, killed = run(prog, lib, db, settings, kill_copy, thread)
            if killed or not kill_copy:
                break
            print(f"{name}: the copy ended before it was seen; again")
        check((status, out) == plain[:2], f"{name}: status and output as untraced "
              f"({status}, {out})")
        meta = capture_meta(db)
        check(meta.get("capture_status") == "complete", f"{name}: capture complete")
        check(meta.get("leak_scan") == "not run" and meta.get("leak_scan_why") == why,
              f"{name}: the scan did not run, and why ({meta.get('leak_scan_why')!r})")
        r = subprocess.run([memreport, "leaks", "--json", db], capture_output=True, text=True)
        leaks = json.loads(r.stdout) if r.returncode == 0 else {}
        check("kinds" not in leaks and leaks.get("no_leak_kinds") == why,
              f"{name}: leaks has no kinds, and says why ({leaks.get('no_leak_kinds')!r})")
        want = BLOCKS * 64 + (BLOCKS + 1) * 8 + 100
        check((leaks.get("bytes"), leaks.get("blocks")) == (want, BLOCKS + 2),
              f"{name}: the program's blocks listed unclassified "
              f"({leaks.get('bytes')}, {leaks.get('blocks')})")
    db = os.path.join(work, "nothing-live.db")
    p = subprocess.run(["/bin/true"], env=clean_env(OUTPUT=db, LEAK_SCAN_MS=1)
                       | {"LD_PRELOAD": lib})
    meta = capture_meta(db)
    got = {k: meta.get(k) for k in ("leak_scan", "leak_scan_blocks", "leak_scan_cpu_ns")}
    check(p.returncode == 0 and got == {"leak_scan": "complete", "leak_scan_blocks": "0",
                                        "leak_scan_cpu_ns": "0"},
          f"nothing live: the scan complete without a copy ({p.returncode}, {got})")
    finish()


if __name__ == "__main__":
    main()
