#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a new user meets on the command line (issue 10, "Commands and help").

Usage: check_cli.py CASE VERSION SOURCE_DIR MEMTRACE MEMREPORT REPORTS_FIXTURE WORKDIR
       check_cli.py --list     (the cases, one a line)
Cases:
  version  one version string (CMake's) in both --version, the tracer's and the importer's
           tool_version meta row, and nowhere hard-coded in the sources
  help     `memtrace --help` lists the MEMTRACE_* settings of docs/tracing.md's table, no
           more, each with its default; every subcommand of memreport's dispatch table in
           `memreport --help`, and each one's --help works
  wrote    every subcommand that writes a file says `memreport: wrote FILE` once per file
  usage    every usage error says what is wrong in one line, then a short usage hint; exit 1
  top      stacks takes --top N (default 20, 0 = all), as stats and leaks do
  frames   stats and flamegraph take --all-frames like stacks and leaks
  settings a MEMTRACE_* value the tracer cannot take: the launcher refuses it before running
           anything; the library alone says so once and uses the default
  special  -o naming a FIFO (as a device) writes into it (with or without -f) and never
           replaces it with a file; a directory is refused; import refuses a FIFO
  wayin    at a terminal, the launcher's last line after one capture names `memreport view`
           on it; into a pipe it does not (scripts read "capture written to" last)
  tree     at a terminal, a run that writes more than 8 captures into one directory (-o DIR/,
           a build) says them in one line that names how to read them together; a capture
           left unfinished is still named on its own; into a pipe each is named
"""
import json
import os
import pty
import re
import shutil
import sqlite3
import stat
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures  # noqa: E402


def run(argv, cwd=None):
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd)


def meta(path, key):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    finally:
        db.close()
    return row[0] if row else None


def commands(a):
    """The subcommands of memreport's dispatch table (reporter/main.c)."""
    src = open(os.path.join(a.src, "reporter", "main.c")).read()
    table = src[src.index("static const command commands[]"):]
    table = table[:table.index("};")]
    return re.findall(r'\{"([a-z-]+)",\s*mr_cmd_\w+', table)


def readme_settings(a):
    """(name, default) of every row of docs/tracing.md's MEMTRACE_* settings table."""
    rows = []
    for line in open(os.path.join(a.src, "docs", "tracing.md")):
        m = re.match(r"\|\s*`(MEMTRACE_[A-Z_]+)`\s*\|.*\|\s*(.+?)\s*\|\s*$", line)
        if m:
            rows.append((m.group(1), m.group(2).strip("`")))
    return rows


def fixture(a, name="fx.db"):
    path = os.path.join(a.work, name)
    if not os.path.exists(path):
        r = run([a.fixture, path])
        assert r.returncode == 0, r.stderr
    return path


def traced_capture(a, argv, name):
    """A capture of a real program, written by the launcher."""
    path = os.path.join(a.work, name)
    r = run([a.memtrace, "-o", path, "--"] + argv)
    assert r.returncode == 0 and os.path.exists(path), r.stderr
    return path


def case_version(a):
    for tool in (a.memtrace, a.memreport):
        name = os.path.basename(tool)
        r = run([tool, "--version"])
        check(r.returncode == 0 and r.stdout == f"{name} {a.version}\n",
              f"{name} --version prints '{name} {a.version}' ({r.stdout.strip()!r})")
    cap = traced_capture(a, ["/bin/ls", "/"], "ls.db")
    v = meta(cap, "tool_version")
    check(v == f"memtrace {a.version}", f"a traced capture's tool_version ({v!r})")
    imp = os.path.join(a.work, "npu.db")
    r = run([a.memreport, "import", os.path.join(a.src, "tests/fixtures/npu/sample.log"),
             "-o", imp])
    v = meta(imp, "tool_version") if r.returncode == 0 else None
    check(v == f"memreport {a.version}", f"an imported capture's tool_version ({v!r})")
    # The version lives in CMakeLists.txt only: no source spells it out.
    literal = re.compile(r'["\s]' + re.escape(a.version) + r'\b')
    found = []
    for top in ("common", "preload", "reporter"):
        for d, _, files in os.walk(os.path.join(a.src, top)):
            for f in files:
                if f.endswith((".c", ".h", ".html", ".js")):
                    p = os.path.join(d, f)
                    text = open(p, encoding="utf-8", errors="replace").read()
                    if literal.search(text) and "unicode_version" not in text:
                        found.append(os.path.relpath(p, a.src))
    check(not found, f"no source hard-codes {a.version} ({found})")


def case_help(a):
    r = run([a.memtrace, "--help"])
    check(r.returncode == 0, "memtrace --help exits 0")
    text = r.stdout
    settings = readme_settings(a)
    check(len(settings) >= 5, f"docs/tracing.md's settings table read ({len(settings)} rows)")
    for i, (name, default) in enumerate(settings):
        at = text.find(name)
        if not check(at >= 0, f"memtrace --help lists {name}"):
            continue
        # Its description runs until the next setting; the default is given in brackets.
        nxt = re.search(r"MEMTRACE_[A-Z_]+", text[at + len(name):])
        desc = text[at:at + len(name) + (nxt.start() if nxt else len(text))]
        check(f"[{default}]" in " ".join(desc.split()),
              f"memtrace --help gives {name}'s default [{default}]")
    # Both come from settings.c's table: neither lists a setting the other does not.
    listed = re.findall(r"^  (MEMTRACE_[A-Z_]+) ", text, re.M)
    check(sorted(listed) == sorted(n for n, _ in settings),
          f"memtrace --help and docs/tracing.md list the same settings ({listed})")
    r = run([a.memreport, "--help"])
    check(r.returncode == 0, "memreport --help exits 0")
    names = commands(a)
    check(len(names) >= 7, f"memreport's dispatch table read ({names})")
    for name in names:
        check(re.search(r"^  " + re.escape(name) + r" +\S.*$", r.stdout, re.M) is not None,
              f"memreport --help lists {name} with a description")
        h = run([a.memreport, name, "--help"])
        check(h.returncode == 0 and h.stdout.startswith(f"usage: memreport {name} "),
              f"memreport {name} --help")


def wrote_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("memreport: wrote ")]


