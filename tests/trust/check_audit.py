#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The trust audit: memtrace and memreport are never turned against their user or the
traced program by what a capture or a process holds.

Usage: check_audit.py --memtrace MEMTRACE --lib LIBMEMTRACE --memreport MEMREPORT
                      --fixture REPORTS_FIXTURE --mmap-fork MMAP_FORK --mmap-fail MMAP_FAIL
                      --crash CRASH --spin-named SPIN_NAMED --workdir DIR CASE
       check_audit.py --list     (the cases, one a line: see each case_ function)
"""
import argparse
import fcntl
import hashlib
import json
import os
import pty
import re
import resource
import shutil
import signal
import stat
import sqlite3
import subprocess
import sys
import termios
import time

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import (bail, check, children, clean_env, failures,  # noqa: E402
                    kill_children, public_copies, wait_for_exit_watchers, wait_readable)

# An OSC 52 clipboard write, a colour change and a C1 CSI: what a crafted name could send
# to the user's terminal.
HOSTILE = "\x1b]52;c;cHduZWQ=\x07\x1b[31m\u009b2J"
HOSTILE_SHOWN = "\\x1b]52;c;cHduZWQ=\\x07\\x1b[31m\\u009b2J"
RAW_CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
TIMEOUT = 120


def fixture(a, w, name):
    cap = os.path.join(w, name)
    subprocess.run([a.fixture, cap], check=True, timeout=TIMEOUT)
    return cap


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def case_messages(a, w):
    """Error messages quoting a crafted capture's names escape them (base/messages.c)."""
    cap = fixture(a, w, "marks.db")
    db = sqlite3.connect(cap)
    db.execute("INSERT INTO mark(heap, kind, name, ts_begin, ts_end) VALUES (1, 'mark', ?, 0, "
               "NULL)", ("phase" + HOSTILE,))
    db.commit()
    db.close()
    for cmd in (["export", cap, "--format", "folded", "--at", "nosuch"],
                ["flamegraph", cap, "--at", "nosuch", "-o", os.path.join(w, "fg.html")],
                ["export", cap, "--format", "folded", "--range", "nosuch"]):
        p = subprocess.run([a.memreport] + cmd, capture_output=True, timeout=TIMEOUT)
        what = " ".join(cmd[:1] + cmd[2:])
        err = p.stderr
        check(p.returncode != 0 and err.startswith(b"memreport: ") and err.count(b"\n") == 1,
              f"{what}: refused on one line ({p.returncode}: {err!r})")
        check(RAW_CONTROL.search(err) is None, f"{what}: no raw control character on stderr")
        check(("phase" + HOSTILE_SHOWN).encode() in err,
              f"{what}: the mark's name shown escaped: {err!r}")


def controlling_terminal():
    """In the child: a session of its own whose controlling terminal (/dev/tty) is its
    stdout, the pseudo-terminal."""
    os.setsid()
    fcntl.ioctl(1, termios.TIOCSCTTY, 0)


def on_terminal(argv):
    """argv's stdout when it is a terminal (a pseudo-terminal read here to the end, also the
    program's /dev/tty), with the terminal's own CRLF line ends back to what the program
    wrote; and its exit code."""
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # no output processing: the bytes as the program wrote them
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    p = subprocess.Popen(argv, stdout=slave, stderr=subprocess.PIPE,
                         preexec_fn=controlling_terminal)
    children.append(p)
    os.close(slave)
    out = b""
    while True:
        wait_readable(master, "the program's output", TIMEOUT)
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the program closed the terminal
            chunk = b""
        if not chunk:
            break
        out += chunk
    os.close(master)
    return out, p.wait(timeout=TIMEOUT)


def case_terminal_formats(a, w):
    """Every format memreport writes to stdout reaches a terminal with control characters
    escaped (base/output.c, escape.h); through a pipe it is the exact data."""
    cap = os.path.join(w, "hostile.db")
    subprocess.run([a.fixture, "--hostile", cap], check=True, timeout=TIMEOUT)
    db = sqlite3.connect(cap)
    db.execute("INSERT INTO mark(heap, kind, name, ts_begin, ts_end) VALUES (1, 'mark', ?, 0, "
               "NULL)", ("phase" + HOSTILE,))
    db.commit()
    db.close()
    for args, raw in ((["export", cap, "--format", "folded"], b"esc\x1b]0"),
                      (["export", cap, "--format", "csv"], ("phase" + HOSTILE).encode()),
                      (["sql", cap, "--csv", "select name from mark"],
                       ("phase" + HOSTILE).encode()),
                      (["sql", cap, "select name from mark"], None),
                      (["stacks", cap], None)):
        what = " ".join(args[:1] + args[2:])
        out, code = on_terminal([a.memreport] + args)
        check(code == 0 and len(out) > 0, f"{what} on a terminal: exit {code}, {len(out)} bytes")
        raw_control = RAW_CONTROL.search(out.replace(b"\r\n", b"\n"))  # CSV's CRLF
        check(raw_control is None, f"{what} on a terminal: no raw control character "
              f"({raw_control})")
        check(("phase" + HOSTILE_SHOWN).encode() in out or b"esc\\x1b]0" in out,
              f"{what} on a terminal: the hostile name shown escaped")
        if raw:
            p = subprocess.run([a.memreport] + args, capture_output=True, timeout=TIMEOUT)
            check(p.returncode == 0 and raw in p.stdout,
                  f"{what} through a pipe: the exact bytes ({raw!r})")


