#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# memreport view, in a real browser (headless chromium over WebDriver), of the real traced
# program with hostile names (progs/hostile_names.c: functions named with HTML, a comment
# opener, terminal escapes, Latin-1; a file named evil\e[2J.c) run with hostile arguments,
# and of a tree of it (procs/spawn_all.c starting it once per argument, so that each
# process's name in the header and the legend is made of one): every name is drawn as text
# (in the title, the graph, the functions table, the process names and their titles), no
# script error, nothing in a name runs or becomes an element. Screenshots in WORKDIR.
# Usage: view_hostile.py MEMTRACE MEMREPORT PROG SPAWN_ALL WORKDIR   (exit 77: no browser)
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import webdriver  # noqa: E402
from checks import check, clean_env, finish, fresh_dir  # noqa: E402
from e2e_hostile import FUNCTIONS  # noqa: E402

# Arguments that would run if a page took them for HTML, and ones a terminal would obey.
ARGS = [b"<img src=x onerror=window.__pwned=1>", b"</script><script>window.__pwned=2</script>",
        b"\x1b]0;pwned\x07<!--", b"caf\xe9<svg onload=window.__pwned=3>"]
# Each as the page shows it: JSON keeps a byte that is not UTF-8 as \xNN text.
SHOWN = ["<img src=x onerror=window.__pwned=1>", "</script><script>window.__pwned=2</script>",
         "\x1b]0;pwned\x07<!--", "caf\\xe9<svg onload=window.__pwned=3>"]

SAFE_JS = """return [window.__errors, window.__pwned === undefined,
  document.querySelectorAll('img, iframe, object, embed, #chart svg, #facts svg, ' +
                            '#vtl-legend svg, #title *').length,
  document.getElementById('title').textContent];"""


def safe(b, what):
    errors, unpwned, elements, title = b.js(SAFE_JS)
    check(errors == [], "%s: no script errors: %r" % (what, errors))
    check(unpwned, "%s: nothing in a name ran" % what)
    check(elements == 0, "%s: no element made from a name (%d)" % (what, elements))
    return title


def graph_and_table(b, what):
    drawn = b.js("return Array.from(document.querySelectorAll('#chart .fr'))"
                 ".map(function (d) { return d.dataset.name; })")
    rows = b.js("memreport.showTab('table'); return Array.from(document.querySelectorAll("
                "'#ftable td.fname')).map(function (t) { return t.textContent; })")
    b.js("memreport.showTab('graph')")
    for exact, _, _ in FUNCTIONS:
        check(exact in drawn, "%s: %r drawn in the graph as text" % (what, exact))
        check(exact in rows, "%s: %r in the functions table as text" % (what, exact))


def main():
    launcher, memreport, prog, spawn_all, work = sys.argv[1:6]
    if why := webdriver.missing():
        print("SKIP:", why)
        return 77
    fresh_dir(work)
    cap = os.path.join(work, "hostile.db")
    subprocess.run([launcher, "-o", cap, "--", prog] + ARGS, check=True, capture_output=True,
                   env=clean_env())
    page = os.path.join(work, "hostile.html")
    subprocess.run([memreport, "view", cap, "-o", page], check=True, capture_output=True)
    tree = os.path.join(work, "tree") + "/"
    subprocess.run([launcher, "-o", tree, "--", spawn_all, prog] + ARGS, check=True,
                   capture_output=True, env=clean_env())
    tree_page = os.path.join(work, "tree.html")
    subprocess.run([memreport, "view", tree, "-o", tree_page], check=True, capture_output=True)

    with webdriver.Browser(width=1366, height=768) as b:
        b.get("file://" + page)
        title = safe(b, "one capture")
        check(all(s in title for s in SHOWN), "one capture: the arguments in the title as "
              "text: %r" % title)
        graph_and_table(b, "one capture")
        b.js("memreport.showTab('stacks')")
        stacks = b.js("return document.getElementById('stacks-table').textContent")
        check(all(exact in stacks for exact, _, _ in FUNCTIONS),
              "one capture: every name in the top stacks as text")
        safe(b, "one capture, its tabs shown")
        open(os.path.join(work, "view.png"), "wb").write(b.screenshot())

        b.get("file://" + tree_page)
        safe(b, "tree")
        names = b.js("return Array.from(document.querySelectorAll('#heap-list button, "
                     "#vtl-legend .proc button')).map(function (t) {"
                     " return [t.textContent, t.title]; })")
        kids = [n for n in names if "spawn_all" not in n[1]]
        for s in SHOWN:  # its whole command in the title, its start in the name
            check(sum(1 for n in kids if s in n[1]) == 2,
                  "tree: %r in the title of its process's name, header and legend" % s)
            check(sum(1 for n in kids if s[:10] in n[0]) == 2,
                  "tree: %r in its process's name, header and legend, as text" % s[:10])
        # Each child's page, opened by its name.
        for k in range(1, len(names) // 2):
            heap = b.js("var bt = document.querySelectorAll('#heap-list button')[arguments[0]];"
                        "bt.click(); return bt.dataset.heap", k)
            b.until("return document.readyState === 'complete' && !!window.memreport && "
                    "memreport.heap === arguments[0]", heap)
            safe(b, "tree, process %d's page" % k)
            graph_and_table(b, "tree, process %d" % k)
        open(os.path.join(work, "view-tree.png"), "wb").write(b.screenshot())
    finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