def case_wrote(a):
    fx = fixture(a)
    log = os.path.join(a.src, "tests/fixtures/npu/sample.log")
    out = lambda n: os.path.join(a.work, n)
    runs = [
        (["summary", fx, "-o", out("s.txt")], [out("s.txt")]),
        (["stacks", fx, "-o", out("k.txt")], [out("k.txt")]),
        (["leaks", fx, "-o", out("l.txt")], [out("l.txt")]),
        (["stats", fx, "--json", "-o", out("t.json")], [out("t.json")]),
        (["flamegraph", fx, "-o", out("f.html")], [out("f.html")]),
        (["plot", fx, "-o", out("p.png"), "--data", out("p.json")], [out("p.png"), out("p.json")]),
        (["plot", log, "-o", out("n.svg")], [out("n.svg")]),
        (["import", log, "-o", out("i.db")], [out("i.db")]),
    ]
    for argv, files in runs:
        r = run([a.memreport] + argv)
        lines = wrote_lines(r.stderr)
        want = sorted(f"memreport: wrote {f}" for f in files)
        check(r.returncode == 0 and sorted(lines) == want and all(map(os.path.exists, files)),
              f"{argv[0]} {' '.join(os.path.basename(f) for f in files)}: says {want} "
              f"(rc {r.returncode}, said {lines})")
    # Stdout is no file: nothing to say.
    r = run([a.memreport, "summary", fx])
    check(r.returncode == 0 and r.stderr == "", f"summary to stdout says nothing ({r.stderr!r})")
    # A refused output is not written, and not said to be.
    r = run([a.memreport, "summary", fx, "-o", out("s.txt")])
    check(r.returncode == 3 and not wrote_lines(r.stderr), "a refused output is not announced")


def usage_error(a, argv, first, what, max_lines=5):
    r = run([a.memreport] + argv)
    lines = r.stderr.splitlines()
    ok = (r.returncode == 1 and len(lines) >= 2 and re.fullmatch(first, lines[0]) is not None
          and any(l.startswith("usage: memreport") for l in lines[1:4]) and len(lines) <= max_lines)
    check(ok, f"{what}: exit 1, reason then a short usage hint (rc {r.returncode}: "
              f"{lines[:3]}, {len(lines)} lines)")


