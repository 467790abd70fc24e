#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# C++ names as reports show them (docs/names.md), on a program built by g++ whose
# allocations go through the standard library's containers (cxx_names_prog.cpp): text
# shows std::string and <...>, JSON and the page's hovers the names as demangled,
# --full-names those in text too; stats labels its sites by the program's own functions,
# past the standard library, and top and diff's function tables give them its bytes as
# their self (the same list of plumbing); diff's stack rows read innermost first and are
# cut at the outermost end; live, flow's boxes (DOT and SVG) and plot --sites' legend show
# the names short too, the whole name in --data, flow --json and flow's tooltips.
# Usage: cxx_names_test.py MEMREPORT MEMTRACE_LAUNCHER PROG WORKDIR
import html
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from checks import check, failures, finish, page_data, runner, skip_without  # noqa: E402

STR = "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"
CONSTRUCT = STR + "::_M_construct(unsigned long, char)"
CONSTRUCT_SHORT = "std::string::_M_construct(unsigned long, char)"
NEW_ALLOC_SHORT = "std::__new_allocator<...>::allocate(unsigned long, void const*)"
# The program's functions that use the containers: the sites stats must name.
SITES = {"app::load_names[abi:cxx11](int)", "app::build_index[abi:cxx11](int)",
         "app::Store<app::Record>::add(app::Record const&)", "main"}
