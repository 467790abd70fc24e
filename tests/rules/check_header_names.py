#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No two headers that are included by their bare name ("output.h") share that name, so
the name alone says which one a file means. Headers under common/include/ and
sql/include/ are included with their folder ("memtrace/sampling.h") and are apart; a build's include path, which
decides which of two headers of one name a file gets, is never a reader's to work out.

Usage: check_header_names.py SOURCE_DIR
"""
import collections
import os
import sys

ROOTS = ("common", "preload", "launcher", "reporter", "sql")


def main():
    src = sys.argv[1]
    seen = collections.defaultdict(list)
    for root in ROOTS:
        for folder, dirs, files in os.walk(os.path.join(src, root)):
            dirs.sort()
            rel = os.path.relpath(folder, src)
            if rel.startswith((os.path.join("common", "include"), os.path.join("sql", "include"))):
                continue
            for f in sorted(files):
                if f.endswith(".h"):
                    seen[f].append(os.path.join(rel, f))
    bad = {name: paths for name, paths in seen.items() if len(paths) > 1}
    for name, paths in sorted(bad.items()):
        print(f"FAIL: {name} names {len(paths)} headers: {', '.join(paths)}")
    print(f"{sum(map(len, seen.values()))} headers, {len(bad)} names shared")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