def case_usage(a):
    fx = fixture(a)
    usage_error(a, ["summary", fx, fx], r"memreport: .*: given more than once",
                "summary a.db a.db")
    usage_error(a, ["summary"], r"memreport: summary needs a capture", "summary without capture")
    # Without a command, the hint is the list of commands.
    n = len(commands(a)) + 12
    usage_error(a, [], r"memreport: no command given", "memreport alone", n)
    usage_error(a, ["summarize", fx], r"memreport: unknown command 'summarize'",
                "an unknown command", n)
    for name in commands(a):
        if name == "sql":  # sql CAPTURE [QUERY]: its second argument is a query
            usage_error(a, [name, fx, "select 1", fx],
                        r"memreport: sql takes one capture and at most one query, got 3",
                        "sql with two queries")
            continue
        if name == "diff":  # diff BASE NEW: two captures
            usage_error(a, [name, fx, fx, fx],
                        r"memreport: diff takes two captures, BASE and NEW, got 3",
                        "diff with three captures")
            usage_error(a, [name, fx, "--bogus", fx],
                        r"memreport: diff: unrecognized option '--bogus'", "diff --bogus")
            continue
        if name in ("summary", "flamegraph", "stacks", "leaks", "top", "plot", "flow", "stats",
                    "view"):
            usage_error(a, [name, fx, fx], r"memreport: .*: given more than once",
                        f"{name} with one capture twice")
        elif name == "export":  # a tree too, once its required --format is given
            usage_error(a, [name, fx, fx, "--format", "folded"],
                        r"memreport: .*: given more than once", f"{name} with one capture twice")
        else:
            usage_error(a, [name, fx, fx], rf"memreport: {name} takes one [a-z ]+, got 2",
                        f"{name} with two inputs")
        usage_error(a, [name, "--bogus", fx],
                    rf"memreport: {name}: unrecognized option '--bogus'",
                    f"{name} --bogus")
        if name != "live":  # live draws on the terminal: it writes no file
            usage_error(a, [name, fx, "-o"],
                        rf"memreport: {name}: option requires an argument -- 'o'",
                        f"{name} -o without FILE")
    usage_error(a, ["stacks", fx, "--top", "x"], r"memreport: stacks: --top: not a count: 'x'",
                "stacks --top x")


def stacks(a, cap, *extra):
    r = run([a.memreport, "stacks", "--json", cap] + list(extra))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def case_top(a):
    # A real program has hundreds of distinct stacks and leaks (perl frees nothing at exit;
    # a Python start-up's objects are tens of thousands, 100-200 frames deep: this case is
    # not about output size). perl-base is an essential package of Debian.
    cap = traced_capture(a, ["perl", "-e", "my %h = map { $_ => [$_] } 1..50;"], "perl.db")
    every = stacks(a, cap, "--top", "0")
    n = len(every["stacks"])
    check(n > 20 and every["stacks_total"] == n, f"--top 0 shows all {every['stacks_total']} ({n})")
    dflt = stacks(a, cap)
    check(len(dflt["stacks"]) == 20 and dflt["stacks_total"] == n,
          f"stacks shows the top 20 by default ({len(dflt['stacks'])} of {dflt['stacks_total']})")
    check(dflt["stacks"] == every["stacks"][:20], "the default 20 are the 20 with most bytes")
    three = stacks(a, cap, "--top", "3")
    check(three["stacks"] == every["stacks"][:3], f"--top 3 shows 3 ({len(three['stacks'])})")
    r = run([a.memreport, "stacks", cap, "--top", "3"])
    blocks = re.findall(r"^#\d+ ", r.stdout, re.M)
    check(r.returncode == 0 and len(blocks) == 3 and f"top 3 of {n}" in r.stdout,
          f"stacks --top 3 as text: 3 stacks and 'top 3 of {n}' ({len(blocks)})")
    # --top 0 is "all" for every report that takes --top; leaks after a leak scan shows the
    # top N of each kind (docs/leaks.md).
    for cmd, key in (("stats", "by_count"), ("leaks", "groups")):
        r0 = run([a.memreport, cmd, "--json", cap, "--top", "0"])
        r1 = run([a.memreport, cmd, "--json", cap, "--top", "1"])
        g1 = json.loads(r1.stdout)[key] if r1.returncode == 0 else []
        n0 = len(json.loads(r0.stdout)[key]) if r0.returncode == 0 else -1
        n1 = len({g.get("kind") for g in g1}) if len(g1) == len({g.get("kind") for g in g1}) \
            else -1
        check(n1 >= 1 and n0 > n1, f"{cmd} --top 0 shows all {key} ({n0}), --top 1 one of "
              f"each kind ({len(g1)} groups, {n1} kinds)")


def has_noise(obj):
    """Whether a report's JSON names a non-relevant frame of the fixture."""
    return "__libc_start_call_main" in json.dumps(obj)


