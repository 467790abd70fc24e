#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport export --format speedscope: the file validates against the schema shipped in
# speedscope's npm package (ajv, speedscope/validate.js), and its numbers are memreport's
# own: each profile's weights add up to summary --json's total (peak_bytes, or leaked_bytes
# with --leaks; bytes_allocated; allocations) and to the fixture's truth; samples are
# stacks root first over frames with name, file and line; names that are not UTF-8 stay
# valid JSON. On the standard and hostile fixtures and a real traced program.
# Usage: speedscope_test.py MEMREPORT FIXTURE_TOOL WORKDIR [MEMTRACE_LAUNCHER PROG]
#        (exit 77 = the numbers are right but the schema could not be checked: no node/ajv)
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check_quietly as check, failures  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def export(memreport, cap, out, *args):
    subprocess.run([memreport, "export", cap, "--format", "speedscope", "-o", out, "-f",
                    *args], check=True, capture_output=True)
    raw = open(out, "rb").read()
    doc = json.loads(raw.decode("utf-8"))  # strict UTF-8: fails on raw invalid bytes
    return doc


def stacks(doc, profile):
    """{root-first names joined by ';': weight} of one profile."""
    frames = doc["shared"]["frames"]
    out = {}
    for s, w in zip(profile["samples"], profile["weights"]):
        key = ";".join(frames[i]["name"] for i in s)
        out[key] = out.get(key, 0) + w
    return out


def check_totals(memreport, cap, work, truth=None):
    s = json.loads(subprocess.run([memreport, "summary", cap, "--json"], check=True,
                                  capture_output=True, text=True).stdout)
    name = os.path.basename(cap)
    files = []
    for args, live_key in (((), "peak_bytes"), (("--leaks",), "leaked_bytes")):
        out = os.path.join(work, name + ("-leaks" if args else "") + ".speedscope.json")
        doc = export(memreport, cap, out, *args)
        files.append(out)
        profiles = doc["profiles"]
        check([p["unit"] for p in profiles] == ["bytes", "bytes", "none"],
              "%s: three profiles, units bytes, bytes, none" % name)
        for p, key in zip(profiles, (live_key, "bytes_allocated", "allocations")):
            total = sum(p["weights"])
            check(total == s[key] and p["endValue"] == total and p["startValue"] == 0,
                  "%s %s: profile '%s' weighs summary's %s: %d == %d (endValue %d)"
                  % (name, " ".join(args), p["name"], key, total, s[key], p["endValue"]))
            check(len(p["samples"]) == len(p["weights"]) and all(w > 0 for w in p["weights"]),
                  "%s: '%s': one positive weight per sample" % (name, p["name"]))
            if truth:
                check(total == truth[key], "%s: %s is the fixture's truth %d"
                      % (name, key, truth[key]))
    return files, doc


def check_standard(memreport, fixture, work):
    cap = os.path.join(work, "std.db")
    subprocess.run([fixture, cap], check=True)
    # tests/reports/fixture.c: peak 10364 B at seq 7 (7 us); 4814 B live at the end; 9
    # allocations (the realloc's new block included) of 11314 B.
    files, _ = check_totals(memreport, cap, work, {"peak_bytes": 10364, "leaked_bytes": 4814,
                                                   "bytes_allocated": 11314, "allocations": 9})
    doc = export(memreport, cap, os.path.join(work, "std-count.json"), "--metric", "count")
    check(doc["activeProfileIndex"] == 2, "--metric count: the count profile is shown first")
    doc = json.load(open(files[0], encoding="utf-8"))
    names = [p["name"] for p in doc["profiles"]]
    check(names == ["live bytes at the peak (7 us)", "bytes allocated (whole run)",
                    "allocations (whole run)"], "profile names say what they hold: %r" % names)
    frames = {f["name"]: f for f in doc["shared"]["frames"]}
    check(frames.get("parse_file") == {"name": "parse_file", "file": "parse.c", "line": 30},
          "frames carry name, file and line: %r" % frames.get("parse_file"))
    check(frames.get("prog+0x1234") == {"name": "prog+0x1234"},
          "a frame without line info has a name only")
    check(len(frames) == len(doc["shared"]["frames"]), "each frame is listed once")
    live = stacks(doc, doc["profiles"][0])
    # Root first: main, load_config, parse_file; operator new (noise) is hidden.
    check(live == {"main;load_config;parse_file": 1000, "main;make_node": 4000,
                   "main;cache_put": 300, "main;prog+0x1234": 64, "worker": 5000},
          "live stacks at the peak, root first: %r" % live)
    alloc = stacks(doc, doc["profiles"][1])
    check(alloc.get("main;make_node") == 4200 and alloc.get("worker") == 5050,
          "allocated bytes per stack: %r" % alloc)
    return files


def check_hostile(memreport, fixture, work):
    cap = os.path.join(work, "hostile.db")
    subprocess.run([fixture, "--hostile", cap], check=True)
    truth = {"peak_bytes": 2700, "leaked_bytes": 2700, "bytes_allocated": 2700,
             "allocations": 6}
    files, doc = check_totals(memreport, cap, work, truth)
    names = {f["name"] for f in doc["shared"]["frames"]}
    check("caf\\xe9_alloc" in names and "hi\\xff" in names,
          "invalid UTF-8 in names reads \\xNN: %r" % sorted(names))
    check("</script><script>window.__pwned=1</script>" in names, "HTML names kept as text")
    return files


def main():
    memreport, fixture, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    files = check_standard(memreport, fixture, work) + check_hostile(memreport, fixture, work)
    if len(sys.argv) > 5:
        cap = os.path.join(work, "prog.db")
        subprocess.run([sys.argv[4], "-o", cap, "--", sys.argv[5]], check=True)
        more, doc = check_totals(memreport, cap, work)
        files += more
        live = {k: v for k, v in stacks(doc, doc["profiles"][1]).items() if "peak_phase" in k}
        check(live == {"main;peak_phase": 100000}, "traced: peak_phase allocated 100000 B "
              "(%r)" % live)
    if not shutil.which("node"):
        print("SKIP: node is not installed: the schema was not checked")
        return 1 if failures else 77
    rc = subprocess.run(["node", os.path.join(HERE, "speedscope", "validate.js"), *files]).returncode
    if rc == 77:
        return 1 if failures else 77
    check(rc == 0, "every file validates against speedscope's file-format-schema.json")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
