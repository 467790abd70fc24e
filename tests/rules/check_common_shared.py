#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""common/ holds what the tracer and memreport share (CONTRIBUTING.md): each of its .c files
is compiled into the tracer's copy of it (memtrace_common_nosan) or into the build tool
that makes the empty capture both start from (capture_template_gen). Code only memreport
uses (SQL over a capture: sql/) lives elsewhere.

Usage: check_common_shared.py SOURCE_DIR TRACER_SOURCES TOOL_SOURCES (lists joined by '|')
"""
import os
import sys


def main():
    src, tracer, tool = sys.argv[1:4]
    shared = {os.path.basename(f) for f in (tracer + "|" + tool).split("|") if f}
    common = sorted(f for f in os.listdir(os.path.join(src, "common")) if f.endswith(".c"))
    alone = [f for f in common if f not in shared]
    for f in alone:
        print(f"FAIL: common/{f} is not linked into the tracer: memreport's alone")
    print(f"{len(common)} files in common/, {len(alone)} not shared")
    sys.exit(1 if alone else 0)


if __name__ == "__main__":
    main()