def case_frames(a):
    fx = fixture(a)
    for cmd in ("stacks", "leaks", "stats"):
        plain = run([a.memreport, cmd, "--json", fx])
        full = run([a.memreport, cmd, "--json", "--all-frames", fx])
        check(plain.returncode == 0 and not has_noise(json.loads(plain.stdout)),
              f"{cmd} hides noise frames by default")
        check(full.returncode == 0 and has_noise(json.loads(full.stdout or "{}")),
              f"{cmd} --all-frames shows them (rc {full.returncode}: {full.stderr.strip()})")
    pages = {}
    for label, extra in (("default", []), ("all", ["--all-frames"])):
        out = os.path.join(a.work, f"fg-{label}.html")
        r = run([a.memreport, "flamegraph", fx, "-o", out] + extra)
        check(r.returncode == 0, f"flamegraph {' '.join(extra)} (rc {r.returncode}: "
                                 f"{r.stderr.strip()})")
        pages[label] = open(out).read() if r.returncode == 0 else ""
    flag = re.compile(r'"all_frames":\s*(true|false)')
    got = {k: (flag.search(v).group(1) if flag.search(v) else None) for k, v in pages.items()}
    check(got == {"default": "false", "all": "true"},
          f"the flame graph page opens with noise frames hidden unless --all-frames ({got})")


def case_special(a):
    fx = fixture(a)
    fifo = os.path.join(a.work, "fifo")
    os.mkfifo(fifo)
    want = run([a.memreport, "summary", fx]).stdout
    for force in ([], ["-f"]):
        # The reader is open first (non-blocking), so the writer's open never waits.
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        r = run([a.memreport, "summary", fx, "-o", fifo] + force)
        got = b""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            got += chunk
        os.close(fd)
        label = "summary -o FIFO" + (" -f" if force else "")
        check(r.returncode == 0, f"{label}: exit 0 (rc {r.returncode}, {r.stderr!r})")
        check(stat.S_ISFIFO(os.lstat(fifo).st_mode), f"{label}: the FIFO is still a FIFO")
        check(got.decode() == want, f"{label}: the reader got the report ({len(got)} bytes)")
    leftovers = [n for n in os.listdir(a.work) if ".tmp." in n]
    check(not leftovers, f"no temporary file left beside the FIFO ({leftovers})")
    r = run([a.memreport, "summary", fx, "-o", a.work, "-f"])
    check(r.returncode == 3 and "is a directory" in r.stderr and os.path.isdir(a.work),
          f"-o DIR -f: refused, exit 3 ({r.returncode}, {r.stderr!r})")
    log = os.path.join(a.src, "tests/fixtures/npu/sample.log")
    r = run([a.memreport, "import", log, "-o", fifo])
    check(r.returncode == 3 and "device or a pipe" in r.stderr and
          stat.S_ISFIFO(os.lstat(fifo).st_mode),
          f"import -o FIFO: refused, exit 3, FIFO kept ({r.returncode}, {r.stderr!r})")


def case_settings(a):
    # A value the tracer cannot take is refused before anything runs, with what it takes.
    out = os.path.join(a.work, "kept.db")
    marker = os.path.join(a.work, "ran")
    refused = [("MEMTRACE_SAMPLE_BYTES", "64k", "a number from 0 to 1073741824"),
               ("MEMTRACE_DEPTH", "0", "a number from 1 to 1024"),
               ("MEMTRACE_UNWIND", "fastest", "one of auto,fp,libunwind"),
               ("MEMTRACE_SAMPLE_SEED", "x", "a number")]
    for name, value, takes in refused:
        open(out, "w").write("mine")
        env = dict(os.environ, **{name: value})
        r = subprocess.run([a.memtrace, "-f", "-o", out, "--", "touch", marker],
                           capture_output=True, text=True, env=env)
        want = f"memtrace: {name}={value}: not a value it takes ({takes}); nothing run\n"
        check(r.returncode == 1 and r.stderr == want,
              f"{name}={value}: refused, exit 1 ({r.returncode}, {r.stderr!r})")
        check(not os.path.exists(marker) and open(out).read() == "mine",
              f"{name}={value}: nothing ran, -f removed nothing")
    env = dict(os.environ, MEMTRACE_SAMPLE_BYTES="4096")
    r = subprocess.run([a.memtrace, "-f", "-o", out, "--", "touch", marker],
                       capture_output=True, text=True, env=env)
    check(r.returncode == 0 and os.path.exists(marker), f"a valid value runs ({r.stderr!r})")
    # Under LD_PRELOAD alone: one line on stderr, the default used, the program unchanged.
    lib = os.path.join(os.path.dirname(a.memtrace), "libmemtrace.so")
    cap = os.path.join(a.work, "preloaded.db")
    env = dict(os.environ, LD_PRELOAD=lib, MEMTRACE_OUTPUT=cap, MEMTRACE_UNWIND="fast\x1b[2J")
    r = subprocess.run(["echo", "hi"], capture_output=True, text=True, env=env)
    want = ("memtrace: MEMTRACE_UNWIND=fast\\x1b[2J: not a value it takes (see memtrace "
            "--help); the default is used\n")
    check(r.returncode == 0 and r.stdout == "hi\n" and r.stderr == want,
          f"LD_PRELOAD with a bad value: one escaped warning, output unchanged ({r.stderr!r})")
    check(meta(cap, "unwinder") == "auto", f"...and the default used ({meta(cap, 'unwinder')})")


