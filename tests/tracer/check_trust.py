#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tracer never harms the traced program or its files, and never loses a capture.

Usage: check_trust.py --launcher MEMTRACE --lib LIBMEMTRACE --memreport MEMREPORT
                      --prog TRUST_PROG --static-prog STATIC_PROG --nopie-prog NOPIE_PROG
                      --workdir DIR CASE
       check_trust.py --list     (the cases, one a line: see each case_ function)
"""
import argparse
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import bail, capture_meta, check, children, failures, wait_readable  # noqa: E402


def summary(memreport, path):
    r = subprocess.run([memreport, "summary", "--json", path], capture_output=True, text=True)
    if not check(r.returncode == 0, f"memreport summary {os.path.basename(path)} reads it "
                 f"({r.stderr.strip()})"):
        return None
    return json.loads(r.stdout)


def traced(launcher, argv, env=None, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([launcher] + argv, capture_output=True, text=True, env=e, cwd=cwd)


def preloaded(lib, argv, env, cwd=None):
    e = dict(os.environ, LD_PRELOAD=lib)
    e.update(env)
    return subprocess.run(argv, capture_output=True, text=True, env=e, cwd=cwd)


def case_fds(a, w):
    """A program that closes every fd and opens its own files keeps them intact (item 1)."""
    results = {}
    for label, extra in (("closes", {}), ("control", {"TRUST_NO_CLOSE": "1"})):
        for unwind in ("auto", "libunwind"):
            d = os.path.join(w, f"{label}-{unwind}")
            os.makedirs(d)
            cap = os.path.join(d, "cap.db")
            env = dict(extra, MEMTRACE_OUTPUT=cap, TRUST_CAPTURE=cap, MEMTRACE_UNWIND=unwind)
            r = preloaded(a.lib, [a.prog, "closefds", d], env)
            check(r.returncode == 0 and r.stderr == "",
                  f"{label}/{unwind}: exit 0, no message ({r.returncode}: {r.stderr.strip()})")
            for f in range(8):
                with open(os.path.join(d, f"file{f}.txt"), "rb") as fh:
                    data = fh.read()
                want = b"".join(b"file %d line %d\n" % (f, n) for n in range(30))
                check(data == want, f"{label}/{unwind}: file{f}.txt holds exactly its 30 lines "
                      f"({len(data)} bytes, want {len(want)})")
            s = summary(a.memreport, cap)
            if s:
                check(s["status"] == "complete", f"{label}/{unwind}: capture complete "
                      f"({s['status']})")
                results[(label, unwind)] = (s["allocations"], s["frees"])
    # Every allocation after the fds were closed is in the capture: as many as without closing.
    for unwind in ("auto", "libunwind"):
        got, want = results.get(("closes", unwind)), results.get(("control", unwind))
        check(got is not None and got == want,
              f"{unwind}: allocations and frees after close: {got}, without closing: {want}")


def case_capture_read(a, w):
    """A program that reads its own capture (grep -r, tar, md5sum in its directory: an open
    and a close) or closes every fd keeps the capture locked: memreport on it while it runs
    says it is running and does not write to it. A process-associated lock died with that
    close, and memreport appended its symbol transaction to the -wal being written."""
    for label, extra in (("reads", {}), ("closes-all", {"TRUST_CLOSE_ALL": "1"})):
        cap = os.path.join(w, f"{label}.db")
        env = dict(os.environ, LD_PRELOAD=a.lib, MEMTRACE_OUTPUT=cap, TRUST_CAPTURE=cap,
                   **extra)
        p = subprocess.Popen([a.prog, "readcap"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env)
        children.append(p)
        wait_readable(p.stdout.fileno(), f"{label}: the program's 'read'")
        check(p.stdout.readline() == b"read\n", f"{label}: the program read its capture")
        # Its files closed, the tracer has them back (reopened, locked again) at the next
        # commit: one that writes the -wal after the close.
        wal = cap + "-wal"
        before = os.stat(wal).st_mtime_ns
        deadline = time.monotonic() + 120
        while os.stat(wal).st_mtime_ns == before and time.monotonic() < deadline:
            p.stdin.write(b"x")
            p.stdin.flush()
            time.sleep(0.01)
        check(os.stat(wal).st_mtime_ns != before, f"{label}: the tracer committed since")
        r = subprocess.run([a.memreport, "summary", cap], capture_output=True, text=True)
        check(r.returncode == 3 and "still running" in r.stderr,
              f"{label}: memreport says the capture is in use (exit 3: {r.returncode}, "
              f"{r.stderr.strip()!r})")
        check("symbolized" not in r.stderr, f"{label}: memreport wrote no symbols into it")
        p.stdin.close()
        check(p.wait(timeout=120) == 0, f"{label}: the program exits 0")
        s = summary(a.memreport, cap)
        check(s is not None and s["status"] == "complete", f"{label}: its capture is complete")


def case_symlink(a, w):
    """A planted symlink at the output path is never followed; captures are 0600 (items 2-3)."""
    victim = os.path.join(w, "victim.txt")
    with open(victim, "w") as f:
        f.write("precious\n")
    cap = os.path.join(w, "cap.db")
    os.symlink(victim, cap)
    dangling = os.path.join(w, "dangling.db")
    os.symlink(os.path.join(w, "created-by-tracer"), dangling)
    old = os.umask(0)
    try:
        for out in (cap, dangling):
            r = preloaded(a.lib, [a.prog, "chdir", "/"], {"MEMTRACE_OUTPUT": out})
            check(r.returncode == 0 and r.stderr == "", f"{os.path.basename(out)}: program ran "
                  f"unchanged ({r.returncode}: {r.stderr.strip()})")
    finally:
        os.umask(old)
    with open(victim, "rb") as f:
        check(f.read() == b"precious\n", "the symlink's target is untouched")
    check(os.path.islink(cap) and os.path.islink(dangling), "the symlinks are still symlinks")
    check(not os.path.exists(os.path.join(w, "created-by-tracer")),
          "no file created through a dangling symlink")
    for name in sorted(os.listdir(w)):
        if name.endswith(".db") and not os.path.islink(os.path.join(w, name)):
            path = os.path.join(w, name)
            mode = stat.S_IMODE(os.stat(path).st_mode)
            check(mode == 0o600, f"{name}: mode {oct(mode)} is 0600 (umask 0)")
            s = summary(a.memreport, path)
            if s:
                check(s["leaked_bytes"] == 4242, f"{name}: the program's 4242 leaked bytes "
                      f"({s['leaked_bytes']})")
    written = [n for n in os.listdir(w) if n.endswith(".db") and not os.path.islink(
        os.path.join(w, n))]
    check(len(written) == 2, f"two captures beside the symlinks: {sorted(written)}")


def case_other_names(a, w):
    """The library records under any file name: a copy, a symlink, /etc/ld.so.preload."""
    def counts(cap):
        s = summary(a.memreport, cap)
        return s and (s["status"], s["allocations"], s["frees"], s["leaked_bytes"])

    own = os.path.join(w, "own.db")
    preloaded(a.lib, [a.prog, "chdir", "/"], {"MEMTRACE_OUTPUT": own})
    want = counts(own)
    check(want and want[0] == "complete" and want[3] == 4242,
          f"under its own name: complete, the program's 4242 leaked bytes ({want})")
    copy = os.path.join(w, "mt.so")
    shutil.copy(a.lib, copy)
    link = os.path.join(w, "libmt.so.0")
    os.symlink(copy, link)
    for label, lib in (("a copy named mt.so", copy), ("a symlink libmt.so.0", link)):
        cap = os.path.join(w, os.path.basename(lib) + ".db")
        r = preloaded(lib, [a.prog, "chdir", "/"], {"MEMTRACE_OUTPUT": cap})
        check(r.returncode == 0 and r.stderr == "",
              f"{label}: program unchanged ({r.returncode}: {r.stderr.strip()})")
        check(os.path.exists(cap) and counts(cap) == want,
              f"{label}: the same capture as under its own name "
              f"({counts(cap) if os.path.exists(cap) else 'no capture'}, want {want})")
    # /etc/ld.so.preload, in a mount namespace of its own with /etc under an overlay, so the
    # machine's own /etc is never touched.
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("skipped /etc/ld.so.preload: needs root and unshare")
        return
    for d in ("upper", "work"):
        os.makedirs(os.path.join(w, d))
    cap = os.path.join(w, "etc-preload.db")
    script = (f"mount -t overlay overlay -o lowerdir=/etc,upperdir={w}/upper,"
              f"workdir={w}/work /etc || exit 77; echo {copy} > /etc/ld.so.preload; "
              f"MEMTRACE_OUTPUT={cap} exec {a.prog} chdir /")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                       capture_output=True, text=True, env=env)
    if r.returncode == 77 or (r.returncode != 0 and "unshare" in r.stderr):
        print(f"skipped /etc/ld.so.preload: no private mount namespace ({r.stderr.strip()})")
        return
    check(r.returncode == 0 and r.stderr == "",
          f"/etc/ld.so.preload: program unchanged ({r.returncode}: {r.stderr.strip()})")
    check(os.path.exists(cap) and counts(cap) == want,
          f"/etc/ld.so.preload: the same capture as under LD_PRELOAD "
          f"({counts(cap) if os.path.exists(cap) else 'no capture'}, want {want})")


def case_not_started(a, w):
    """Where the library is loaded but cannot record, one memtrace: line says why, and the
    program runs as it would: dlopen'ed after libc; a second copy preloaded after the first
    (which records, as alone); an allocator preloaded before it."""
    def lines(r):
        return [l for l in r.stderr.splitlines() if l.startswith("memtrace:")]

    r = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({a.lib!r})"],
                       capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
    said = lines(r)
    check(r.returncode == 0 and len(said) == 1 and "loaded after libc" in said[0],
          f"dlopen'ed: exit 0, one line saying it is not preloaded ({r.returncode}: {said})")

    alone = os.path.join(w, "alone.db")
    preloaded(a.lib, [a.prog, "chdir", "/"], {"MEMTRACE_OUTPUT": alone})
    want = summary(a.memreport, alone)
    copy = os.path.join(w, "mt.so")
    shutil.copy(a.lib, copy)
    out = os.path.join(w, "two") + "/"
    r = preloaded(f"{a.lib}:{copy}", [a.prog, "chdir", "/"], {"MEMTRACE_OUTPUT": out})
    said = lines(r)
    check(r.returncode == 0 and len(said) == 1 and
          said[0].startswith(f"memtrace: {copy} records nothing: malloc resolves to {a.lib}"),
          f"two copies: exit 0, one line from the second ({r.returncode}: {r.stderr.strip()})")
    caps = sorted(os.listdir(out)) if os.path.isdir(out) else []
    got = summary(a.memreport, os.path.join(out, caps[0])) if len(caps) == 1 else None
    keys = ("status", "allocations", "frees", "leaked_bytes")
    check(got and want and all(got[k] == want[k] for k in keys),
          f"two copies: one capture, as the first alone writes ({caps}: "
          f"{got and [got[k] for k in keys]}, want {want and [want[k] for k in keys]})")

    import glob
    tcmalloc = sorted(glob.glob("/usr/lib/*/libtcmalloc_minimal.so.4"))
    if not tcmalloc:
        print("skipped the allocator preloaded first: no libtcmalloc_minimal.so.4 "
              "(scripts/install-deps.sh --test)")
        return
    out = os.path.join(w, "tc") + "/"
    r = preloaded(f"{tcmalloc[0]}:{a.lib}", [a.prog, "chdir", "/"], {"MEMTRACE_OUTPUT": out})
    said = lines(r)
    check(r.returncode == 0 and len(said) == 1 and f"malloc resolves to {tcmalloc[0]}" in said[0],
          f"tcmalloc first: exit 0, one line naming it ({r.returncode}: {r.stderr.strip()})")


def case_non_pie(a, w):
    """A program linked without PIE that takes malloc's address (Debian's python3.11) is
    recorded: dlsym(RTLD_DEFAULT, "malloc") names its own PLT slot, not this library."""
    cap = os.path.join(w, "nopie.db")
    r = preloaded(a.lib, [a.nopie_prog], {"MEMTRACE_OUTPUT": cap})
    check(r.returncode == 0 and r.stderr == "", f"program unchanged ({r.returncode}: {r.stderr})")
    s = summary(a.memreport, cap) if check(os.path.exists(cap), "a capture is written") else None
    check(s and s["status"] == "complete" and s["leaked_bytes"] >= 4242,
          f"complete, the program's 4242 leaked bytes ({s and s['leaked_bytes']})")
    r = traced(a.memtrace, ["-o", os.path.join(w, "launched.db"), a.nopie_prog])
    check(r.returncode == 0 and "capture written to" in r.stderr,
          f"under the launcher too: {r.stderr.strip()!r}")


def case_relative(a, w):
    """A relative output path is where the program started, whatever it chdirs to (item 5)."""
    sub = os.path.join(w, "elsewhere")
    os.makedirs(sub)
    r = traced(a.memtrace, ["-o", "rel.db", "--", a.prog, "chdir", sub], cwd=w)
    check(r.returncode == 0, f"launcher run exits 0 ({r.returncode})")
    check(os.path.exists(os.path.join(w, "rel.db")), "capture in the start directory")
    check(os.listdir(sub) == [], f"nothing in the directory it moved to: {os.listdir(sub)}")
    check("memtrace: capture written to rel.db" in r.stderr, f"launcher names it: {r.stderr!r}")
    r = preloaded(a.lib, [a.prog, "chdir", sub], {"MEMTRACE_OUTPUT": "pre.db"},
                  cwd=w)
    check(os.path.exists(os.path.join(w, "pre.db")), "LD_PRELOAD alone: same")
    check(os.listdir(sub) == [], f"LD_PRELOAD alone: nothing in {sub}: {os.listdir(sub)}")


def case_reexec(a, w):
    """A program that re-execs itself 20 times leaves 21 complete captures (item 4)."""
    images = 21
    r = traced(a.memtrace, ["-o", os.path.join(w, "cap.%p.db"), a.prog, "reexec", str(images)])
    check(r.returncode == 0, f"exit 0 ({r.returncode}: {r.stderr.strip()})")
    caps = sorted(n for n in os.listdir(w) if n.endswith(".db"))
    check(len(caps) == images, f"{images} captures: {caps}")
    told = [l for l in r.stderr.splitlines() if l.startswith("memtrace: capture written to ")]
    check(len(told) == images, f"the launcher names all {images}: {len(told)}")
    leaked = set()
    for name in caps:
        s = summary(a.memreport, os.path.join(w, name))
        if not s:
            continue
        check(s["status"] == "complete", f"{name}: complete ({s['status']})")
        n = s["leaked_bytes"] - 1000
        check(s["allocations"] == n + 1 and s["frees"] == n,
              f"{name}: image {n}: {n + 1} allocations, {n} frees ({s['allocations']}, "
              f"{s['frees']})")
        leaked.add(s["leaked_bytes"])
    check(leaked == {1000 + n for n in range(1, images + 1)},
          f"one capture per image, every image's leak: {sorted(leaked)}")


def case_path_search(a, w):
    """A shell's exec that searches PATH (dash calls execve in each directory until one
    works) leaves one capture per image: the shell's and the program's. Each miss finished
    the shell's capture and started another: 10 captures for `sh -c "exec true"` with 8
    directories before /usr/bin."""
    misses = [os.path.join(w, f"nothing{i}") for i in range(8)]
    env = {"PATH": ":".join(misses + ["/usr/bin", "/bin"])}
    r = traced(a.memtrace, ["-o", os.path.join(w, "cap.db"), "--", "/bin/sh", "-c", "exec true"],
               env=env)
    check(r.returncode == 0, f"exit 0 ({r.returncode}: {r.stderr.strip()})")
    caps = sorted(n for n in os.listdir(w) if n.endswith(".db"))
    told = [ln for ln in r.stderr.splitlines() if ln.startswith("memtrace: capture written to ")]
    check(len(caps) == 2 and len(told) == 2, f"two captures, both named: {caps} {told}")
    exes = sorted(os.path.basename(capture_meta(os.path.join(w, n))["exe"]) for n in caps)
    shell = os.path.basename(os.path.realpath("/bin/sh"))
    check(exes == sorted([shell, "true"]), f"the shell's and the program's: {exes}")


def case_pidfd_reused(a, w):
    """A program that closes every descriptor and gets the number of the tracer's pidfd of
    its exit watcher for a pidfd of its own child (as a server with thousands of files may):
    the tracer, ending the capture at exit, killed that child through it and closed it."""
    r = traced(a.memtrace, ["-o", os.path.join(w, "cap.db"), "--", a.prog, "pidfdreuse"])
    pid = int(r.stdout) if r.stdout.strip().isdigit() else 0
    try:
        check(r.returncode == 0 and pid > 0, f"the program ran ({r.returncode}: {r.stderr!r})")
        if pid:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rpartition(")")[2].split()[0]
            check(state not in ("Z", "X"), f"its child lives on after it (state {state})")
    except FileNotFoundError:
        check(False, "its child lives on after it (gone)")
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
    s = summary(a.memreport, os.path.join(w, "cap.db"))
    check(s is not None and s["status"] == "complete", "and the capture is complete")


def case_high_pipe(a, w):
    """A pipe's write end that a forked child closes reaches EOF in its parent while the
    child runs on, though its number (1500) is above the tracer's own (the soft limit the
    program had): the child's exit watcher kept every descriptor from there up."""
    r = traced(a.memtrace, ["-o", os.path.join(w, "cap.db"), "--", a.prog, "highpipe"])
    if r.returncode == 77:
        print("SKIP: the hard limit of descriptors is under 2000")
        sys.exit(77)
    check(r.returncode == 0 and r.stdout == "eof\n",
          f"EOF while the child runs ({r.returncode}: {r.stdout!r} {r.stderr!r})")


