# SPDX-License-Identifier: MIT
# bench/results.txt holds the table of bench/run.py first, then one section per other bench
# script (size.py, short.py), each starting with a line "== TITLE". Each script rewrites only
# its own part, so that the file always shows the latest figures of every script.
import os

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = "== "


def path():
    return os.environ.get("BENCH_RESULTS") or os.path.join(HERE, "results.txt")


def split(text):
    """Returns (main table, {title: section text}) of a results file's text."""
    main, sections, title = [], {}, None
    for line in text.splitlines(keepends=True):
        if line.startswith(MARK):
            title = line[len(MARK):].strip()
            sections[title] = line
        elif title is None:
            main.append(line)
        else:
            sections[title] += line
    return "".join(main), sections


def write(main=None, title=None, section=None):
    """Replaces the main table (main) or the section `title` (section, its body without the
    "== TITLE" line), keeping everything else, through a temporary file and a rename."""
    p = path()
    try:
        with open(p) as f:
            old_main, sections = split(f.read())
    except FileNotFoundError:
        old_main, sections = "", {}
    if main is not None:
        old_main = main if main.endswith("\n") else main + "\n"
    if title is not None:
        sections[title] = f"{MARK}{title}\n{section.rstrip()}\n"
    parts = [old_main.rstrip("\n") + "\n"] if old_main.strip() else []
    parts += ["\n" + s.rstrip("\n") + "\n" for s in sections.values()]
    tmp = p + ".tmp"
    with open(tmp, "w") as f:
        f.write("".join(parts))
    os.replace(tmp, p)
