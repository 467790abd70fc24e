#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# e2e: the tracer loads libdw only when a frame must be named from its module's file. One
# part per test (`--list`):
# - linkage: libmemtrace.so neither needs libdw/libelf nor refers to any of their functions;
# - warm: with every frame in the symbol cache, the traced process never opens libdw.so.1
#   (the dynamic loader's own log, LD_DEBUG=files), and the names are right;
# - cold: with an empty cache, libmemtrace.so loads libdw at exit and names every frame there;
# - missing: where libdw.so.1 cannot be loaded (a file of that name that is no ELF comes
#   first in LD_LIBRARY_PATH: the loader stops at it), the program runs as without the
#   tracer, the capture is complete, its frames are left unnamed as when naming is deferred,
#   and memreport names them: every report reads as for a capture named at exit;
# - exit_in_dlopen: a thread calls exit() while another loops in dlopen/dlclose, cache cold:
#   the pass at exit loads libdw beside the program's loads, no deadlock, names right (the
#   moment the two meet varies from run to run; every run must pass);
# - fork: a parent and its forked child (ended by _exit), cache cold: each capture is named
#   at its process's end, libdw loaded by each process.
# Subjects: e2e_stacks ("chain"), exit_in_dlopen.c, fork_names.c; helpers and expected chains
# come from check_stacks.py.
import argparse
import glob
import os
import shutil
import sqlite3
import subprocess
import sys

import check_stacks as cs
from check_stacks import EXPECTED, check_chains, fail, meta, stacks, trace

# Naming at exit without a time budget that a loaded machine could exhaust (frames it leaves
# would be deferred to memreport, by design): the parts that check names given at exit.
NO_BUDGET = {"MEMTRACE_SYMBOLIZE_MS": "3600000"}
PARTS = ["linkage", "warm", "cold", "missing", "exit_in_dlopen", "fork"]


def loader_log(args, name, env_extra, argv=("chain",)):
    """Traces `PROG chain` with the dynamic loader logging which files it opens;
    returns the capture and the log of every process of the run."""
    prefix = os.path.join(args.workdir, name + ".ld")
    for f in glob.glob(prefix + ".*"):
        os.unlink(f)
    env = dict(env_extra, LD_DEBUG="files", LD_DEBUG_OUTPUT=prefix)
    cap, out = trace(args, name, list(argv), env)
    log = "".join(open(f, errors="replace").read() for f in sorted(glob.glob(prefix + ".*")))
    # The log must cover the traced process, or the checks below prove nothing.
    if "libmemtrace.so" not in log:
        fail("%s: the loader's log does not show libmemtrace.so:\n%s" % (name, log[:2000]))
    return cap, out, log


def libdw_lines(log):
    return [ln.strip() for ln in log.splitlines() if "libdw.so" in ln or "libelf.so" in ln]


def frames(cap):
    db = sqlite3.connect("file:%s?mode=ro" % cap, uri=True)
    total, named = db.execute("SELECT count(*), count(function) FROM frame").fetchone()
    db.close()
    return total, named


