#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# e2e driver for the symbol tests: traces e2e_stacks CASE under memtrace, then checks with
# `memreport stacks --json` that each known allocation (found by its unique size) has exactly
# the expected chain of function names, leaf first, noise frames hidden.
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import public_copies  # noqa: E402

# Expected chains (relevant frames only, leaf first; inlined functions are frames too).
EXPECTED = {
    "chain": {1001: ["chain_c", "chain_b", "chain_a", "main"],
              1002: ["inlined_alloc", "inline_host", "main"]},
    # The signal trampoline is part of the chain; libc's kill is named by its global symbol.
    "signal": {1004: ["on_signal", "__restore_rt", "__kill", "raise_signal", "main"]},
    "threads": {1005: ["worker_one"], 1006: ["worker_two"]},
    "dlopen": {1007: ["dl_one_alloc", "run_library", "main"],
               1008: ["dl_two_alloc", "run_library", "main"]},
}
RECURSION_DEPTH = 16  # MEMTRACE_DEPTH for the recursion case (the program recurses 100 deep)
# Every case, with the builds of e2e_stacks it runs on (fp: frame pointers, nofp: none);
# `--list` prints them ("chain fp nofp"), tests/symbols.cmake makes a test of each pair.
CASES = {"chain": ("fp", "nofp"), "recursion": ("fp", "nofp"), "signal": ("fp", "nofp"),
         "threads": ("fp", "nofp"), "dlopen": ("fp", "nofp"),
         # Names survive the binaries: a symbolized capture moved away, the subject deleted.
         "moved": ("fp",),
         # Killed before finalize (no names in the capture): memreport symbolizes on first open.
         "unsymbolized": ("fp",),
         # Naming deferred by the tracer's budget (MEMTRACE_SYMBOLIZE_MS=0): memreport names
         # the rest, with the same reports as a capture named at exit; a read-only deferred
         # capture is named in memory, the file untouched.
         "deferred": ("fp", "nofp"), "deferred_readonly": ("nofp",),
         # The persistent symbol cache, a debug path of one's own, no debuginfod in traced
         # programs.
         "cache": ("nofp",), "debug_path": ("nofp",), "no_debuginfod": ("nofp",)}

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg, file=sys.stderr)


