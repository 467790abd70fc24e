#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport export --format pprof, read back by the real consumer: `go tool pprof` (Debian's
# golang-go). Checks every sample type's per-function bytes and counts against the standard
# fixture's known truth (tests/reports/fixture.c) and against memreport stacks --json, and
# on a real traced program (pprof_prog.c) the inlined frames, file:line and build-id.
# Usage: pprof_test.py MEMREPORT REPORTS_FIXTURE WORKDIR [MEMTRACE_LAUNCHER PPROF_PROG]
# Exits 77 (skip) when go tool pprof is missing.
import json
import os
import pty
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check_quietly as check, failures  # noqa: E402


def go_env(work):
    # pprof must touch neither the user's home nor the network: its cache, settings and
    # temporary files go to the work directory, module downloads are off.
    env = dict(os.environ)
    for name in ("home", "gocache", "gopath", "tmp"):
        os.makedirs(os.path.join(work, name), exist_ok=True)
    env.update(HOME=os.path.join(work, "home"), GOCACHE=os.path.join(work, "gocache"),
               GOPATH=os.path.join(work, "gopath"), PPROF_TMPDIR=os.path.join(work, "tmp"),
               GOPROXY="off", GOTOOLCHAIN="local", GOFLAGS="", PPROF_BINARY_PATH="/nonexistent")
    env.pop("DISPLAY", None)
    return env


def pprof(env, *args):
    r = subprocess.run(["go", "tool", "pprof"] + list(args), env=env, capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        print(r.stderr)
    r.check_returncode()
    return r.stdout


def top(env, profile, index):
    """Flat value per function of `go tool pprof -top` for one sample type, exact units."""
    out = pprof(env, "-top", "-unit=B", "-nodefraction=0", "-nodecount=100000",
                "-sample_index=" + index, profile)
    flat = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\d+)B?\s+[\d.]+%\s+[\d.]+%\s+\S+\s+[\d.]+%\s+(.+)$", line)
        if m and int(m.group(1)):
            flat[m.group(2)] = int(m.group(1))
    return flat


def stacks_truth(memreport, cap, *opts):
    """Per leaf function, from memreport stacks --json: alloc bytes, alloc count, peak bytes."""
    rep = json.loads(subprocess.run([memreport, "stacks", cap, "--json"] + list(opts),
                                    check=True, capture_output=True, text=True).stdout)
    alloc, count, peak = {}, {}, {}
    for s in rep["stacks"]:
        leaf = s["frames"][0]["function"] if s["frames"] else "(no stack)"
        if s["frames"] and s["frames"][0].get("inlined"):
            leaf += " (inline)"  # pprof's name for a function inlined at its location
        for d, v in ((alloc, s["bytes"]), (count, s["count"]), (peak, s["peak_bytes"])):
            if v:
                d[leaf] = d.get(leaf, 0) + v
    return alloc, count, peak


def export(memreport, cap, out, *opts):
    subprocess.run([memreport, "export", cap, "--format", "pprof", "-o", out, "-f"] + list(opts),
                   check=True, capture_output=True)
    with open(out, "rb") as f:
        data = f.read()
    check(data[:2] == b"\x1f\x8b", "%s is gzip" % os.path.basename(out))
    return out


def fixture(memreport, mkfixture, work, env):
    cap = os.path.join(work, "fx.db")
    subprocess.run([mkfixture, cap], check=True)
    prof = export(memreport, cap, os.path.join(work, "fx.pb.gz"))
    # Truth of fixture.c: at the peak (seq 7) and over the whole run.
    inuse_space = {"worker": 5000, "make_node": 4000, "parse_file": 1000, "cache_put": 300,
                   "prog+0x1234": 64}
    alloc_space = {"worker": 5050, "make_node": 4200, "parse_file": 1000, "cache_put": 1000,
                   "prog+0x1234": 64}
    inuse_objects = {f: 1 for f in inuse_space}
    alloc_objects = {"worker": 2, "make_node": 2, "parse_file": 1, "cache_put": 3,
                     "prog+0x1234": 1}
    for index, want in (("inuse_space", inuse_space), ("alloc_space", alloc_space),
                        ("inuse_objects", inuse_objects), ("alloc_objects", alloc_objects)):
        got = top(env, prof, index)
        check(got == want, "fixture %s: %r" % (index, got))
    # The same numbers as memreport's own stacks report.
    alloc, count, peak = stacks_truth(memreport, cap)
    check(top(env, prof, "alloc_space") == alloc, "alloc_space = stacks' bytes: %r" % alloc)
    check(top(env, prof, "alloc_objects") == count, "alloc_objects = stacks' count")
    check(top(env, prof, "inuse_space") == peak, "inuse_space = stacks' peak bytes")

    # The moment and the range: live at the end (--leaks), allocations until 6 us.
    leaks = export(memreport, cap, os.path.join(work, "fx-leaks.pb.gz"), "--leaks")
    got = top(env, leaks, "inuse_space")
    check(got == {"make_node": 4000, "cache_put": 700, "prog+0x1234": 64, "worker": 50},
          "--leaks inuse_space: %r" % got)
    got = top(env, leaks, "inuse_objects")
    check(got == {"make_node": 1, "cache_put": 2, "prog+0x1234": 1, "worker": 1},
          "--leaks inuse_objects: %r" % got)
    ranged = export(memreport, cap, os.path.join(work, "fx-range.pb.gz"), "--range", "..6us")
    got = top(env, ranged, "alloc_space")
    check(got == {"parse_file": 1000, "make_node": 4200, "cache_put": 300, "worker": 5000},
          "--range ..6us alloc_space: %r" % got)

    # Noise frames stay out unless --all-frames (then operator new holds make_node's block).
    full = export(memreport, cap, os.path.join(work, "fx-all.pb.gz"), "--all-frames")
    got = top(env, full, "inuse_space")
    check(got.get("operator new") == 4000 and got.get("make_node") is None,
          "--all-frames: operator new is a location: %r" % got)

    # Locations carry address, file:line and mapping; the mapping its path and build-id;
    # --metric picks the default sample type.
    raw = pprof(env, "-raw", export(memreport, cap, os.path.join(work, "fx-alloc.pb.gz"),
                                    "--metric", "allocated"))
    check(re.search(r"^\s+\d+: 0x1003 M=1 parse_file parse\.c:30", raw, re.M) is not None,
          "-raw: parse_file at 0x1003, parse.c:30, mapping 1")
    check(re.search(r"^1: 0x1000/0x10000/\S+ /usr/bin/prog ab ", raw, re.M) is not None,
          "-raw: mapping 1 is /usr/bin/prog with build-id ab")
    check("alloc_space/bytes[dflt]" in raw, "--metric allocated: alloc_space is the default")
    check("PeriodType: space bytes" in raw and "Period: 1" in raw, "period: 1 byte (no sampling)")

    # Binary: never written to a terminal.
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(memreport, [memreport, "export", cap, "--format", "pprof"])
    said = b""
    try:
        while True:
            said += os.read(fd, 4096)
    except OSError:
        pass
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    check(code == 1 and b"binary" in said and b"\x1f\x8b" not in said,
          "pprof to a terminal: refused (exit %d): %r" % (code, said[:120]))