def native_output(args):
    p = subprocess.run([args.prog, "chain"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    return p.returncode, p.stdout


def check_linkage(args):
    dyn = subprocess.run(["readelf", "-dW", args.lib], capture_output=True, text=True,
                         check=True).stdout
    needed = [ln for ln in dyn.splitlines() if "(NEEDED)" in ln]
    if not needed:
        fail("readelf -d %s lists no NEEDED entry at all" % args.lib)
    for ln in needed:
        if "libdw" in ln or "libelf" in ln:
            fail("libmemtrace.so still needs it: %s" % ln.strip())
    syms = subprocess.run(["readelf", "-W", "--dyn-syms", args.lib], capture_output=True,
                          text=True, check=True).stdout
    undefined = [ln.split()[7] for ln in syms.splitlines()
                 if len(ln.split()) >= 8 and ln.split()[6] == "UND"]
    if not any("@GLIBC" in s for s in undefined):
        fail("no undefined libc symbol found: the symbol table was misread")
    ours = [s for s in undefined if s.split("@")[0].startswith(("dw_", "dwfl_", "dwarf_",
                                                                  "elf_", "gelf_"))]
    if ours:
        fail("libmemtrace.so refers to libdw/libelf functions: %s" % ours)


def check_warm(args):
    cache = os.path.join(args.workdir, "symbols.db")
    if os.path.exists(cache):
        os.unlink(cache)
    trace(args, "fill", ["chain"], dict(NO_BUDGET, MEMTRACE_SYMBOL_CACHE=cache))  # to the cache
    cap, _, log = loader_log(args, "warm", {"MEMTRACE_SYMBOL_CACHE": cache})
    if libdw_lines(log):
        fail("libdw was loaded although every frame was in the cache:\n%s"
             % "\n".join(libdw_lines(log)))
    total, named = frames(cap)
    cached = meta(cap, "symbols_cached")
    if total == 0 or named != total or cached is None or int(cached) != total:
        fail("warm: %d frames, %d named, %s from the cache" % (total, named, cached))
    if meta(cap, "symbolized") != "1":
        fail("warm: meta symbolized=%r" % meta(cap, "symbolized"))
    report, _ = stacks(args, cap)
    check_chains(report, EXPECTED["chain"])


def check_cold(args):
    cache = os.path.join(args.workdir, "cold_symbols.db")
    if os.path.exists(cache):
        os.unlink(cache)
    cap, _, log = loader_log(args, "cold", dict(NO_BUDGET, MEMTRACE_SYMBOL_CACHE=cache))
    if not any("libdw.so.1" in ln and "dynamically loaded by" in ln and "libmemtrace" in ln
               for ln in libdw_lines(log)):
        fail("cold: libmemtrace.so did not load libdw:\n%s" % "\n".join(libdw_lines(log)))
    # The tracer's own load is no module map of the program's.
    db = sqlite3.connect("file:%s?mode=ro" % cap, uri=True)
    ours = db.execute("SELECT path FROM mapping WHERE path LIKE '%libdw%'"
                      " OR path LIKE '%libelf%'").fetchall()
    db.close()
    if ours:
        fail("cold: the tracer's libdw was recorded as the program's mapping: %s" % ours)
    total, named = frames(cap)
    if total == 0 or named != total or meta(cap, "symbolized") != "1":
        fail("cold: %d of %d frames named at exit, symbolized=%r"
             % (named, total, meta(cap, "symbolized")))
    report, err = stacks(args, cap)
    if "symbolized" in err:
        fail("cold: memreport had to name frames: %r" % err)
    check_chains(report, EXPECTED["chain"])


def check_missing(args):
    nodw = os.path.join(args.workdir, "nodw")
    shutil.rmtree(nodw, ignore_errors=True)
    os.makedirs(nodw)
    with open(os.path.join(nodw, "libdw.so.1"), "w") as f:
        f.write("not a library\n")
    plain = dict(NO_BUDGET, MEMTRACE_SYMBOL_CACHE="0")
    named, named_out = trace(args, "named", ["chain"], plain)
    cap, out, log = loader_log(args, "missing", dict(plain, LD_LIBRARY_PATH=nodw))
    if not os.path.exists(cap):
        fail("missing: no capture")
        return
    # The failed load did happen (else this proves nothing), and nothing of libdw ran.
    lines = libdw_lines(log)
    if not any("libdw.so.1" in ln and "libmemtrace" in ln for ln in lines):
        fail("missing: the tracer never tried libdw:\n%s" % "\n".join(lines))
    if any("calling init" in ln or ("/libdw.so" in ln and "nodw" not in ln) for ln in lines):
        fail("missing: a libdw was loaded after all:\n%s" % "\n".join(lines))
    rc, native = native_output(args)
    if rc != 0 or out != native or named_out != native:
        fail("missing: the program's output changed: %r / %r vs native %r (exit %d)"
             % (out, named_out, native, rc))
    if meta(cap, "capture_status") != "complete":
        fail("missing: capture_status=%r" % meta(cap, "capture_status"))
    total, named_n = frames(cap)
    left = meta(cap, "symbols_deferred")
    if total == 0 or meta(cap, "symbolized") == "1" or left is None or int(left) != total - named_n:
        fail("missing: %d frames, %d named, symbolized=%r symbols_deferred=%r"
             % (total, named_n, meta(cap, "symbolized"), left))
    # memreport names the deferred frames: every report reads as for the capture named at
    # exit (the same events, the same names).
    for i, report in enumerate(cs.REPORTS):
        want, _ = cs.report_text(args, named, *report)
        got, err = cs.report_text(args, cap, *report)
        if got != want:
            fail("memreport %s differs from the capture named at exit:\n%s\nvs\n%s"
                 % (" ".join(report), got[:2000], want[:2000]))
        if i == 0 and "symbolized %s frames" % left not in err:
            fail("missing: first open said %r" % err)
    report, _ = stacks(args, cap)
    check_chains(report, EXPECTED["chain"])


def check_exit_in_dlopen(args):
    args.prog = args.exit_prog
    for run in range(5):
        cache = os.path.join(args.workdir, "symbols%d.db" % run)
        env = dict(NO_BUDGET, MEMTRACE_SYMBOL_CACHE=cache)
        cap, out, log = loader_log(args, "exit%d" % run, env, ())
        if out != "exiting\n":
            fail("exit_in_dlopen: output %r" % out)
        if not any("libdw.so.1" in ln and "libmemtrace" in ln for ln in libdw_lines(log)):
            fail("exit_in_dlopen: libdw was not loaded at exit")
        if not os.path.exists(cap):
            fail("exit_in_dlopen: no capture")
            return
        total, named = frames(cap)
        if (meta(cap, "capture_status") != "complete" or meta(cap, "symbolized") != "1"
                or total == 0 or named != total):
            fail("exit_in_dlopen: status %r, symbolized %r, %d of %d frames named"
                 % (meta(cap, "capture_status"), meta(cap, "symbolized"), named, total))
        report, _ = stacks(args, cap)
        check_chains(report, {1013: ["allocate_known", "main"]})


def check_fork(args):
    args.prog = args.fork_prog
    cache = os.path.join(args.workdir, "fork_symbols.db")
    cap, out, log = loader_log(args, "fork", dict(NO_BUDGET, MEMTRACE_SYMBOL_CACHE=cache), ())
    if out != "done\n":
        fail("fork: output %r" % out)
    # One load by each process: "PID: file=libdw.so.1 [0];  dynamically loaded by ...".
    loaders = {ln.split(":")[0] for ln in libdw_lines(log)
               if "file=libdw.so.1" in ln and "dynamically loaded by" in ln}
    if len(loaders) != 2:
        fail("fork: libdw loaded by %d processes, expected 2:\n%s"
             % (len(loaders), "\n".join(libdw_lines(log))))
    children = sorted(set(glob.glob(cap[:-len(".db")] + ".*.db")) - {cap})
    if len(children) != 1:
        fail("fork: child captures %s" % children)
        return
    for path, size, chain in ((cap, 1021, ["parent_alloc", "main"]),
                              (children[0], 1031, ["child_alloc", "main"])):
        total, named = frames(path)
        if (meta(path, "capture_status") != "complete" or meta(path, "symbolized") != "1"
                or total == 0 or named != total):
            fail("fork: %s: status %r, symbolized %r, %d of %d frames named"
                 % (path, meta(path, "capture_status"), meta(path, "symbolized"), named, total))
        report, _ = stacks(args, path)
        check_chains(report, {size: chain})


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(PARTS))
        return 0
    ap = argparse.ArgumentParser()
    for opt in ("--memtrace", "--memreport", "--lib", "--workdir", "--prog", "--exit-prog",
                "--fork-prog"):
        ap.add_argument(opt, required=True)
    ap.add_argument("part", choices=PARTS)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    {"linkage": check_linkage, "warm": check_warm, "cold": check_cold,
     "missing": check_missing, "exit_in_dlopen": check_exit_in_dlopen,
     "fork": check_fork}[args.part](args)
    return 1 if cs.failures else 0


if __name__ == "__main__":
    sys.exit(main())
