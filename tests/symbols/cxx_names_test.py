#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# C++ names as reports show them (docs/names.md), on a program built by g++ whose
# allocations go through the standard library's containers (cxx_names_prog.cpp): text
# shows std::string and <...>, JSON and the page's hovers the names as demangled,
# --full-names those in text too; stats labels its sites by the program's own functions,
# past the standard library; diff's stack rows read innermost first and are cut at the
# outermost end.
# Usage: cxx_names_test.py MEMREPORT MEMTRACE_LAUNCHER PROG WORKDIR
import json
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, finish, page_data, runner  # noqa: E402

STR = "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"
CONSTRUCT = STR + "::_M_construct(unsigned long, char)"
CONSTRUCT_SHORT = "std::string::_M_construct(unsigned long, char)"
NEW_ALLOC_SHORT = "std::__new_allocator<...>::allocate(unsigned long, void const*)"
# The program's functions that use the containers: the sites stats must name.
SITES = {"app::load_names[abi:cxx11](int)", "app::build_index[abi:cxx11](int)",
         "app::Store<app::Record>::add(app::Record const&)", "main"}
# Where a vector's growth allocates, innermost first, as diff's text shows it.
VECTOR_GROWTH = ("std::__new_allocator<...>::allocate < std::allocator_traits<...>::allocate < "
                 "std::_Vector_base<...>::_M_allocate < std::vector<...>::_M_realloc_insert<...> < "
                 "std::vector<...>::push_back < app::Store<...>::add < main")


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: cxx_names_test.py MEMREPORT MEMTRACE_LAUNCHER PROG WORKDIR")
    memreport, launcher, prog, work = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run = runner(memreport)
    caps = []
    for scale in ("1", "2"):
        cap = os.path.join(work, f"run{scale}.db")
        subprocess.run([launcher, "-o", cap, "--", prog, scale], check=True, capture_output=True)
        caps.append(cap)
    cap = caps[0]

    top = run("top", cap, "--top", "0")
    check(CONSTRUCT_SHORT in top and NEW_ALLOC_SHORT in top and "std::__cxx11" not in top,
          "top: std::string and <...> in text, no std::__cxx11")
    full = run("top", cap, "--top", "0", "--full-names")
    check(CONSTRUCT in full, "top --full-names: the name as demangled")
    names = {f["function"] for f in json.loads(run("top", cap, "--json", "--top", "0"))["functions"]}
    check(CONSTRUCT in names and CONSTRUCT_SHORT not in names, "top --json: full names")

    st = json.loads(run("stats", cap, "--json", "--top", "0"))
    sites = {r["site"] for r in st["by_peak"]}
    check(SITES <= sites, f"stats: the program's functions are the sites: {sorted(sites)}")
    check(not any(s.startswith(("std::", "__gnu_cxx::")) for s in sites),
          "stats: no site is a standard library function")
    text = run("stats", cap, "--top", "0")
    check("app::Store<...>::add(app::Record const&)" in text and "std::__cxx11" not in text and
          "wrappers: the C++ standard library" in text,
          "stats: short names in text, the standard library named as what it passed")
    stacks = run("stacks", cap, "--top", "0")
    check("std::vector<...>::push_back(std::string&&)" in stacks and "std::__cxx11" not in stacks,
          "stacks: short names in text")

    diff = run("diff", cap, caps[1], "--top", "0")
    rows = diff.split("stacks, largest change first:")[-1].splitlines()[2:]
    names = [r[51:] for r in rows if r.startswith("  ")]  # past the four columns of numbers
    check(any(n.startswith(VECTOR_GROWTH) for n in names),
          "diff: a stack row innermost first: " + VECTOR_GROWTH)
    longest = max(map(len, names or [""]))
    check(names and longest <= 240 + 100 and any(n.endswith("< ...") for n in names),
          f"diff: long stack rows cut at the outermost end (the longest: {longest} chars)")
    check("stack (innermost first)" in diff, "diff: its header says innermost first")

    page = os.path.join(work, "page.html")
    run("flamegraph", cap, "-o", page)
    d = page_data(page)
    short = {d["strings"][int(k)]: v for k, v in d["short_names"].items()}
    check(short.get(CONSTRUCT) == CONSTRUCT_SHORT, "flame graph: drawn short, full in its data")
    run("flamegraph", cap, "-o", page, "-f", "--full-names")
    check(page_data(page)["short_names"] == {}, "flamegraph --full-names: nothing shortened")
    finish()


if __name__ == "__main__":
    main()