STORE_ADD = "app::Store<app::Record>::add(app::Record const&)"
LOAD_NAMES = "app::load_names[abi:cxx11](int)"
# What they hold at the peak of a run of scale 1, known from the program: load_names' 500
# strings of 100 + i % 3 characters and their vector of 512 32-byte strings, Store's vector
# of 1000 24-byte Records grown to 1024.
SELF_AT_PEAK = {LOAD_NAMES: sum(100 + i % 3 + 1 for i in range(500)) + 512 * 32,
                STORE_ADD: 1024 * 24}
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

    top = run("top", cap, "--top", "0", "--all-frames")
    check(CONSTRUCT_SHORT in top and NEW_ALLOC_SHORT in top and "std::__cxx11" not in top,
          "top --all-frames: std::string and <...> in text, no std::__cxx11")
    full = run("top", cap, "--top", "0", "--all-frames", "--full-names")
    check(CONSTRUCT in full, "top --full-names: the name as demangled")
    names = {f["function"] for f in json.loads(run("top", cap, "--json", "--top", "0",
                                                   "--all-frames"))["functions"]}
    check(CONSTRUCT in names and CONSTRUCT_SHORT not in names, "top --json: full names")

    # top ranks the program's functions past the standard library, as stats does.
    top = json.loads(run("top", cap, "--json", "--top", "0"))
    fns = {f["function"]: f for f in top["functions"]}
    check(not any(n.startswith(("std::", "__gnu_cxx::")) for n in fns),
          f"top: no row is a standard library function: {sorted(fns)}")
    got = {n: fns[n]["self"] if n in fns else None for n in SELF_AT_PEAK}
    check(got == SELF_AT_PEAK, f"top: the program's functions' self at the peak {got}, "
          f"known {SELF_AT_PEAK}")
    check(sum(f["self"] for f in fns.values()) == top["total"], "top: the selves add up")
    check(top.get("passed") == ["the C++ standard library"], "top --json: what it passed")
    text = run("top", cap, "--top", "0")
    check("app::Store<...>::add(app::Record const&)" in text and "std::" not in text and
          "past the C++ standard library" in text, "top: text names what it passed")
    # ABI tags ([abi:cxx11]: the function returns a std::string) are the linker's, not the
    # reader's: text drops them, JSON keeps the name as demangled.
    check("  app::load_names(int) (" in text and "  app::build_index(int) (" in text and
          "[abi:" not in text, "top: no ABI tag in text")
    check(LOAD_NAMES in fns, "top --json: the name with its ABI tag")
    callers = run("top", cap, "--callers", "Store<app::Record>::add")
    check("100.0%  main (" in callers, "top --callers: main calls Store::add, no std:: between")
    st = {r["site"]: r["peak_bytes"] for r in json.loads(run("stats", cap, "--json", "--top", "0"))
          ["by_peak"]}
    same = {n: st.get(n) for n in SELF_AT_PEAK}
    check(same == SELF_AT_PEAK, f"stats: the same sites, the same bytes: {same}")

    st = json.loads(run("stats", cap, "--json", "--top", "0"))
    sites = {r["site"] for r in st["by_peak"]}
    check(SITES <= sites, f"stats: the program's functions are the sites: {sorted(sites)}")
    check(not any(s.startswith(("std::", "__gnu_cxx::")) for s in sites),
          "stats: no site is a standard library function")
    text = run("stats", cap, "--top", "0")
    check("app::Store<...>::add(app::Record const&)" in text and "std::__cxx11" not in text and
          "wrappers: the C++ standard library" in text,
          "stats: short names in text, the standard library named as what it passed")
    check("  app::load_names(int) (" in text and "[abi:" not in text, "stats: no ABI tag in text")
    stacks = run("stacks", cap, "--top", "0")
    check("std::vector<...>::push_back(std::string&&)" in stacks and "std::__cxx11" not in stacks,
          "stacks: short names in text")
    check("app::load_names(int) (" in stacks and "[abi:" not in stacks,
          "stacks: no ABI tag in text")

    diff = run("diff", cap, caps[1], "--top", "0")
    fn_rows = diff.split("stacks, largest change first:")[0].split("function (file)")[-1]
    check("std::" not in fn_rows and "app::Store<...>::add" in fn_rows and
          "past the C++ standard library" in diff,
          "diff: its functions are the program's, past the standard library")
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

    # What is live at the end: Store's vector and the record, by the program's functions.
    rows = re.findall(r"^\s+\S+ \S+\s+(\d+) B\s+(\d+) blocks  (.*)$", run("live", cap, "--once"),
                      re.M)
    live = {name: (int(b), int(n)) for b, n, name in rows}
    check(live.get("app::Store<...>::add(app::Record const&)") == (24576, 1) and
          live.get("app::make_record()") == (24, 1) and
          not any(n.startswith("std::") for n in live), f"live: short names past std: {live}")
    full = run("live", cap, "--once", "--full-names")
    check(STORE_ADD in full, "live --full-names: the name as demangled")

    # flow passes the standard library as top does: its lines fold into their callers,
    # which hold its bytes; --all-frames shows them (and what they allocate) again.
    dot = run("flow", cap)
    labels = re.findall(r"label=<(<table.*?</table>)>", dot)
    check(any("app::Store&lt;...&gt;::add(app::Record const&amp;)" in lb for lb in labels) and
          not any("std::" in lb for lb in labels), f"flow: no std:: box: {labels}")
    flow = json.loads(run("flow", cap, "--json", "--min-share", "0"))
    local = {}
    for n in flow["nodes"]:
        name = n["lines"][-1]["function"]
        local[name] = local.get(name, 0) + n["local"][0]
    got = {n: local.get(n) for n in SELF_AT_PEAK}
    check(got == SELF_AT_PEAK and not any(n.startswith("std::") for n in local),
          f"flow --json: the program's lines hold top's self {got}, no std:: line")
    dot = run("flow", cap, "--all-frames")
    labels = re.findall(r"label=<(<table.*?</table>)>", dot)
    tips = [re.sub(r"\\(.)", r"\1", t)  # a tooltip is a DOT string: \" and \\ escaped
            for t in re.findall(r'tooltip="((?:[^"\\]|\\.)*)"', dot)]
    check(any(CONSTRUCT_SHORT in lb for lb in labels) and
          any("app::Store&lt;...&gt;::add(app::Record const&amp;)" in lb for lb in labels) and
          not any("std::__cxx11" in lb for lb in labels),
          "flow --all-frames: the standard library's boxes, short names")
    check(any(CONSTRUCT in t for t in tips), "flow: the whole names in the boxes' tooltips")
    check(CONSTRUCT in html.unescape(run("flow", cap, "--full-names", "--all-frames")) and
          CONSTRUCT in {ln["function"] for n in json.loads(run("flow", cap, "--json",
                                                                "--all-frames"))["nodes"]
                        for ln in n["lines"]}, "flow --full-names and --json: whole names")

    png, data = os.path.join(work, "sites.png"), os.path.join(work, "sites.json")
    run("plot", cap, "--sites", "6", "-o", png, "--data", data)
    sites = {s["name"]: s.get("short_name") for s in json.load(open(data))["sites"]}
    check(sites.get(STORE_ADD) == "app::Store<...>::add(app::Record const&)" and
          not any(n.startswith("std::") for n in sites),
          f"plot --sites: the legend's short names, the whole ones in --data: {sites}")
    run("plot", cap, "--site", "app::Store<...>::add(app::Record const&)", "-o", png, "-f",
        "--data", data)
    check([s["name"] for s in json.load(open(data))["sites"]] == [STORE_ADD],
          "plot --site takes the name the legend shows")
    run("plot", cap, "--sites", "6", "-o", png, "-f", "--data", data, "--full-names")
    check(not any("short_name" in s for s in json.load(open(data))["sites"]),
          "plot --full-names: nothing shortened")

    if not failures:
        skip_without("dot")  # flow -o FILE.svg runs Graphviz's dot
    svg = os.path.join(work, "flow.svg")
    run("flow", cap, "-o", svg, "--all-frames")
    with open(svg) as f:
        text = f.read()
    shown = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", text)]
    titles = [html.unescape(t) for t in re.findall(r'xlink:title="([^"]*)"', text)]
    check(any(CONSTRUCT_SHORT in t for t in shown) and
          not any("std::__cxx11" in t for t in shown) and
          any(CONSTRUCT in t for t in titles), "flow SVG: short names drawn, whole on hover")
    finish()


if __name__ == "__main__":
    main()
