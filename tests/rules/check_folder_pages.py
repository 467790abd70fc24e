#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every source folder has a page, README.md, that names each of its source files, and
docs/architecture.md links every page: a file added without a line, a line left for a file
gone, or a folder without a page fails.

Usage: check_folder_pages.py SOURCE_DIR
"""
import os
import re
import sys

ROOTS = ("common", "preload", "launcher", "reporter", "sql")
SOURCE = re.compile(r"\.(c|h|cpp|def)$")


def main():
    src = sys.argv[1]
    architecture = open(os.path.join(src, "docs", "architecture.md")).read()
    bad, pages = [], 0
    for root in ROOTS:
        for folder, dirs, files in os.walk(os.path.join(src, root)):
            dirs.sort()
            sources = sorted(f for f in files if SOURCE.search(f))
            if not sources:
                continue
            rel = os.path.relpath(folder, src)
            page = os.path.join(folder, "README.md")
            if not os.path.exists(page):
                bad.append(f"{rel}/: no README.md naming its files")
                continue
            pages += 1
            text = open(page).read()
            named = set(re.findall(r"^- (?:`[^`]+`(?:, )?)+", text, re.M))
            listed = set()
            for line in named:
                listed.update(re.findall(r"`([^`]+)`", line))
            for f in sources:
                if f not in listed:
                    bad.append(f"{rel}/{f}: not on a line of {rel}/README.md")
            for f in sorted(listed):
                if SOURCE.search(f) and f not in sources:
                    bad.append(f"{rel}/README.md names {f}, which is not in {rel}/")
            if f"{rel}/README.md" not in architecture:
                bad.append(f"docs/architecture.md does not link {rel}/README.md")
    for b in bad:
        print("FAIL:", b)
    print(f"{pages} folder pages, {len(bad)} failures")
    sys.exit(1 if bad or pages < 10 else 0)


if __name__ == "__main__":
    main()