def case_terminal_output_path(a, w):
    """-o naming a terminal (/dev/tty, or /dev/stdout on one) escapes control characters as
    -o - does on a terminal (base/output.c); -o naming a pipe still gets the exact bytes."""
    cap = os.path.join(w, "hostile.db")
    subprocess.run([a.fixture, "--hostile", cap], check=True, timeout=TIMEOUT)
    db = sqlite3.connect(cap)
    db.execute("INSERT INTO mark(heap, kind, name, ts_begin, ts_end) VALUES (1, 'mark', ?, 0, "
               "NULL)", ("phase" + HOSTILE,))
    db.commit()
    db.close()
    for args, raw in ((["export", cap, "--format", "folded"], b"esc\x1b]0"),
                      (["export", cap, "--format", "csv"], ("phase" + HOSTILE).encode()),
                      (["sql", cap, "--csv", "select name from mark"],
                       ("phase" + HOSTILE).encode())):
        for dest in ("/dev/tty", "/dev/stdout", "/proc/self/fd/1"):
            what = " ".join(args[:1] + args[2:] + ["-o", dest])
            out, code = on_terminal([a.memreport] + args + ["-o", dest])
            check(code == 0 and len(out) > 0, f"{what}: exit {code}, {len(out)} bytes")
            raw_control = RAW_CONTROL.search(out.replace(b"\r\n", b"\n"))  # CSV's CRLF
            check(raw_control is None, f"{what} on a terminal: no raw control character "
                  f"({raw_control})")
            check(("phase" + HOSTILE_SHOWN).encode() in out or b"esc\\x1b]0" in out,
                  f"{what} on a terminal: the hostile name shown escaped")
        p = subprocess.run([a.memreport] + args + ["-o", "/dev/stdout"], capture_output=True,
                           timeout=TIMEOUT)
        check(p.returncode == 0 and raw in p.stdout,
              f"{' '.join(args[:1] + args[2:])} -o /dev/stdout through a pipe: the exact "
              f"bytes ({raw!r})")


def case_output_device(a, w):
    """memreport -o naming (through a symlink planted there) a device that is not a terminal
    or /dev/null writes nothing into it, with or without -f (base/output_file.c): written as
    a FIFO is, it would be a disk or /dev/mem for a report run as root."""
    cap = fixture(a, w, "dev.db")
    link = os.path.join(w, "report.txt")
    os.symlink("/dev/zero", link)
    for force in ([], ["-f"]):
        p = subprocess.run([a.memreport, "summary", cap, "-o", link] + force,
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 3 and "is a device" in p.stderr and os.path.islink(link),
              f"-o a symlink to /dev/zero {force}: refused, exit 3, the symlink kept "
              f"({p.returncode}: {p.stderr.strip()})")
    p = subprocess.run([a.memreport, "summary", cap, "-o", "/dev/null"], capture_output=True,
                       text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"-o /dev/null still works ({p.returncode}: {p.stderr.strip()})")


def refuses_fifo(a, args, what, env=None):
    """memreport args ends at once (a hang fails the test: the driver's timeout), refusing
    the FIFO with `memreport: FILE: not a regular file` (common/input.c)."""
    try:
        p = subprocess.run([a.memreport] + args, capture_output=True, text=True, env=env,
                           timeout=60)
    except subprocess.TimeoutExpired:
        check(False, f"{what}: memreport {' '.join(args)} still waiting after 60 s")
        return None
    check(p.returncode == 2 and "not a regular file" in p.stderr and
          p.stderr.count("\n") == 1, f"{what}: refused, exit 2, one line "
          f"({p.returncode}: {p.stderr.strip()})")
    return p