def traced(memreport, launcher, prog, work, env):
    cap = os.path.join(work, "prog.db")
    subprocess.run([launcher, "-o", cap, "--", prog], check=True, capture_output=True)
    prof = export(memreport, cap, os.path.join(work, "prog.pb.gz"))
    alloc, count, peak = stacks_truth(memreport, cap)
    got = {i: top(env, prof, i) for i in ("alloc_space", "alloc_objects", "inuse_space")}
    check(got["alloc_space"] == alloc, "traced alloc_space = stacks' bytes: %r" % alloc)
    check(got["alloc_objects"] == count, "traced alloc_objects = stacks' count: %r" % count)
    check(got["inuse_space"] == peak, "traced inuse_space = stacks' peak bytes: %r" % peak)
    # Truth of pprof_prog.c: the peak is reached with one churn block live.
    a, o, s = got["alloc_space"], got["alloc_objects"], got["inuse_space"]
    check(a.get("make_buffer (inline)") == 3 * 12345 and o.get("make_buffer (inline)") == 3,
          "make_buffer (inlined): 3 x 12345 bytes allocated")
    check(a.get("kept_site") == 5000 and s.get("kept_site") == 5000, "kept_site: 5000 bytes")
    check(a.get("churn_site") == 6400 and o.get("churn_site") == 100 and
          s.get("churn_site") == 64, "churn_site: 100 x 64 allocated, 64 live at the peak")
    objs = top(env, prof, "inuse_objects")
    check(objs.get("make_buffer (inline)") == 3 and objs.get("kept_site") == 5,
          "inuse_objects: 3 buffers, 5 kept blocks: %r" % objs)

    # Inlined frames are lines of one location, innermost first, with file:line.
    raw = pprof(env, "-raw", prof)
    m = re.search(r"^\s+\d+: 0x[0-9a-f]+ M=\d+ make_buffer \S*pprof_prog\.c:(\d+) s=0\n"
                  r"\s+inlined_site \S*pprof_prog\.c:(\d+) s=0$", raw, re.M)
    check(m is not None, "-raw: make_buffer inlined into inlined_site, one location")
    build_id = subprocess.run(["readelf", "-n", prog], capture_output=True,
                              text=True).stdout
    bid = re.search(r"Build ID: ([0-9a-f]+)", build_id)
    check(bid is not None and re.search(r"^\d+: \S+ \S*pprof_prog %s " % bid.group(1), raw,
                                        re.M) is not None,
          "-raw: the program's mapping carries its build-id")
    traces = pprof(env, "-traces", "-sample_index=inuse_space", prof)
    check(re.search(r"make_buffer \(inline\)\n\s+inlined_site\n\s+main", traces) is not None,
          "-traces: make_buffer (inline) <- inlined_site <- main")


def main():
    memreport, mkfixture, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if shutil.which("go") is None:
        print("SKIP: go tool pprof is not installed (Debian golang-go, scripts/install-deps.sh)")
        return 77
    env = go_env(work)
    if subprocess.run(["go", "tool", "pprof", "-h"], env=env, capture_output=True).returncode:
        print("SKIP: `go tool pprof` does not run")
        return 77
    fixture(memreport, mkfixture, work, env)
    if len(sys.argv) > 5:
        traced(memreport, sys.argv[4], sys.argv[5], work, env)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