def stderr_at_terminal(argv):
    """Runs argv with its stderr a terminal (a pty); its exit code and the lines it wrote."""
    master, slave = pty.openpty()
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    said = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the pty's other end closed: all was read
            break
        if not chunk:
            break
        said += chunk
    os.close(master)
    return r, said.decode().replace("\r", "").splitlines() or [""]


def case_wayin(a):
    cap = os.path.join(a.work, "wayin.db")
    r, lines = stderr_at_terminal([a.memtrace, "-o", cap, "--", "true"])
    # The launcher names the capture relative to its working directory when under it.
    shown = lines[-2].partition("memtrace: capture written to ")[2] if len(lines) > 1 else ""
    check(r.returncode == 0 and shown and os.path.samefile(shown, cap) and
          lines[-1] == f"memtrace: explore it in a browser: memreport view {shown}",
          f"at a terminal the last line names memreport view: {lines!r}")
    r = run([a.memtrace, "-f", "-o", cap, "--", "true"])
    shown = r.stderr.partition("memtrace: capture written to ")[2].rstrip("\n")
    check(r.returncode == 0 and r.stderr.count("\n") == 1 and shown and
          os.path.samefile(shown, cap), f"into a pipe only the capture is named: {r.stderr!r}")
    # A wrapper that ends in exec (a pyenv shim, env): the program the user means is the
    # process's last image, and the last line names its capture.
    cap = os.path.join(a.work, "wrapped.db")
    r, lines = stderr_at_terminal([a.memtrace, "-o", cap, "--", "sh", "-c", "exec true"])
    m = re.fullmatch(r"memtrace: the program ran in process (\d+) as 2 images \(exec\); explore "
                     r"the last in a browser: memreport view (\S+)", lines[-1])
    check(r.returncode == 0 and m and os.path.realpath(meta(m.group(2), "exe") or "") == os.path.realpath(shutil.which("true")) and
          f"memtrace: capture written to {m.group(2)}" in lines,
          f"after an exec the last line names the last image's capture: {lines!r}")


def case_tree(a):
    # Ten processes end well; one is killed with no exit watcher to finish its capture.
    script = "for i in 1 2 3 4 5 6 7 8 9; do /bin/true; done; MEMTRACE_EXIT_WATCH=0 sh -c 'kill -9 $$'"
    out = os.path.join(a.work, "tree") + "/"
    r, lines = stderr_at_terminal([a.memtrace, "-o", out, "--", "sh", "-c", script])
    together = [re.fullmatch(r"memtrace: 10 captures written to (\S+), one a process: memreport "
                             r"summary (\S+) shows them as one run, its processes as a tree", ln)
                for ln in lines if "captures written to" in ln]
    check(len(together) == 1 and together[0] and together[0].group(1) == together[0].group(2)
          and os.path.samefile(together[0].group(1), out),
          f"at a terminal the 10 finished captures in one line: {lines!r}")
    check(len([ln for ln in lines if ln.startswith("memtrace: truncated capture written to ")])
          == 1, f"...and the one killed named on its own: {lines!r}")
    check(not [ln for ln in lines if ln.startswith("memtrace: capture written to")],
          f"...and none of the others: {lines!r}")
    shutil.rmtree(out)
    r = run([a.memtrace, "-o", out, "--", "sh", "-c", script])
    check(r.stderr.count("memtrace: capture written to ") == 10 and
          r.stderr.count("memtrace: truncated capture written to ") == 1,
          f"into a pipe each capture is named: {r.stderr!r}")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    if sys.argv[1:] == ["--list"]:  # tests/cli.cmake makes a test of each
        print("\n".join(CASES))
        return
    if len(sys.argv) != 8 or sys.argv[1] not in CASES:
        sys.exit(__doc__)

    class A:
        pass

    a = A()
    (case, a.version, a.src, a.memtrace, a.memreport, a.fixture, a.work) = sys.argv[1:]
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    # Tests name frames afresh (tests/CMakeLists.txt); the launcher's captures go here.
    os.environ["MEMTRACE_SYMBOL_CACHE"] = "0"
    CASES[case](a)
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)


if __name__ == "__main__":
    main()
