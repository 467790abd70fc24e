#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The rules every test of this tree follows (tests/README.md), checked on the build's own
list of tests (`ctest --show-only=json-v1`) and on the test area files:

- every test has a label, unit, e2e or fuzz, and a timeout;
- every test is skipped by exit code 77 and by nothing else: SKIP_RETURN_CODE is 77, and no
  test is disabled, skipped by a regular expression or turned into its opposite;
- no test area is included OPTIONAL: a renamed file must fail the configure;
- no unit test or fuzzer makes a temporary directory of its own (tmpdir.h's test_tmpdir
  is the one), nor a random generator of its own (rng.h's test_rng and test_lcg are the
  ones).

Usage: check_rules.py CTEST BUILD_DIR TESTS_SOURCE_DIR
"""
import glob
import json
import os
import re
import subprocess
import sys

LABELS = {"unit", "e2e", "fuzz"}


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    ctest, build, source = sys.argv[1:]
    out = subprocess.run([ctest, "--show-only=json-v1"], cwd=build, capture_output=True,
                         text=True, check=True).stdout
    tests = json.loads(out)["tests"]
    bad = []
    for t in tests:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        labels = set(props.get("LABELS", []))
        if len(labels & LABELS) != 1:
            bad.append(f"{t['name']}: labels {sorted(labels)}, want one of {sorted(LABELS)}")
        if "TIMEOUT" not in props:
            bad.append(f"{t['name']}: no TIMEOUT")
        if props.get("SKIP_RETURN_CODE") != 77:
            bad.append(f"{t['name']}: SKIP_RETURN_CODE {props.get('SKIP_RETURN_CODE')}, want 77")
        for other in ("SKIP_REGULAR_EXPRESSION", "DISABLED", "WILL_FAIL"):
            if other in props:
                bad.append(f"{t['name']}: {other} (exit 77 is the only way to skip)")
    areas = glob.glob(os.path.join(source, "*.cmake")) + [os.path.join(source, "CMakeLists.txt")]
    for path in areas:
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            if re.match(r"\s*include\(.*\bOPTIONAL\b", line):
                bad.append(f"{os.path.basename(path)}:{n}: include(... OPTIONAL)")
    own_dirs = glob.glob(os.path.join(source, "unit", "*.c")) + \
        glob.glob(os.path.join(source, "reports", "*.c")) + \
        glob.glob(os.path.join(source, "fuzz", "*.c"))
    for path in sorted(own_dirs):
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            if re.search(r"\bmkdtemp\s*\(", line):
                bad.append(f"{os.path.relpath(path, source)}:{n}: mkdtemp (use test_tmpdir)")
            if re.search(r"<<\s*13\s*;|6364136223846793005|1103515245", line):
                bad.append(f"{os.path.relpath(path, source)}:{n}: a random generator (use rng.h)")
    for b in bad:
        print("FAIL:", b)
    print(f"{len(tests)} tests, {len(bad)} broken rules")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
