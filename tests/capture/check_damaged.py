#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""memreport against damaged and unfinished captures of a real traced program.

flips     bits flipped inside event chunks (their data and their columns): every one is
          reported as `memreport: FILE: event chunk N is corrupt (checksum mismatch)`, exit 2;
          a callsite table with a cycle is an error too.
corpus    truncations at many offsets and random byte overwrites (fixed seed): every run
          exits 2 (or 3 for I/O) with exactly one line `memreport: FILE: ...` on stderr and
          no output file, or exits 0 with exactly the events of the intact capture.
diskfull_tmpfs, diskfull_rlimit
          the program traced onto a small full filesystem (a tmpfs in a private mount
          namespace; exit 77, skipped, where mounting is not permitted) or under
          RLIMIT_FSIZE: memreport reads what was left (main file and -wal) without
          changing it, reports it as truncated, and its numbers add up.
"""
import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check_quietly as check, failures, old_layout  # noqa: E402

TIMEOUT = 120


def trace(args, out, prog_args, **kw):
    """Runs the test program under the tracer, writing capture `out`."""
    env = dict(os.environ, MEMTRACE_SYMBOL_CACHE="0")
    return subprocess.run([args.launcher, "-o", out, "--", args.prog] + prog_args,
                          capture_output=True, env=env, timeout=TIMEOUT, **kw)


def memreport(args, *argv):
    r = subprocess.run([args.memreport] + list(argv), capture_output=True, timeout=TIMEOUT)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def good_capture(args, d):
    path = os.path.join(d, "good.db")
    r = trace(args, path, ["4", "20000", "0"])
    if not check(r.returncode == 0 and os.path.exists(path),
                 f"tracing failed: {r.returncode} {r.stderr[-500:]!r}"):
        sys.exit(1)
    return path


def event_numbers(summary):
    keys = ("events", "allocations", "frees", "unmatched_frees", "bytes_allocated",
            "peak_bytes", "leaked_bytes", "leaked_allocations")
    return {k: summary.get(k) for k in keys}


def expect_error(args, path, words, label, out_dir):
    """Runs summary and leaks on path: exit 2 or 3, one line naming the file, no output."""
    for cmd in ("summary", "leaks"):
        out = os.path.join(out_dir, f"out.{cmd}.json")
        rc, stdout, err = memreport(args, cmd, path, "--json", "-o", out)
        lines = err.splitlines()
        check(rc in (2, 3), f"{label} ({cmd}): exit status {rc}: {err.strip()!r}")
        check(len(lines) == 1, f"{label} ({cmd}): {len(lines)} lines on stderr: {err!r}")
        check(err.startswith(f"memreport: {path}: "),
              f"{label} ({cmd}): message does not name the file: {err!r}")
        check("***" not in err, f"{label} ({cmd}): SQLite's raw report, not words: {err!r}")
        check(not words or any(w in err for w in words),
              f"{label} ({cmd}): {err.strip()!r} says none of {words}")
        check(not os.path.exists(out), f"{label} ({cmd}): an output file was written")
        check(not [f for f in os.listdir(out_dir) if f.startswith("out.")],
              f"{label} ({cmd}): a temporary output file was left")


def altered(good, p, sql):
    """A copy p of capture good, changed by one statement (?1: the first callsite chunk)."""
    shutil.copyfile(good, p)
    db = sqlite3.connect(p)
    cid = db.execute("SELECT min(id) FROM callsite_chunk").fetchone()[0]
    db.execute(sql, (cid,) if "?1" in sql else ())
    db.commit()
    db.close()
    return p


# ---- flips

def case_flips(args, d):
    good = good_capture(args, d)
    rnd = random.Random(1414)
    db = sqlite3.connect(good)
    ids = [r[0] for r in db.execute("SELECT id FROM event_chunk ORDER BY id")]
    db.close()
    check(len(ids) >= 4, f"only {len(ids)} chunks")
    columns = ["seq_first", "seq_last", "ts_first", "ts_last", "count"]
    flips = 60
    for f in range(flips):
        p = os.path.join(d, "flip.db")
        shutil.copyfile(good, p)
        db = sqlite3.connect(p)
        cid = rnd.choice(ids)
        if f % 4 == 3:
            col = rnd.choice(columns)
            bit = 1 << rnd.randrange(40)
            db.execute(f"UPDATE event_chunk SET {col} = ({col} | ?1) - ({col} & ?1)"
                       " WHERE id = ?2", (bit, cid))
            what = f"bit {bit:#x} of {col}"
        else:
            data = bytearray(db.execute("SELECT data FROM event_chunk WHERE id=?",
                                        (cid,)).fetchone()[0])
            i = rnd.randrange(len(data))
            data[i] ^= 1 << rnd.randrange(8)
            db.execute("UPDATE event_chunk SET data=? WHERE id=?", (bytes(data), cid))
            what = f"byte {i} of {len(data)}"
        db.commit()
        db.close()
        want = f"memreport: {p}: event chunk {cid} is corrupt (checksum mismatch)\n"
        rc, out, err = memreport(args, "summary", p, "--json")
        check(rc == 2 and err == want,
              f"flip {f} ({what}, chunk {cid}): exit {rc}, stderr {err!r}, want {want!r}")
    print(f"{flips} flips checked")

    # A byte of a callsite chunk flipped (schema 6): refused, in words.
    p = os.path.join(d, "sites.db")
    shutil.copyfile(good, p)
    db = sqlite3.connect(p)
    cid, data = db.execute("SELECT id, data FROM callsite_chunk ORDER BY id LIMIT 1").fetchone()
    data = bytearray(data)
    data[len(data) // 2] ^= 0x10
    db.execute("UPDATE callsite_chunk SET data=? WHERE id=?", (bytes(data), cid))
    db.commit()
    db.close()
    rc, out, err = memreport(args, "summary", p)
    want = f"memreport: {p}: callsite chunk {cid} is corrupt (checksum mismatch)\n"
    check(rc == 2 and err == want, f"callsite chunk flipped: exit {rc}, stderr {err!r}")

    # Callsite chunks a hostile author wrote: each one refused in words, exit 2.
    hostile = [
        ("huge count", "UPDATE callsite_chunk SET count = 1000000000000 WHERE id = ?1",
         "impossible count"),
        ("negative count", "UPDATE callsite_chunk SET count = -5 WHERE id = ?1",
         "impossible count"),
        ("count off by one", "UPDATE callsite_chunk SET count = count + 1 WHERE id = ?1",
         "checksum mismatch"),
        ("data shorter than its checksum", "UPDATE callsite_chunk SET data = x'0102' WHERE id = ?1",
         "do not decode"),
        ("data cut", "UPDATE callsite_chunk SET data = substr(data, 1, 10) WHERE id = ?1",
         "checksum mismatch"),
        ("data as text", "UPDATE callsite_chunk SET data = 'not a frame' WHERE id = ?1",
         "checksum mismatch"),
    ]
    for label, sql, words in hostile:
        p = altered(good, os.path.join(d, "hostile.db"), sql)
        expect_error(args, p, [words], f"callsite chunk: {label}", d)

    # A callsite id no 32-bit table holds (rows of table callsite still count): the stacks'
    # reader says so. (Reports that size tables by the largest id say "out of memory".)
    p = altered(good, os.path.join(d, "hostile.db"),
                "INSERT INTO callsite VALUES(4294967296, 0, 1, 1)")
    rc, out, err = memreport(args, "leaks", p)
    want = (f"memreport: {p}: corrupt capture: cannot read stacks: callsite id 4294967296 is"
            " out of range (1 to 4294967294)\n")
    check(rc == 2 and err == want, f"callsite id beyond 2^32: exit {rc}, stderr {err!r}")

    # The same chunk twice (a writer gone back to its last commit writes every callsite
    # again): read as once.
    p = altered(good, os.path.join(d, "twice.db"),
                "INSERT INTO callsite_chunk(count, data) SELECT count, data FROM callsite_chunk")
    outs = [memreport(args, "top", q, "--top", "5") for q in (good, p)]
    same = outs[0][1].replace(good, "CAPTURE") == outs[1][1].replace(p, "CAPTURE")
    check(outs[0][0] == 0 and outs[1][0] == 0 and same and outs[0][1],
          f"callsite chunks written twice: exit {outs[1][0]}, {outs[1][2]!r}")

    # A cycle in the callsite table (the old layout, one row per callsite, where SQL can
    # make one; tests/unit/test_capture_callsites.c makes one in chunks): an error, not
    # stacks that repeat forever.
    p = os.path.join(d, "cycle.db")
    old_layout(args.memreport, good, p)
    db = sqlite3.connect(p)
    leaf, parent = db.execute("SELECT id, parent_id FROM callsite WHERE parent_id != 0"
                              " ORDER BY depth DESC LIMIT 1").fetchone()
    root = leaf
    while True:  # the root of that stack becomes a child of its leaf
        up = db.execute("SELECT parent_id FROM callsite WHERE id=?", (root,)).fetchone()[0]
        if up == 0:
            break
        root = up
    db.execute("UPDATE callsite SET parent_id=? WHERE id=?", (leaf, root))
    db.commit()
    db.close()
    for cmd in ("summary", "leaks"):
        rc, out, err = memreport(args, cmd, p)
        check(rc == 2 and err.startswith(f"memreport: {p}: ") and "cycle" in err
              and len(err.splitlines()) == 1,
              f"callsite cycle ({cmd}): exit {rc}, stderr {err!r}")


# ---- corpus

def case_corpus(args, d):
    good = good_capture(args, d)
    rc, out, err = memreport(args, "summary", good, "--json")
    check(rc == 0, f"intact capture: {rc} {err!r}")
    want = event_numbers(json.loads(out))
    with open(good, "rb") as f:
        data = f.read()
    rnd = random.Random(1515)
    page = 4096
    cuts = sorted({0, 1, 99, 100, 101, page - 1, page, page + 1} |
                  {rnd.randrange(1, len(data)) for _ in range(40)} |
                  {k * page for k in range(2, len(data) // page, max(1, len(data) // page // 10))})
    cases = [(f"truncated at {c} of {len(data)}", data[:c]) for c in cuts if c < len(data)]
    for k in range(60):
        b = bytearray(data)
        n = rnd.choice([1, 2, 4, 16, 64])
        at = rnd.randrange(len(b) - n)
        for i in range(n):
            b[at + i] = rnd.randrange(256)
        if bytes(b) != data:
            cases.append((f"{n} random bytes at {at}", bytes(b)))
    errors = same = 0
    for label, content in cases:
        p = os.path.join(d, "bad.db")
        with open(p, "wb") as f:
            f.write(content)
        out_json = os.path.join(d, "out.json")
        rc, out, err = memreport(args, "summary", p, "--json", "-o", out_json)
        if rc == 0:
            # Damage SQLite and the checksums cannot see (free space, meta text, names):
            # allowed only if the events are exactly those of the intact capture.
            with open(out_json) as f:
                got = event_numbers(json.load(f))
            os.unlink(out_json)
            check(got == want, f"{label}: exit 0 with other numbers: {got} != {want}")
            same += 1
            continue
        errors += 1
        expect_error(args, p, None, label, d)
    print(f"{len(cases)} damaged captures: {errors} rejected, {same} read with the same events")
    check(errors > len(cases) // 2, "most damaged captures should be rejected")

    # A directory is bad input, for reports and for import alike.
    sub = os.path.join(d, "adir")
    os.mkdir(sub)
    expect_error(args, sub, ["directory"], "directory", d)
    rc, out, err = memreport(args, "import", sub, "-o", os.path.join(d, "imp.db"))
    check(rc == 2 and err.startswith(f"memreport: {sub}: ") and len(err.splitlines()) == 1,
          f"import DIRECTORY: exit {rc}, stderr {err!r}")
    check(not os.path.exists(os.path.join(d, "imp.db")), "import DIRECTORY wrote a capture")


# ---- diskfull

def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def diskfull_inner(args, fs):
    """Runs in the directory `fs` of a full-to-be filesystem."""
    cap = os.path.join(fs, "cap.db")
    limit_fsize = args.method == "rlimit"

    def limit():
        if limit_fsize:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    # 150 rounds of 20000 pairs: 6 M events, ~2.3 MB compressed, more than the 1 MiB that fits.
    r = trace(args, cap, ["150", "20000", "5000"], preexec_fn=limit)
    check(r.returncode == 0, f"traced program exit {r.returncode}: {r.stderr[-500:]!r}")
    check(r.stdout == b"kept 3000 blocks\n", f"traced program output {r.stdout!r}")
    files = sorted(os.listdir(fs))
    print("left behind:", files, "tracer said:", r.stderr.decode(errors="replace").strip())
    check(cap + "-wal" in [os.path.join(fs, f) for f in files],
          f"no -wal left on the full filesystem: {files}")
    main_before = sha(cap)
    numbers = []
    for cmd in ("summary", "leaks", "summary"):
        rc, out, err = memreport(args, cmd, cap, "--json")
        if not check(rc == 0, f"{cmd} on the full filesystem: exit {rc}: {err.strip()!r}"):
            continue
        rep = json.loads(out)
        if cmd == "summary" and numbers:
            check(event_numbers(rep) == numbers[0], "a second read gives other numbers")
        elif cmd == "summary":
            numbers.append(event_numbers(rep))
            print("summary:", {k: rep.get(k) for k in ("status", "events", "allocations",
                                                        "frees", "leaked_allocations")})
            check(rep["status"] == "truncated", f"status {rep['status']!r}")
            check(rep["events"] > 0, "no events read")
            check(rep["events"] == rep["allocations"] + rep["frees"] + rep["unmatched_frees"],
                  "events != allocations + frees")
            # Live at the end: the program's leaks and the C runtime's blocks, counted apart.
            live = rep["leaked_allocations"] + rep.get("runtime_held_allocations", 0)
            check(rep["allocations"] - rep["frees"] == live,
                  f"allocations - frees != blocks live at the end ({live})")
            check(rep["events"] < 2 * 150 * 20000, "more events than the program made")
    # Never checkpointed: the main file is as the tracer left it, the -wal stays (what a
    # report caches may be appended to it, atomically), no -shm is created.
    check(sha(cap) == main_before, "memreport rewrote the capture's main file")
    check(sorted(os.listdir(fs)) == files, f"files changed: {files} -> {os.listdir(fs)}")


def case_diskfull_tmpfs(args, d):
    """A small tmpfs, where even memreport cannot write. Mounting one needs a mount namespace:
    where that is not permitted the case exits 77 (skipped)."""
    if args.inner:
        diskfull_inner(args, args.inner)
        return 0
    fs = os.path.join(d, "fs")
    os.mkdir(fs)
    me = [sys.executable, os.path.abspath(__file__), "--launcher", args.launcher,
          "--memreport", args.memreport, "--prog", args.prog]
    # A private mount namespace: the tmpfs disappears with the test, whatever happens.
    script = ('mount -t tmpfs -o size=1m memtrace-test "$1" && shift && exec "$@"')
    for unshare in (["unshare", "-m", "--propagation", "private"],
                    ["unshare", "-r", "-m", "--propagation", "private"]):
        probe = subprocess.run(unshare + ["sh", "-c", script, "sh", fs, "true"],
                               capture_output=True)
        if probe.returncode == 0:
            print("method: a 1 MiB tmpfs in a private mount namespace:", " ".join(unshare))
            r = subprocess.run(unshare + ["sh", "-c", script, "sh", fs] + me +
                               ["--method", "tmpfs", "--inner", fs, "diskfull_tmpfs"],
                               timeout=TIMEOUT)
            check(r.returncode == 0, "the test inside the mount namespace failed")
            return 0
    print("SKIP: mounting a tmpfs in a private mount namespace is not permitted here")
    return 77


def case_diskfull_rlimit(args, d):
    """RLIMIT_FSIZE on the traced program only, where memreport's own writes (names it
    caches) succeed and must still never checkpoint into the file."""
    print("method: RLIMIT_FSIZE 1 MiB on the traced program, SIGXFSZ ignored")
    args.method = "rlimit"
    fs = os.path.join(d, "rlimit")
    os.mkdir(fs)
    diskfull_inner(args, fs)


CASES = {"flips": case_flips, "corpus": case_corpus, "diskfull_tmpfs": case_diskfull_tmpfs,
         "diskfull_rlimit": case_diskfull_rlimit}


def main():
    if sys.argv[1:] == ["--list"]:  # tests/capture.cmake makes a test of each
        print("\n".join(CASES))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--memreport", required=True)
    ap.add_argument("--prog", required=True, help="paced_churn")
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    ap.add_argument("--method", default="tmpfs", help=argparse.SUPPRESS)
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mt_trust.") as d:
        rc = CASES[args.case](args, d)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    if rc == 77:
        return 77
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