def trace(args, case, argv, env_extra=None):
    os.makedirs(args.workdir, exist_ok=True)
    cap = os.path.join(args.workdir, "%s.%s.db" % (case, os.path.basename(args.prog)))
    if os.path.exists(cap):
        os.unlink(cap)
    env = dict(os.environ)
    env.update(env_extra or {})
    p = subprocess.run([args.memtrace, "-o", cap, "--", args.prog] + argv, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        fail("%s exited %d: %s" % (case, p.returncode, p.stderr))
    trace.stderr = p.stderr
    return cap, p.stdout


def stacks(args, cap, *extra):
    p = subprocess.run([args.memreport, "stacks", "--json", "--top", "0", cap] + list(extra),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        fail("memreport stacks %s: exit %d: %s" % (cap, p.returncode, p.stderr))
        return {"stacks": []}, p.stderr
    return json.loads(p.stdout), p.stderr


def by_size(report, size):
    found = [s for s in report["stacks"] if s["count"] == 1 and s["bytes"] == size]
    if len(found) != 1:
        fail("expected one stack of one %d-byte allocation, found %d" % (size, len(found)))
        return None
    return found[0]


def names(stack):
    return [f["function"] for f in stack["frames"]]


def check_chains(report, expected):
    for size, chain in expected.items():
        s = by_size(report, size)
        if s is None:
            continue
        if names(s) != chain:
            fail("size %d: chain %s, expected %s" % (size, names(s), chain))
        for f in s["frames"]:
            if not f["function"]:
                fail("size %d: empty function name" % size)


def frame_rows(cap):
    db = sqlite3.connect(cap)
    rows = db.execute("SELECT f.rel_pc, f.function, f.file, f.line, f.inlined, f.relevant"
                      " FROM frame f JOIN mapping m ON m.id = f.mapping_id"
                      " WHERE m.path LIKE '%/subject' ORDER BY f.rel_pc").fetchall()
    db.close()
    return rows


def check_symbol_cache(args):
    """The persistent symbol cache (MEMTRACE_SYMBOL_CACHE): names read from DWARF once come
    back from the cache, also once the DWARF is gone; a cache file that is not ours, or a
    path that cannot be created, is left alone and changes nothing."""
    tmp = os.path.join(args.workdir, "cache")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    prog = os.path.join(tmp, "subject")
    shutil.copy(args.prog, prog)
    args.original_prog = args.prog
    args.prog = prog
    cache = os.path.join(tmp, "dir", "symbols.db")

    cap, _ = trace(args, "cache_fill", ["chain"], {"MEMTRACE_SYMBOL_CACHE": cache})
    first = frame_rows(cap)
    if not os.path.exists(cache):
        fail("no cache file at %s" % cache)
    # Same build (strip keeps the build-id), no DWARF any more: only the cache knows lines.
    subprocess.run(["strip", "--strip-debug", prog], check=True)
    cap, _ = trace(args, "cache_hit", ["chain"], {"MEMTRACE_SYMBOL_CACHE": cache})
    if frame_rows(cap) != first:
        fail("names from the cache differ:\n%s\nvs\n%s" % (frame_rows(cap), first))
    # Every frame came from the cache, libc's start-up frames too (named from its symbol
    # table, with libc6-dbg installed: looking again sorted libc's table in every process).
    db = sqlite3.connect("file:%s?mode=ro" % cap, uri=True)
    nframes = db.execute("SELECT count(*) FROM frame").fetchone()[0]
    db.close()
    cached = meta(cap, "symbols_cached")
    if cached is None or int(cached) != nframes:
        fail("%s of %d frames named from a warm cache" % (cached, nframes))
    report, _ = stacks(args, cap)
    check_chains(report, EXPECTED["chain"])
    cap, _ = trace(args, "cache_off", ["chain"], {"MEMTRACE_SYMBOL_CACHE": "0"})
    if any(r[2] for r in frame_rows(cap)):
        fail("control: file:line without DWARF or cache: %s" % frame_rows(cap))

    # A binary replaced between the trace and memreport gives module+offset names: those
    # must not be cached under the traced build-id.
    shutil.copy(args.original_prog, prog)  # undo the strip
    fresh_cache = os.path.join(tmp, "replaced.db")
    cap, _ = trace(args, "cache_replaced", ["chain"], {"MEMTRACE_SYMBOLIZE": "0"})
    saved = prog + ".saved"
    shutil.move(prog, saved)
    shutil.copy("/bin/true", prog)
    env = dict(os.environ, MEMTRACE_SYMBOL_CACHE=fresh_cache)
    subprocess.run([args.memreport, "stacks", cap], env=env, capture_output=True)
    if any(r[1] == "chain_c" for r in frame_rows(cap)):
        fail("control: a replaced binary still gave names: %s" % frame_rows(cap))
    shutil.move(saved, prog)
    cap, _ = trace(args, "cache_restored", ["chain"], {"MEMTRACE_SYMBOL_CACHE": fresh_cache})
    if not any(r[1] == "chain_c" for r in frame_rows(cap)):
        fail("module+offset names of a replaced binary were cached: %s" % frame_rows(cap))

    # Not ours: garbage, or another program's SQLite database. Both stay as they were.
    foreign = os.path.join(tmp, "foreign.db")
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE t(x)")
    db.commit()
    db.close()
    garbage = os.path.join(tmp, "garbage.db")
    with open(garbage, "wb") as f:
        f.write(b"not a database\n" * 512)
    blocked = os.path.join(tmp, "afile")
    open(blocked, "w").close()
    for path in (foreign, garbage, os.path.join(blocked, "sub", "symbols.db")):
        before = open(path, "rb").read() if os.path.isfile(path) else None
        cap, _ = trace(args, "cache_bad", ["chain"], {"MEMTRACE_SYMBOL_CACHE": path})
        complaints = [line for line in trace.stderr.splitlines()
                      if "capture written" not in line]
        if complaints:
            fail("cache %s: the tracer complained: %s" % (path, complaints))
        if len(frame_rows(cap)) != len(first) or not any(r[1] == "chain_c"
                                                          for r in frame_rows(cap)):
            fail("cache %s: frames not named: %s" % (path, frame_rows(cap)))
        if before is not None and open(path, "rb").read() != before:
            fail("cache %s: somebody else's file was changed" % path)


def report_text(args, cap, cmd, *extra, user=None):
    """`memreport CMD --json CAP`, its capture's own name taken out (the rest must match)."""
    p = subprocess.run([args.memreport, cmd, "--json", cap] + list(extra), user=user,
                       env=dict(os.environ, MEMTRACE_SYMBOL_CACHE="0"),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        fail("memreport %s %s: exit %d: %s" % (cmd, cap, p.returncode, p.stderr))
    return p.stdout.replace(cap, "CAPTURE").replace(os.path.basename(cap), "CAPTURE"), p.stderr


def meta(cap, key):
    db = sqlite3.connect("file:%s?mode=ro" % cap, uri=True)
    row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    db.close()
    return row[0] if row else None


REPORTS = [("stacks", "--top", "0"), ("stacks", "--top", "0", "--all-frames"), ("leaks",)]


def check_deferred(args, readonly):
    """Frames the tracer leaves unnamed (no DWARF read at exit) are named by memreport on
    first open, and every report reads the same as for a capture named at exit."""
    tmp = os.path.join(args.workdir, "deferred_" + os.path.basename(args.prog))
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    os.chmod(tmp, 0o755)
    user = None
    if readonly and os.geteuid() == 0:
        # Root writes any file: the read-only capture is read as nobody, who must reach the
        # program, the captures and memreport.
        user = 65534
        tmp, args.memreport = public_copies(args.memreport)
        args.workdir = tmp
    prog = os.path.join(tmp, "subject")
    shutil.copy(args.prog, prog)
    args.prog = prog
    # No symbol cache: each capture names its frames itself.
    named, _ = trace(args, "named", ["chain"], {"MEMTRACE_SYMBOL_CACHE": "0"})
    deferred, _ = trace(args, "deferred", ["chain"],
                        {"MEMTRACE_SYMBOL_CACHE": "0", "MEMTRACE_SYMBOLIZE_MS": "0"})
    if meta(named, "symbolized") != "1" or meta(named, "symbols_deferred") is not None:
        fail("named at exit: symbolized=%r symbols_deferred=%r"
             % (meta(named, "symbolized"), meta(named, "symbols_deferred")))
    left = meta(deferred, "symbols_deferred")
    if meta(deferred, "symbolized") == "1" or not left or int(left) <= 0:
        fail("deferred: symbolized=%r symbols_deferred=%r"
             % (meta(deferred, "symbolized"), left))
    db = sqlite3.connect("file:%s?mode=ro" % deferred, uri=True)
    unnamed = db.execute("SELECT count(*) FROM frame WHERE function IS NULL").fetchone()[0]
    db.close()
    if left and unnamed != int(left):
        fail("deferred: %d frames without a name, meta says %s" % (unnamed, left))
    if readonly:
        os.chmod(deferred, 0o444)
        with open(deferred, "rb") as f:
            before = f.read()
    for i, report in enumerate(REPORTS):
        want, _ = report_text(args, named, *report)
        got, err = report_text(args, deferred, *report, user=user)
        if got != want:
            fail("memreport %s differs between named at exit and deferred:\n%s\nvs\n%s"
                 % (" ".join(report), got[:2000], want[:2000]))
        if i == 0:
            expect = ("cannot store symbols (" if readonly else "symbolized %s frames" % left)
            if expect not in err or (readonly and "named %s frames in memory" % left not in err):
                fail("first open of the deferred capture said %r" % err)
        elif not readonly and err:
            fail("names were not stored: run %d printed %r" % (i, err))
    report, _ = stacks(args, deferred) if not readonly else (None, None)
    if report:
        check_chains(report, EXPECTED["chain"])
    if readonly:
        with open(deferred, "rb") as f:
            if f.read() != before:
                fail("the read-only capture was changed")
        if meta(deferred, "symbolized") == "1":
            fail("names stored in a read-only capture")
    elif meta(deferred, "symbolized") != "1":
        fail("memreport did not store the deferred names")


def check_debug_path(args):
    """MEMTRACE_DEBUGINFO_PATH: separate debug files under another root are found by
    build-id; and a name cached while the binary had no debug file is not trusted once one
    is installed there."""
    tmp = os.path.join(args.workdir, "debug_path")
    shutil.rmtree(tmp, ignore_errors=True)
    empty, root = os.path.join(tmp, "empty"), os.path.join(tmp, "root")
    os.makedirs(empty)
    prog = os.path.join(tmp, "subject")
    shutil.copy(args.prog, prog)
    notes = subprocess.run(["readelf", "-n", prog], capture_output=True, text=True).stdout
    build_id = [l.split()[-1] for l in notes.splitlines() if "Build ID" in l][0]
    debug = os.path.join(root, ".build-id", build_id[:2], build_id[2:] + ".debug")
    os.makedirs(os.path.dirname(debug))
    subprocess.run(["objcopy", "--only-keep-debug", prog, debug], check=True)
    subprocess.run(["strip", "--strip-debug", prog], check=True)
    args.prog = prog
    cache = os.path.join(tmp, "symbols.db")

    def chain_c(path):
        cap, _ = trace(args, "debug_path", ["chain"],
                       {"MEMTRACE_DEBUGINFO_PATH": path, "MEMTRACE_SYMBOL_CACHE": cache})
        rows = [r for r in frame_rows(cap) if r[1] == "chain_c"]
        return rows[0] if rows else None

    before = chain_c(empty)
    if not before or before[2]:
        fail("no debug file in the path, yet %s" % (before,))
    after = chain_c(root)
    if not after or not (after[2] or "").endswith("e2e_stacks.c"):
        fail("the debug file under the path was not used (a stale cached name?): %s"
             % (after,))


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(" ".join((case,) + builds) for case, builds in CASES.items()))
        return 0
    ap = argparse.ArgumentParser()
    for opt in ("--memtrace", "--memreport", "--workdir", "--prog", "--lib1", "--lib2"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    args = ap.parse_args()
    case = args.case

    if case in ("chain", "signal", "threads"):
        cap, _ = trace(args, case, [case])
        report, _ = stacks(args, cap)
        check_chains(report, EXPECTED[case])
        if case == "chain":
            # The inlined frame says so, and its caller's line is the line of the call.
            s = by_size(report, 1002)
            if s and not (s["frames"][0]["inlined"] and not s["frames"][1]["inlined"]):
                fail("inlined flags wrong: %s" % s["frames"][:2])
            # --all-frames shows the start-up code the default view hides: named from the
            # symbol table (global names, no symbol version), without reading libc's DWARF.
            full, _ = stacks(args, cap, "--all-frames")
            s = by_size(full, 1001)
            if s and names(s)[-3:] != ["__libc_start_call_main", "__libc_start_main",
                                       "_start"]:
                fail("--all-frames root: %s" % names(s))
            if s and any(f["file"] for f in s["frames"][-3:]):
                fail("start-up frames with file:line: %s" % s["frames"][-3:])
    elif case == "cache":
        check_symbol_cache(args)
    elif case == "debug_path":
        check_debug_path(args)
    elif case in ("deferred", "deferred_readonly"):
        check_deferred(args, case == "deferred_readonly")
    elif case == "no_debuginfod":
        # A binary without debug info makes libdw reach for its debuginfod client (libcurl
        # and ~30 more libraries, maybe a download). Not inside a traced program.
        tmp = os.path.join(args.workdir, "nodebug")
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        prog = os.path.join(tmp, "subject")
        subprocess.run(["strip", "-o", prog, args.prog], check=True)
        args.prog = prog
        cap, _ = trace(args, case, ["chain"], {"LD_DEBUG": "files"})
        loaded = [line for line in trace.stderr.splitlines() if "libdebuginfod" in line]
        if loaded:
            fail("the traced program loaded debuginfod: %s" % loaded)
        report, _ = stacks(args, cap)
        if not by_size(report, 1001):
            fail("no stack of the 1001-byte allocation")
    elif case == "recursion":
        cap, _ = trace(args, case, [case, "100"], {"MEMTRACE_DEPTH": str(RECURSION_DEPTH)})
        report, _ = stacks(args, cap)
        s = by_size(report, 1003)
        if s:
            want = ["recurse"] * RECURSION_DEPTH + ["[truncated]"]
            if names(s) != want or s["truncated"] is not True:
                fail("recursion: %s truncated=%s, expected %s" % (names(s), s["truncated"],
                                                                  want))
    elif case == "dlopen":
        cap, out = trace(args, case, [case, args.lib1, args.lib2])
        addrs = [line.split()[1] for line in out.splitlines()]
        db = sqlite3.connect(cap)
        rows = db.execute("SELECT path, start, ts_loaded, ts_unloaded FROM mapping"
                          " WHERE path LIKE '%libdl_%'").fetchall()
        db.close()
        if len(addrs) != 2 or len(rows) != 2:
            fail("dlopen: program printed %s, mappings %s" % (addrs, rows))
        elif addrs[0] != addrs[1] or rows[0][1] != rows[1][1]:
            # The point of the test is two libraries at one address; say if that failed.
            fail("dlopen: the libraries were not loaded at the same address: %s %s"
                 % (addrs, rows))
        report, _ = stacks(args, cap)
        check_chains(report, EXPECTED["dlopen"])
    elif case in ("moved", "unsymbolized"):
        # Copies of the subject and libraries, deleted after tracing (moved) or before
        # memreport ever symbolizes (unsymbolized: the tracer's names are erased).
        tmp = os.path.join(args.workdir, case)
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        prog = os.path.join(tmp, "subject")
        shutil.copy(args.prog, prog)
        args.prog = prog
        cap, _ = trace(args, case, ["chain"])
        if case == "moved":
            os.unlink(prog)
            moved = os.path.join(tmp, "elsewhere")
            os.makedirs(moved)
            shutil.move(cap, os.path.join(moved, "copy.db"))
            report, err = stacks(args, os.path.join(moved, "copy.db"))
            if "symbolized" in err:
                fail("a symbolized capture was symbolized again: %s" % err)
            check_chains(report, EXPECTED["chain"])
        else:
            db = sqlite3.connect(cap)
            db.execute("UPDATE frame SET function=NULL, file=NULL, line=NULL, inlined=NULL")
            db.execute("UPDATE meta SET value='0' WHERE key='symbolized'")
            db.commit()
            db.close()
            report, err = stacks(args, cap)
            if not err.startswith("memreport: %s: symbolized " % cap):
                fail("no symbolization message on stderr: %r" % err)
            check_chains(report, EXPECTED["chain"])
            # Stored: the second run is silent.
            _, err = stacks(args, cap)
            if err:
                fail("second run printed %r" % err)
            # Now without the binary: the stored names remain.
            os.unlink(prog)
            report, _ = stacks(args, cap)
            check_chains(report, EXPECTED["chain"])
    else:
        fail("unknown case " + case)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