def case_fifo_inputs(a, w):
    """A FIFO where memreport reads a file never blocks it: as the capture, as a *.db of a
    capture directory, beside a capture as its -wal, as an NPU log, a suppressions file, or
    as a binary a capture's mappings name (symbolizing opens them): an open of a FIFO would
    wait for a writer forever."""
    fifo = os.path.join(w, "fifo.db")
    os.mkfifo(fifo)
    for args in (["summary", fifo], ["sql", fifo, "select 1"], ["stacks", fifo],
                 ["plot", fifo, "-o", os.path.join(w, "p.png")],
                 ["import", fifo, "-o", os.path.join(w, "i.db")]):
        refuses_fifo(a, args, f"the capture is a FIFO ({args[0]})")
    d = os.path.join(w, "tree")
    os.makedirs(d)
    fixture(a, d, "a.db")
    os.mkfifo(os.path.join(d, "b.db"))
    p = refuses_fifo(a, ["summary", d], "a FIFO named *.db in a capture directory")
    check(p is None or os.path.join(d, "b.db") in p.stderr, "the FIFO is named")
    cap = fixture(a, w, "wal.db")
    os.mkfifo(cap + "-wal")
    refuses_fifo(a, ["summary", cap], "a FIFO as the capture's -wal")
    cap = fixture(a, w, "supp.db")
    refuses_fifo(a, ["leaks", cap, "--suppressions", fifo], "a FIFO as suppressions")
    # A capture whose frames are named by memreport, its mappings all naming the FIFO.
    cap = os.path.join(w, "mapped.db")
    env = clean_env(SYMBOLIZE="0", SYMBOL_CACHE="0")
    subprocess.run([a.memtrace, "-o", cap, "--", "ls", w], env=env, check=True,
                   capture_output=True, timeout=TIMEOUT)
    db = sqlite3.connect(cap)
    db.execute("UPDATE mapping SET path = ?", (fifo,))
    unnamed = db.execute("SELECT count(*) FROM frame WHERE function IS NULL").fetchone()[0]
    db.commit()
    db.close()
    check(unnamed > 0, f"the capture's frames are left for memreport to name ({unnamed})")
    try:
        p = subprocess.run([a.memreport, "stacks", cap], capture_output=True, text=True,
                           env=env, timeout=60)
        check(p.returncode == 0, f"mappings naming a FIFO: the report, frames unnamed "
              f"({p.returncode}: {p.stderr.strip()})")
    except subprocess.TimeoutExpired:
        check(False, "mappings naming a FIFO: memreport still waiting after 60 s")