def case_launcher(a, w):
    """The launcher reports exactly what this run wrote, and says why when nothing (item 7)."""
    stale = os.path.join(w, "old.db")
    with open(stale, "w") as f:
        f.write("not a capture of this run\n")
    r = traced(a.memtrace, ["-o", stale, a.prog, "chdir", "/"])
    check(r.returncode != 0 and "exists" in r.stderr and "capture written" not in r.stderr,
          f"an existing -o file is refused: {r.returncode} {r.stderr.strip()!r}")
    with open(stale) as f:
        check(f.read() == "not a capture of this run\n", "and left as it was")
    r = traced(a.memtrace, ["-f", "-o", stale, a.prog, "chdir", "/"])
    told = r.stderr.strip().rpartition("memtrace: capture written to ")[2]
    check(r.returncode == 0 and r.stderr.count("\n") == 1 and os.path.exists(told) and
          os.path.samefile(told, stale), f"-f overwrites it: {r.stderr.strip()!r}")
    check(summary(a.memreport, stale) is not None, "and it is now this run's capture")
    r = traced(a.memtrace, ["-o", w, a.prog, "chdir", "/"])
    told = r.stderr.strip().rpartition("memtrace: capture written to ")[2]
    check(r.returncode == 0 and os.path.dirname(os.path.abspath(told)) == os.path.abspath(w)
          and os.path.basename(told).endswith(".trust_prog.db"),
          f"a directory as -o takes one capture per process: {r.stderr.strip()!r}")
    r = traced(a.memtrace, ["-o", os.path.join(w, "static.db"), a.static_prog])
    check(r.returncode == 0 and "statically linked" in r.stderr and "written to" not in r.stderr,
          f"a static program: {r.stderr.strip()!r}")
    check(r.stdout == "static program ran\n", f"and it ran: {r.stdout!r}")
    check(not os.path.exists(os.path.join(w, "static.db")), "no capture for it")
    r = traced(a.memtrace, ["-o", os.path.join(w, "no-such-dir", "x.db"), a.prog, "chdir", "/"])
    lines = r.stderr.splitlines()
    check(r.returncode == 0 and len(lines) == 1 and lines[0].startswith("memtrace: process ")
          and "No such file or directory" in lines[0],
          f"a capture that cannot be created: one line saying why: {r.stderr!r}")


