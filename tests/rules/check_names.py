#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A function a header declares for other files is named after that header
(CONTRIBUTING.md, "names"): `dir/foo_bar.h` declares `mr_foo_bar` or `mr_foo_bar_*` in
reporter/ and `mt_foo_bar` or `mt_foo_bar_*` elsewhere, so a reader who meets the name
knows the file to open. `foo_internal.h` is foo's private half and takes foo's word. The
tracer's exported symbols (`memtrace_*`, the library's ABI, looked up by name by programs
and by `memtrace --pid`) are apart. `static` functions have no prefix and are not checked;
neither are types or macros.

Usage: check_names.py SOURCE_DIR
"""
import os
import re
import sys

ROOTS = ("common", "launcher", "preload", "reporter", "sql")
# Words that can come before "(" in a declaration without being its name.
NOT_NAMES = {"__attribute__", "void", "int", "char", "const", "unsigned", "long", "double",
             "float", "short", "signed", "struct", "union", "enum", "sizeof", "_Alignas",
             "_Static_assert", "static_assert"}


def strip(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"\\\n", " ", text)
    text = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    text = re.sub(r'extern\s*""\s*\{', " ", text)  # C++'s wrapper; its "}" is skipped
    return re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", " ", text)


def statements(text):
    """The top-level declarations of a header: text outside braces, ending at ";" or at the
    end of a function's body."""
    out, cur, depth, before = [], [], 0, ""
    for ch in text:
        if ch == "{":
            if depth == 0:
                before = "".join(cur)
            depth += 1
        elif ch == "}":
            if depth == 0:
                continue
            depth -= 1
            if depth == 0 and before.rstrip().endswith(")"):
                out.append(before)  # a function defined in the header
                cur = []
        elif depth == 0:
            cur.append(ch)
            if ch == ";":
                out.append("".join(cur))
                cur = []
    return out


def declared(path):
    """The names of the non-static functions a header declares."""
    with open(path, encoding="utf-8") as f:
        text = strip(f.read())
    names = []
    for st in statements(text):
        words = st.split()
        if not words or words[0] == "typedef" or "static" in words:
            continue
        m = re.search(r"\b([A-Za-z_]\w*)\s*\(", st)
        if m and m.group(1) not in NOT_NAMES and not m.group(1).isupper():
            names.append(m.group(1))
    return names


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    headers, checked, bad = 0, 0, []
    for root in ROOTS:
        for folder, dirs, files in os.walk(os.path.join(src, root)):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith(".h"):
                    continue
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, src)
                word = f[:-2]
                if word.endswith("_internal"):
                    word = word[: -len("_internal")]
                prefix = ("mr_" if root == "reporter" else "mt_") + word
                headers += 1
                for name in declared(path):
                    if root == "preload" and name.startswith("memtrace_"):
                        continue
                    checked += 1
                    if name != prefix and not name.startswith(prefix + "_"):
                        bad.append(f"{rel}: {name} is not {prefix}_*")
    for b in bad:
        print("FAIL:", b)
    print(f"{headers} headers, {checked} functions, {len(bad)} not named after their header")
    return 1 if bad or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