def case_sql_unfinished(a, w):
    """memreport sql on a capture whose program was killed (its -wal beside it) reads it and
    leaves the files as they were, with no -shm created beside them and the -wal kept
    (common/sql.c). Five programs, killed at different points of their commits, each after
    its exit watcher, which would otherwise finish the capture."""
    for n in range(5):
        cap = os.path.join(w, f"killed{n}.db")
        env = dict(os.environ, LD_PRELOAD=a.lib, MEMTRACE_OUTPUT=cap)
        prog = subprocess.Popen(["cat"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                start_new_session=True)
        children.append(prog)
        prog.stdin.write(b"line\n")
        prog.stdin.flush()
        read_until(prog.stdout.fileno(), b"line\n")
        # The tracer opens the capture's -wal as it starts; polled (no timing is asserted).
        for _ in range(600):
            if os.path.exists(cap + "-wal"):
                break
            time.sleep(0.1)
        watchers = wait_for_exit_watchers(cap)
        check(len(watchers) == 1, f"{n}: one exit watcher ({watchers})")
        for pid in watchers:
            os.kill(pid, signal.SIGKILL)
        os.killpg(prog.pid, signal.SIGKILL)
        prog.wait()
        check(os.path.exists(cap + "-wal"), f"{n}: the killed program left its capture "
              f"unfinished")
        before = {f: digest(os.path.join(w, f)) for f in sorted(os.listdir(w))}
        p = subprocess.run([a.memreport, "sql", cap, "--csv", "select value from meta where "
                            "key = 'capture_status'"], capture_output=True, text=True,
                           timeout=TIMEOUT)
        check(p.returncode == 0 and p.stdout.split() == ["value", "recording"],
              f"{n}: it is read: {p.stdout!r} {p.stderr.strip()}")
        after = {f: digest(os.path.join(w, f)) for f in sorted(os.listdir(w))}
        check(after == before, f"{n}: the files are as they were, none added or removed: "
              f"{sorted(after)} (before: {sorted(before)})")


def case_sql_files(a, w):
    """memreport sql reads: VACUUM INTO and ATTACH can write no file (common/sql.c)."""
    cap = fixture(a, w, "sql.db")
    before = digest(cap)
    made = os.path.join(w, "made.db")
    empty = os.path.join(w, "empty.db")
    open(empty, "w").close()
    for q in (f"VACUUM INTO '{made}'", f"VACUUM INTO '{empty}'",
              f"ATTACH '{made}' AS x", f"ATTACH 'file:{made}?mode=rwc' AS x",
              f"ATTACH '{cap}' AS x"):
        p = subprocess.run([a.memreport, "sql", cap, q], capture_output=True, text=True,
                           timeout=TIMEOUT)
        check(p.returncode == 2 and "SQL error" in p.stderr and p.stderr.count("\n") == 1,
              f"refused: {q} ({p.returncode}: {p.stderr.strip()})")
    check(not os.path.exists(made), "no file made")
    check(os.path.getsize(empty) == 0, "the empty file is left empty")
    check(digest(cap) == before, "the capture is unchanged")
    p = subprocess.run([a.memreport, "sql", cap, "--csv",
                        "select count(*) > 0 as n from events; select count(*) > 0 as n from stacks"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout.split() == ["n", "1", "n", "1"],
          f"reading still works: {p.stdout!r} {p.stderr.strip()}")


def case_sql_safe(a, w):
    """memreport sql only reads (common/sql.c): what `sqlite3 --safe` refuses (its shell's
    functions, load_extension, fts3_tokenizer with one argument, which gives an address in
    libsqlite3, and two, which registered a tokenizer at any address that the next fts3 table
    called: SIGSEGV), virtual tables of any module, temporary tables, settings; SQLite's
    own functions, table-valued ones and schema pragmas still work."""
    cap = fixture(a, w, "safe.db")
    before = digest(cap)
    refused = [
        "select fts3_tokenizer('simple')",
        "select hex(fts3_tokenizer('simple'))",
        "select fts3_tokenizer('evil', x'4141414141414141')",
        "select fts3_tokenizer('evil', x'4141414141414141'); "
        "create virtual table temp.t using fts3(x, tokenize=evil)",
        "select load_extension('/nonexistent/lib.so')",
        "select load_extension('/nonexistent/lib.so', 'entry')",
        "select readfile('/etc/passwd')", "select writefile('%s', 'x')" % os.path.join(w, "wf"),
        "select edit('x')", "select edit('x', 'vi')", "select zipfile('a', 'b')",
        "select * from zipfile('%s')" % cap, "select sqlite_compileoption_get(0)",
        "create virtual table temp.t using fts3(x)", "create virtual table temp.t using fts4(x)",
        "create virtual table temp.t using fts5(x)",
        "create virtual table temp.r using rtree(id, x0, x1)",
        "create virtual table temp.e using events",
        "create temp table t(x)", "create temp view v as select 1",
        "create temp trigger tr after insert on meta begin select 1; end",
        "pragma writable_schema = 1", "pragma user_version = 7", "pragma temp_store_directory = '/'",
        "select * from pragma_writable_schema", "pragma journal_mode = delete",
        "begin", "savepoint s", "analyze", "reindex", "vacuum",
        "attach '%s' as x" % os.path.join(w, "made.db"), "detach main",
        "update sqlite_master set sql = ''", "delete from meta", "insert into meta values (1, 2)",
    ]
    for q in refused:
        p = subprocess.run([a.memreport, "sql", cap, q], capture_output=True, text=True,
                           timeout=TIMEOUT)
        check(p.returncode == 2 and "SQL error" in p.stderr and p.stderr.count("\n") == 1 and
              p.stdout == "", f"refused: {q} ({p.returncode}: {p.stderr.strip()})")
    check(not os.path.exists(os.path.join(w, "made.db")) and
          not os.path.exists(os.path.join(w, "wf")), "no file made")
    check(digest(cap) == before, "the capture is unchanged")
    allowed = [
        ("select abs(-2), printf('%d', 3), upper('a'), 'abc' like 'a%', iif(1, 4, 5),"
         " coalesce(null, 6), round(sqrt(49)), json_extract('{\"a\": 8}', '$.a'),"
         " '{\"b\": 9}' ->> 'b', date('2024-01-02') = '2024-01-02'",
         ["2", "3", "A", "1", "4", "6", "7.0", "8", "9", "1"]),
        ("select count(*) from json_each('[1, 2, 3]')", ["3"]),
        ("with recursive r(x) as (select 1 union all select x + 1 from r where x < 10)"
         " select sum(x) from r", ["55"]),
        ("select count(*) from pragma_table_info('meta')", ["2"]),
        ("select group_concat(x, '-') from (select row_number() over () as x from meta"
         " limit 2)", ["1-2"]),
        ("pragma user_version", None),
    ]
    for q, want in allowed:
        p = subprocess.run([a.memreport, "sql", cap, "--csv", q], capture_output=True,
                           text=True, timeout=TIMEOUT)
        rows = p.stdout.splitlines()
        got = rows[1].split(",") if len(rows) > 1 else None
        check(p.returncode == 0 and (want is None or got == want),
              f"allowed: {q}: {got} ({p.returncode}: {p.stderr.strip()})")


def case_sql_limits(a, w):
    """memreport sql bounds each statement: an endless recursive query stops at --timeout
    (exit 2), one that would take all memory at --max-memory (exit 3), each with a message
    naming the option; a query within both runs."""
    cap = fixture(a, w, "limits.db")
    endless = "with recursive r(x) as (select 1 union all select x + 1 from r) select count(*) from r"
    p = subprocess.run([a.memreport, "sql", cap, "--timeout", "1", endless],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 2 and p.stderr == f"memreport: {cap}: query stopped after 1 s "
          "(--timeout)\n" and p.stdout == "",
          f"an endless query stops (--timeout 1): {p.returncode}: {p.stderr.strip()}")
    # Within a script on stdin too: the statement after it does not run.
    p = subprocess.run([a.memreport, "sql", cap, "--timeout", "1", "--csv"],
                       input=endless + ";\nselect 42;\n", capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 2 and "query stopped after 1 s (--timeout)" in p.stderr and
          "42" not in p.stdout, f"in a script: {p.returncode}: {p.stderr.strip()}")
    hungry = ("select length(group_concat(hex(zeroblob(500000)))) as n from (with recursive"
              " r(x) as (select 1 union all select x + 1 from r where x < 100) select x from r)")
    p = subprocess.run([a.memreport, "sql", cap, "--max-memory", "32", hungry],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 3 and p.stderr.startswith(f"memreport: {cap}: query stopped: out of "
                                                    "memory") and "--max-memory" in p.stderr,
          f"a query past --max-memory 32 stops: {p.returncode}: {p.stderr.strip()}")
    p = subprocess.run([a.memreport, "sql", cap, "--csv", "--max-memory", "512", hungry],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout.split() == ["n", "100000099"],
          f"the same query under --max-memory 512 runs: {p.returncode}: {p.stderr.strip()}")
    for opt, bad in (("--timeout", "x"), ("--timeout", "-1"), ("--max-memory", "1.5")):
        p = subprocess.run([a.memreport, "sql", cap, opt, bad, "select 1"],
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 1 and opt in p.stderr, f"{opt} {bad}: usage error "
              f"({p.returncode}: {p.stderr.splitlines()[:1]})")


# glibc's own signals (SIGCANCEL 32, SIGSETXID 33): it handles them once a thread exists,
# and refuses them to the program's sigaction, so the program cannot tell.
GLIBC_SIGNALS = (1 << 31) | (1 << 32)


def process_state(pid, high_base):
    """The descriptors below the tracer's (fdguard.c: min(soft limit, 1024) - 48) with what
    they name, and the signals handled, ignored and blocked."""
    fds = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        if int(fd) < high_base:
            try:
                fds[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                pass
    sig = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("SigCgt", "SigIgn", "SigBlk"):
                sig[key] = int(value, 16) & ~GLIBC_SIGNALS
    return fds, sig


def read_until(fd, text, got=b""):
    while text not in got:
        wait_readable(fd, f"{text!r}", TIMEOUT)
        chunk = os.read(fd, 4096)
        if not chunk:
            return got
        got += chunk
    return got


def case_attach_fds(a, w):
    """memtrace --pid then --detach leaves the process's descriptors and signals as they were,
    and takes none of its low descriptors while attached (preload/hooks/attach.c)."""
    if shutil.which("gdb") is None:
        print("SKIP: gdb (the Debian package gdb) is not installed")
        sys.exit(77)
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    high_base = min(soft, 1024) - 48
    # cat: a program blocked in read(2) until the test writes, which echoes what it reads.
    prog = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    children.append(prog)
    prog.stdin.write(b"before\n")
    prog.stdin.flush()
    read_until(prog.stdout.fileno(), b"before\n")
    fds0, sig0 = process_state(prog.pid, high_base)
    cap = os.path.join(w, "attached.db")
    launcher = subprocess.Popen([a.memtrace, "--pid", str(prog.pid), "-o", cap],
                                stderr=subprocess.PIPE)
    children.append(launcher)
    err = read_until(launcher.stderr.fileno(), b"attached to process")
    if b"ptrace is not permitted" in err:
        kill_children()
        print(f"SKIP: ptrace not permitted here: {err.decode().strip()}")
        sys.exit(77)
    if b"attached to process" not in err:
        bail(f"the launcher did not attach: {err.decode()}")
    fds1, sig1 = process_state(prog.pid, high_base)
    check(fds1 == fds0, f"attached: the low descriptors are the program's own: {fds1} "
          f"(before: {fds0})")
    d = subprocess.run([a.memtrace, "--detach", str(prog.pid)], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(d.returncode == 0, f"--detach exits 0 ({d.returncode}: {d.stderr.strip()})")
    try:
        code = launcher.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        bail("the launcher did not exit after the detach")
    check(code == 0, f"the launcher exits 0 ({code})")
    fds2, sig2 = process_state(prog.pid, high_base)
    check(fds2 == fds0, f"detached: descriptors as before: {fds2} (before: {fds0})")
    check(sig2 == sig0, f"detached: signal dispositions and mask as before: {sig2} "
          f"(before: {sig0})")
    out, _ = prog.communicate(b"after\n", timeout=TIMEOUT)
    check(out == b"after\n" and prog.returncode == 0,
          f"the program goes on unchanged: {out!r}, exit {prog.returncode}")
    s = subprocess.run([a.memreport, "summary", cap], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(s.returncode == 0 and "(complete)" in s.stdout, f"the capture is complete: "
          f"{s.stdout.splitlines()[:1]} {s.stderr.strip()}")


def case_mmap_fork(a, w):
    """MEMTRACE_MMAP=1: a fork while another thread is inside mmap leaves the child able to
    map memory (preload/record/mmap_track.c: the table's lock belonged to a thread the child does
    not have, and its first mmap waited forever); every child's capture is exact."""
    out = os.path.join(w, "caps") + "/"
    # No symbols: 201 processes each naming libc at exit would take most of the run.
    env = dict(os.environ, MEMTRACE_MMAP="1", MEMTRACE_SYMBOLIZE="0")
    # In a session of its own, so a hung run is killed whole: launcher, program, children.
    p = subprocess.Popen([a.memtrace, "-o", out, "--", a.mmap_fork], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        said, _ = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        check(False, f"the program ends (it hung for {TIMEOUT} s: a child waits on a lock)")
        return
    check(p.returncode == 0 and said == f"forks ok {FORKS}\n",
          f"every child mapped and exited 0: {p.returncode} {said.strip()!r}")
    kinds = {"child": 0, "parent": 0, "other": []}
    r = subprocess.run([a.memreport, "summary", "--json", "--heap", "mmap", out],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(r.returncode == 0, f"memreport summary DIR reads them ({r.stderr.strip()})")
    for s in json.loads(r.stdout).get("processes", []) if r.returncode == 0 else []:
        got = (s.get("status"), s.get("allocations"), s.get("frees"),
               s.get("bytes_allocated"), s.get("leaked_bytes"))
        if got == ("complete", 1, 1, 4096, 0):
            kinds["child"] += 1
        elif got[0] == "complete" and got[1] and got[1] == got[2] and got[4] == 0:
            kinds["parent"] += 1
        else:
            kinds["other"].append((s.get("capture"), got))
    check(kinds["child"] == FORKS, f"{FORKS} child captures of one 4 KiB mapping, mapped and "
          f"unmapped: {kinds['child']}")
    check(kinds["parent"] == 1 and not kinds["other"], f"one parent capture, every mapping "
          f"unmapped; no other: {kinds['parent']} {kinds['other'][:3]}")


def skip_unless_root_with(*tools):
    """Exits 77 (skipped) unless root, to run a process as another user, and the tools exist."""
    if os.geteuid() != 0:
        print("SKIP: needs root, to run a process as another user")
        sys.exit(77)
    for tool in tools:
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} is not installed")
            sys.exit(77)


def case_attach_other_user(a, w):
    """Root attaching to another user's process that cannot create the capture: the launcher
    says why, and nothing is written to the process's stderr (core_lifecycle.c wrote
    "memtrace: ...; the program continues untraced" there, a daemon's log)."""
    skip_unless_root_with("gdb", "setpriv")
    # The process dlopens the library: a copy it reaches, beside the launcher, in a
    # directory it cannot write.
    w, launcher, _ = public_copies(a.memtrace, a.lib)
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    high_base = min(soft, 1024) - 48
    prog = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             "cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    children.append(prog)
    prog.stdin.write(b"before\n")
    prog.stdin.flush()
    read_until(prog.stdout.fileno(), b"before\n")  # setpriv has exec'd cat
    fds0, sig0 = process_state(prog.pid, high_base)
    cap = os.path.join(w, "other.db")
    r = subprocess.run([launcher, "--pid", str(prog.pid), "-o", cap], capture_output=True,
                       text=True, timeout=TIMEOUT)
    check(r.returncode == 1 and r.stderr.count("\n") == 1 and cap in r.stderr and
          "Permission denied" in r.stderr, f"the launcher says why: {r.stderr.strip()!r}")
    check(not os.path.exists(cap), "no capture")
    fds1, sig1 = process_state(prog.pid, high_base)
    check(fds1 == fds0 and sig1 == sig0, f"descriptors and signals as before: {fds1} {sig1} "
          f"(before: {fds0} {sig0})")
    out, err = prog.communicate(b"after\n", timeout=TIMEOUT)
    check(out == b"after\n" and prog.returncode == 0, f"the program goes on: {out!r}, exit "
          f"{prog.returncode}")
    check(err == b"", f"nothing written to the program's stderr: {err!r}")


def attach_and_end(launcher, prog, cap, detach=False):
    """memtrace --pid on prog (a cat) into cap; once attached, --detach (detach) or the
    program's end. The launcher's stderr, the program's output and exit status."""
    lp = subprocess.Popen([launcher, "--pid", str(prog.pid), "-o", cap], stderr=subprocess.PIPE)
    children.append(lp)
    said = read_until(lp.stderr.fileno(), b"attached to process")
    if b"attached to process" not in said:
        bail(f"the launcher did not attach: {said.decode()}")
    if detach:
        d = subprocess.run([launcher, "--detach", str(prog.pid)], capture_output=True,
                           text=True, timeout=TIMEOUT)
        check(d.returncode == 0, f"--detach exits 0 ({d.returncode}: {d.stderr.strip()})")
        try:
            code = lp.wait(timeout=TIMEOUT)  # before the program ends: it heard the detach
        except subprocess.TimeoutExpired:
            code = "still waiting"
        check(code == 0, f"the waiting launcher sees the detach and exits 0 ({code})")
    out, _ = prog.communicate(b"after\n", timeout=TIMEOUT)
    _, rest = lp.communicate(timeout=TIMEOUT)
    return (said + rest).decode(), out, prog.returncode


def case_attach_other_user_named(a, w):
    """Root attaching to another user's process names the capture at the end, as for a run
    of its own: the process could not write the launcher's report file (root's, 0600), so
    the capture (0600, the process's user's) was written and never named, and a --detach
    from elsewhere was not heard."""
    skip_unless_root_with("gdb", "setpriv")
    w, launcher, _ = public_copies(a.memtrace, a.lib)
    theirs = os.path.join(w, "theirs")
    os.makedirs(theirs)
    os.chown(theirs, 65534, 65534)
    prog = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             "cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    children.append(prog)
    prog.stdin.write(b"before\n")
    prog.stdin.flush()
    read_until(prog.stdout.fileno(), b"before\n")  # setpriv has exec'd cat
    cap = os.path.join(theirs, "cap.db")
    err, out, code = attach_and_end(launcher, prog, cap, detach=True)
    check(f"memtrace: capture written to {cap}\n" in err, f"the launcher names it: {err!r}")
    st = os.stat(cap)
    check(st.st_uid == 65534 and stat.S_IMODE(st.st_mode) == 0o600,
          f"the capture is the process's user's, 0600 ({st.st_uid}, {oct(st.st_mode)})")
    check(out == b"after\n" and code == 0, f"the program goes on: {out!r}, exit {code}")


def case_attach_mount_namespace(a, w):
    """A process with a mount namespace of its own writes its capture into that namespace's
    filesystem (here a tmpfs of its own, gone with it): the launcher says so, where, and how
    to reach it from here while it runs, at the attach, and at the end that it went with the
    namespace. Nothing was said."""
    skip_unless_root_with("gdb", "unshare")
    theirs = os.path.join(w, "theirs")
    os.makedirs(theirs)
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP: unshare -m is refused here: {probe.stderr.strip()}")
        sys.exit(77)
    prog = subprocess.Popen(["unshare", "-m", "sh", "-c",
                             f"mount -t tmpfs none {theirs} && echo mounted && exec cat"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    children.append(prog)
    read_until(prog.stdout.fileno(), b"mounted\n")
    prog.stdin.write(b"before\n")
    prog.stdin.flush()
    read_until(prog.stdout.fileno(), b"before\n")  # the shell has exec'd cat
    cap = os.path.join(theirs, "cap.db")
    err, out, code = attach_and_end(a.memtrace, prog, cap)
    pid = prog.pid
    check(f"process {pid} has a mount namespace of its own: its capture {cap} is in that "
          f"namespace's filesystem (from here /proc/{pid}/root{cap}, while it runs)" in err,
          f"said at the attach: {err!r}")
    check(f"memtrace: capture written to {cap} in process {pid}'s mount namespace, which ended "
          f"with it: not reachable from here" in err, f"and at the end: {err!r}")
    check(not os.path.exists(cap), "not in this namespace's filesystem")
    check(out == b"after\n" and code == 0, f"the program goes on: {out!r}, exit {code}")


def case_attach_zombie(a, w):
    """--pid and --detach of a zombie say it is one: gdb's "ptrace: Operation not permitted"
    made the launcher tell root that it needed root."""
    if shutil.which("gdb") is None:
        print("SKIP: gdb (the Debian package gdb) is not installed")
        sys.exit(77)
    z = subprocess.Popen(["true"])
    children.append(z)
    for _ in range(1200):  # exited, not reaped: a zombie until z.wait()
        with open(f"/proc/{z.pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.05)
    for how in ("--pid", "--detach"):
        r = subprocess.run([a.memtrace, how, str(z.pid)], capture_output=True, text=True,
                           timeout=TIMEOUT)
        check(r.returncode == 1 and f"process {z.pid} is a zombie" in r.stderr and
              "not permitted" not in r.stderr, f"{how}: says it is a zombie ({r.returncode}: "
              f"{r.stderr.strip()!r})")
    z.wait()


def case_signal_fault(a, w):
    """MEMTRACE_SIGNAL naming a fault or another signal with a meaning of its own is not taken
    (preload/config.c): with MEMTRACE_SIGNAL=11 a segmentation fault returned from the toggle
    handler to the faulting instruction, forever, and raise(SIGSEGV) did not end the program."""
    for how in ("s", "k"):
        for sig in ("11",):
            env = dict(os.environ, LD_PRELOAD=a.lib, MEMTRACE_SIGNAL=sig,
                       MEMTRACE_OUTPUT=os.path.join(w, f"{how}{sig}.db"), MEMTRACE_SYMBOLIZE="0")
            p = subprocess.Popen([a.crash, how], env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                code = p.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                code = f"hung for {TIMEOUT} s"
                p.wait()
            check(code == -signal.SIGSEGV, f"crash {how}, MEMTRACE_SIGNAL={sig}: killed by "
                  f"SIGSEGV as untraced ({code})")


def case_argv0_name(a, w):
    """The default capture name takes the program's name as DIR/ does, [A-Za-z0-9._+-] only
    (preload/config.c): an argv[0] of escape sequences made a file name holding them."""
    env = dict(os.environ, LD_PRELOAD=a.lib, MEMTRACE_SYMBOLIZE="0")
    env.pop("MEMTRACE_OUTPUT", None)
    p = subprocess.run(["\x1b]0;pwn\x07\x1b[2Jx y"], executable=shutil.which("cat"), env=env,
                       cwd=w, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)
    names = os.listdir(w)
    check(p.returncode == 0 and len(names) == 1, f"one capture: {names} ({p.returncode})")
    check(all(re.fullmatch(r"[A-Za-z0-9._+-]+", n) for n in names),
          f"its name is made of [A-Za-z0-9._+-]: {names}")


def case_attach_gdb_words(a, w):
    """memtrace --pid showing gdb's output (a failed attach) escapes what the process named:
    its function "\\e]0;pwned\\a\\e[41mspin" reached the terminal raw (launcher_attach.c).
    The attach fails because the process (user nobody) cannot read libmemtrace.so, which is
    copied with the launcher into a directory of root's only."""
    skip_unless_root_with("gdb", "setpriv")
    private = os.path.join(w, "private")
    os.makedirs(private, mode=0o700)
    os.chmod(private, 0o700)
    launcher = os.path.join(private, "memtrace")
    shutil.copy(a.memtrace, launcher)
    shutil.copy(a.lib, os.path.join(private, os.path.basename(a.lib)))
    prog = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             a.spin_named], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children.append(prog)
    try:
        # setpriv exec's the program: attached once /proc names it.
        for _ in range(600):
            with open(f"/proc/{prog.pid}/cmdline", "rb") as f:
                if f.read().startswith(a.spin_named.encode()):
                    break
            time.sleep(0.1)
        r = subprocess.run([launcher, "--pid", str(prog.pid), "-o", os.path.join(w, "x.db")],
                           capture_output=True, timeout=TIMEOUT)
    finally:
        kill_children()
    err = r.stderr
    check(r.returncode == 1 and b"gdb failed" in err, f"the attach fails, gdb's words shown "
          f"({r.returncode}: {err[:300]!r})")
    check(RAW_CONTROL.search(err.replace(b"\n", b" ").replace(b"\t", b" ")) is None,
          f"no raw control character: {err[:300]!r}")
    check(b"\\x1b]0;pwned\\x07\\x1b[41mspin" in err, "the function's name shown escaped")


def case_mmap_refused(a, w):
    """MEMTRACE_MMAP=1: mmap, mremap and munmap calls the kernel refuses change no mapping,
    so the capture shows none of them (preload/record/mmap_track.c recorded each as done)."""
    cap = os.path.join(w, "refused.db")
    env = dict(os.environ, MEMTRACE_MMAP="1", MEMTRACE_SYMBOLIZE="0")
    p = subprocess.run([a.memtrace, "-o", cap, "--", a.mmap_fail], capture_output=True,
                       text=True, env=env, timeout=TIMEOUT)
    untraced = subprocess.run([a.mmap_fail], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout == "refused 3\n" and untraced.stdout == p.stdout,
          f"the three calls refused, the mappings kept, as untraced: {p.stdout.strip()!r} "
          f"({untraced.stdout.strip()!r})")
    r = subprocess.run([a.memreport, "summary", "--json", "--heap", "mmap", cap],
                       capture_output=True, text=True, timeout=TIMEOUT)
    s = json.loads(r.stdout) if r.returncode == 0 else {}
    page = os.sysconf("SC_PAGE_SIZE")
    got = (s.get("allocations"), s.get("frees"), s.get("bytes_allocated"), s.get("peak_bytes"),
           s.get("leaked_bytes"))
    check(got == (2, 2, 4 * page, 4 * page, 0), f"the mmap heap: 2 mappings of 3 and 1 pages, "
          f"both unmapped (allocations, frees, bytes, peak, leaked): {got}")


FORKS = 200  # mmap_fork.c
CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    if sys.argv[1:] == ["--list"]:  # tests/trust.cmake makes a test of each
        print("\n".join(CASES))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for opt in ("--memtrace", "--lib", "--memreport", "--fixture", "--mmap-fork", "--mmap-fail",
                "--crash", "--spin-named", "--workdir"):
        ap.add_argument(opt, required=True)
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    w = a.workdir
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    try:
        CASES[a.case](a, w)
    finally:
        kill_children()
    print(f"{len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