# A program that signals its parent and its whole process group (SIGUSR2, which it takes
# itself), answers SIGUSR1 and ends on SIGTERM with exit status 7; case_signals runs it under
# the launcher, in a process group of their own.
SIGNALLED = """
import os, signal, sys, time
signal.signal(signal.SIGUSR1, lambda s, f: print("usr1", flush=True))
signal.signal(signal.SIGUSR2, lambda s, f: None)
signal.signal(signal.SIGTERM, lambda s, f: (print("term", flush=True), sys.exit(7)))
os.kill(os.getppid(), signal.SIGUSR2)
os.kill(0, signal.SIGUSR2)
print("ready", flush=True)
while True:
    time.sleep(0.01)
"""


def case_signals(a, w):
    """A signal sent to the launcher reaches the program, which ends as it would untraced
    (its status, a complete capture); one the program sends its parent or its process group
    neither kills the launcher nor goes on to the launcher's parent (this driver)."""
    told = []
    signal.signal(signal.SIGUSR2, lambda s, f: told.append(s))
    cap = os.path.join(w, "signalled.db")
    p = subprocess.Popen([a.memtrace, "-o", cap, "--", sys.executable, "-c", SIGNALLED],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    children.append(p)
    said = []
    for sig, answer in ((None, "ready"), (signal.SIGUSR1, "usr1"), (signal.SIGTERM, "term")):
        if sig:
            p.send_signal(sig)  # to the launcher
        wait_readable(p.stdout.fileno(), f"the program's {answer!r}", timeout=60)
        said.append(p.stdout.readline().strip())
    check(said == ["ready", "usr1", "term"], f"the program got the launcher's signals ({said})")
    try:
        status = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        bail("the launcher did not end after the program's SIGTERM")
    check(status == 7, f"the launcher exits as the program did: 7 ({status}: {p.stderr.read()})")
    check(told == [], f"the program's signals to its parent and group stop at the launcher ({told})")
    s = summary(a.memreport, cap)
    check(s is not None and s["status"] == "complete", "and its capture is complete")


# Exits 5 after saying whether it was started with SIGCHLD ignored.
SIGCHLD_SAYS = """
import signal, sys
print(signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN)
sys.exit(5)
"""


def case_sigchld_ignored(a, w):
    """A launcher started with SIGCHLD ignored (inherited across exec, as a parent that
    ignores it leaves it) still exits as the program did, and the program still starts with
    it ignored, as untraced (the kernel reaped the program at once: the launcher's waitpid
    failed and it exited 0)."""
    cap = os.path.join(w, "ignored.db")
    r = subprocess.run([a.memtrace, "-o", cap, "--", sys.executable, "-c", SIGCHLD_SAYS],
                       capture_output=True, text=True, timeout=120,
                       preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    check(r.returncode == 5, f"the launcher exits 5, as the program ({r.returncode}: "
          f"{r.stderr.strip()})")
    check(r.stdout == "True\n", f"the program started with SIGCHLD ignored: {r.stdout!r}")
    s = summary(a.memreport, cap)
    check(s is not None and s["status"] == "complete", "and its capture is complete")



# Says 'term' and exits 7 at SIGTERM; 'never signalled' and exit 3 after 5 s without one.
AT_FORK_PROG = """trap 'echo term; exit 7' TERM
i=0; while [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
echo never signalled; exit 3
"""


def case_signal_at_fork(a, w):
    """A signal sent to the launcher just after it forked the program, before it had set up
    the passing on (gdb stops it there), reaches the program, and the launcher ends as the
    program did (before: the launcher died of it and the program ran on, orphaned)."""
    script = os.path.join(w, "prog.sh")
    with open(script, "w") as f:
        f.write(AT_FORK_PROG)
    gdb = ["gdb", "-q", "-nx", "-batch", "-ex", "set startup-with-shell off",
           "-ex", "set follow-fork-mode parent", "-ex", "set detach-on-fork on",
           "-ex", "handle SIGTERM nostop noprint pass", "-ex", "catch fork", "-ex", "run",
           "-ex", "python import os; os.kill(gdb.selected_inferior().pid, 15)",
           "-ex", "continue", "--args",
           a.memtrace, "-o", os.path.join(w, "at_fork.db"), "--", "sh", script]
    # Its output is the program's too: an orphan keeps the pipe open until it ends.
    r = subprocess.run(gdb, capture_output=True, text=True, timeout=120)
    check("never signalled" not in r.stdout,
          f"the program got the SIGTERM sent at the fork ({r.stdout.strip()})")
    # Whether the program dies of it before exec or handles it ('term', exit 7).
    handled = "term" in r.stdout.splitlines()
    ended = ("exited with code 07" if handled else "terminated with signal SIGTERM") in r.stdout
    check(ended, f"the launcher ended as the program did ({r.stdout.strip()})")


def case_signal_after_exit(a, w):
    """A signal sent to the launcher after it reaped the program (gdb stops it as its wait
    returns) is passed to no one: the program's pid is free and may already be another
    process's (before: the launcher sent it to that pid). The launcher exits as the program
    did."""
    script = os.path.join(w, "exit5.sh")  # gdb would split an argument at its blanks
    with open(script, "w") as f:
        f.write("exit 5\n")
    gdb = ["gdb", "-q", "-nx", "-batch", "-ex", "set startup-with-shell off",
           "-ex", "set detach-on-fork on", "-ex", "handle SIGTERM nostop noprint pass",
           "-ex", "catch syscall wait4", "-ex", "run", "-ex", "continue",
           "-ex", "python import os; os.kill(gdb.selected_inferior().pid, 15)",
           "-ex", "catch syscall kill", *["-ex", "continue"] * 4,  # kill: called, returned
           "--args", a.memtrace, "-o", os.path.join(w, "after_exit.db"), "--",
           "sh", script]
    r = subprocess.run(gdb, capture_output=True, text=True, timeout=120)
    check("syscall kill" not in r.stdout,
          f"no signal sent once the program was reaped ({r.stdout.strip()})")
    check("exited with code 05" in r.stdout,
          f"the launcher exits 5, as the program ({r.stdout.strip()})")

def case_long_argv(a, w):
    """A program run with thousands of short arguments (xargs, find -exec +) runs as untraced
    and its capture is named and written: the capture's cmdline (JSON, at most 16 KiB) was
    built past the end of its buffer, one ',""' for each argument beyond, over the capture's
    path (the launcher named garbage, the capture was left empty)."""
    argv = [sys.executable, "-c", "import sys; print(len(sys.argv))"] + ["a"] * 8000
    cap = os.path.join(w, "long.db")
    r = traced(a.memtrace, ["-o", cap, "--"] + argv)
    check(r.returncode == 0 and r.stdout == "8001\n", f"exit 0, the 8001 arguments seen: "
          f"{r.returncode}, {r.stdout!r}")
    told = r.stderr.strip().rpartition("memtrace: capture written to ")[2]
    check(r.stderr.count("\n") == 1 and os.path.exists(told) and os.path.samefile(told, cap),
          f"the launcher names the capture: {r.stderr[:200]!r}")
    s = summary(a.memreport, cap)
    check(s is not None and s["status"] == "complete", "the capture is complete")
    r = subprocess.run([a.memreport, "sql", cap, "--csv", "select value from meta where key = "
                        "'cmdline'"], capture_output=True, text=True)
    try:
        cmdline = json.loads(r.stdout.split("\n", 1)[1].strip().strip('"').replace('""', '"'))
    except (ValueError, IndexError):
        cmdline = None
    check(isinstance(cmdline, list) and 3 < len(cmdline) <= len(argv) and
          cmdline[:-1] == argv[:len(cmdline) - 1] and argv[len(cmdline) - 1].startswith(
              cmdline[-1]), f"its cmdline is the arguments' start: {str(cmdline)[:120]}")


def case_foreign_home(a, w):
    """Root with another user's HOME (su without '-', sudo -E) never creates the symbol
    cache's directories in that user's home: a root-owned ~/.cache (mode 0700) took the user's
    own cache directory from every program of theirs. The tracer at exit and memreport naming
    frames both look for the cache there. With its own HOME, root's cache is made as before."""
    if os.geteuid() != 0:
        print("SKIP: needs root, to own a home directory as another user")
        sys.exit(77)
    homes = {}
    for who, uid in (("theirs", 65534), ("ours", 0)):
        homes[who] = os.path.join(w, who)
        os.makedirs(homes[who])
        os.chown(homes[who], uid, uid)
        os.chmod(homes[who], 0o755)
        env = {k: v for k, v in os.environ.items()
               if k not in ("XDG_CACHE_HOME", "MEMTRACE_SYMBOL_CACHE")}
        env["HOME"] = homes[who]
        cap = os.path.join(w, f"{who}.db")
        r = subprocess.run([a.memtrace, "-o", cap, a.prog, "chdir", "/"], capture_output=True,
                           text=True, env=env)
        check(r.returncode == 0, f"{who}: traced run exits 0 ({r.stderr.strip()})")
        if who == "theirs":
            made = os.listdir(homes[who])
            check(made == [], f"the tracer made nothing in the other user's home: {made}")
        deferred = os.path.join(w, f"{who}-deferred.db")
        r = subprocess.run([a.memtrace, "-o", deferred, a.prog, "chdir", "/"],
                           capture_output=True, text=True, env=dict(env, MEMTRACE_SYMBOLIZE="0"))
        r = subprocess.run([a.memreport, "stacks", deferred], capture_output=True, text=True,
                           env=env)
        check(r.returncode == 0, f"{who}: memreport names the frames ({r.stderr.strip()})")
        if who == "theirs":
            made = os.listdir(homes[who])
            check(made == [], f"memreport made nothing in the other user's home: {made}")
    check(os.path.exists(os.path.join(homes["ours"], ".cache", "memtrace", "symbols.db")),
          "root's own home gets its cache")


def case_launcher_killed(a, w):
    """SIGKILL of the launcher's pid (a supervisor or test harness ending what it started),
    which it cannot pass on, ends the program too, as SIGKILL of the program's own pid does
    untraced: it ran on, orphaned, before."""
    p = subprocess.Popen([a.memtrace, "-o", os.path.join(w, "killed.db"), "--", sys.executable,
                          "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(600)"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    children.append(p)
    wait_readable(p.stdout.fileno(), "the program's pid", timeout=60)
    pid = int(p.stdout.readline())
    p.kill()
    p.wait()
    gone = False
    for _ in range(600):  # a bound for a program that never ends, not a timing
        try:
            with open(f"/proc/{pid}/stat") as f:
                gone = f.read().rpartition(")")[2].split()[0] == "Z"
        except FileNotFoundError:
            gone = True
        if gone:
            break
        time.sleep(0.1)
    if not gone:
        os.kill(pid, signal.SIGKILL)
    check(gone, "the program ended with the launcher")


def case_launcher_stderr_pipe(a, w):
    """A launcher whose stderr is a pipe nobody reads (or a file at the size limit) exits as
    the program did: naming the captures at the end raised SIGPIPE (SIGXFSZ), which killed it
    (-13 instead of the program's 5)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    cap = os.path.join(w, "pipe.db")
    try:
        r = subprocess.run([a.memtrace, "-o", cap, "--", sys.executable, "-c",
                            "import sys; sys.exit(5)"], stdout=write_end, stderr=write_end,
                           timeout=120)
    finally:
        os.close(write_end)
    check(r.returncode == 5, f"the launcher exits 5, as the program ({r.returncode})")
    s = summary(a.memreport, cap)
    check(s is not None and s["status"] == "complete", "and its capture is complete")
    # Its stderr a file at the file size limit: SIGXFSZ (-25), likewise.
    log = os.path.join(w, "full.log")
    with open(log, "w") as f:
        f.write("x" * 8192)
    with open(log, "a") as f:
        r = subprocess.run([a.memtrace, "-o", os.path.join(w, "full.db"), "--", sys.executable,
                            "-c", "import sys; sys.exit(5)"], stderr=f, timeout=120,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                                                 (8192, resource.RLIM_INFINITY)))
    check(r.returncode == 5, f"stderr a file at the size limit: exits 5 ({r.returncode})")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    if sys.argv[1:] == ["--list"]:  # tests/tracer.cmake makes a test of each
        print("\n".join(CASES))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for opt, dest in (("--launcher", "memtrace"), ("--lib", "lib"), ("--memreport", "memreport"),
                      ("--prog", "prog"), ("--static-prog", "static_prog"),
                      ("--nopie-prog", "nopie_prog"),
                      ("--workdir", "workdir")):
        ap.add_argument(opt, dest=dest, required=True)
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    w = a.workdir
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    CASES[a.case](a, w)
    print(f"{'0' if failures else '1'} passed, {len(failures) and 1} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
