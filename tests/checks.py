# SPDX-License-Identifier: MIT
# What the Python test drivers share: checks that are counted, not fatal (each prints
# `ok: WHAT` or `FAIL: WHAT` on stdout, in the order they ran), and memreport runs that
# must succeed. A driver imports it with
#     sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
#     sys.path.insert(0, <this folder>)
#     from checks import check, failures  # noqa: E402
# and exits 1 when `failures` (what each failed check said) is not empty, whatever else
# it skipped (exit 77 only when every check it ran passed).
import atexit
import json
import math
import os
import re
import select
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import zlib

failures = []


def check(cond, what):
    """Prints and counts one check; returns cond so a caller can stop what depends on it."""
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)
    return cond


def check_quietly(cond, what):
    """check() printing only a failure: for drivers whose checks run by the thousand (one per
    damaged capture, per exported line) and say what went wrong."""
    return cond if cond else check(cond, what)


def page_data(path):
    """The data a flame graph page (memreport flamegraph, view, diff --html) embeds."""
    with open(path) as f:
        m = re.search(r'<script type="application/json" id="fg-data">(.*?)</script>', f.read(),
                      re.S)
    return json.loads(m.group(1))


def runner(memreport):
    """A function running memreport with the given arguments, returning its stdout; a
    failing run ends the test with its stderr."""
    def run(*args):
        p = subprocess.run([memreport, *args], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"memreport {' '.join(args)} exited {p.returncode}: {p.stderr}")
        return p.stdout
    return run


# The processes a driver started: bail() kills those still running before it gives up.
children = []


def kill_children():
    """Kills the children still running (a driver's last word, whatever ended it)."""
    for p in children:
        if p.poll() is None:
            p.kill()
            p.wait()


def bail(why):
    """Ends the driver with `why` (a failure), killing its children first: never a hang."""
    kill_children()
    sys.exit(why)


def skip_without(tool):
    """Exits 77 (skipped), saying why, where `tool` is not installed."""
    if not shutil.which(tool):
        print(f"skip: {tool} is not installed (scripts/install-deps.sh --test installs it)")
        sys.exit(77)


def wait_readable(fd, what, timeout=120):
    """Waits until fd has something to read, or bails after timeout seconds."""
    r, _, _ = select.select([fd], [], [], timeout)
    if not r:
        bail(f"timed out waiting for {what}")


def finish():
    """Ends the driver: exit 1 with the count of failed checks, if any."""
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")


def clean_env(**settings):
    """The test's environment without any MEMTRACE_* setting, plus `settings` (names without
    the MEMTRACE_ prefix)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTRACE_")}
    env.update({f"MEMTRACE_{k}": str(v) for k, v in settings.items()})
    return env


def fresh_dir(path):
    """An empty directory at `path` (what an earlier run left there removed)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)


def public_copies(*paths, mode=0o755):
    """What another user (nobody) runs or reads, copied into a fresh directory of the system's
    temporary one that every user reaches (a checkout in a private directory is out of their
    reach); removed when the driver ends. Returns [the directory, the copies in order]."""
    d = tempfile.mkdtemp(prefix="memtrace-public-", dir="/tmp")
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    os.chmod(d, mode)
    copies = []
    for path in paths:
        copies.append(os.path.join(d, os.path.basename(path)))
        shutil.copy(path, copies[-1])
    return [d] + copies


def traced(launcher, out, argv, **settings):
    """Runs `argv` under the memtrace launcher writing to `out` (a capture, or DIR/ for a
    process tree), in clean_env(**settings); the finished run, its output as text."""
    return subprocess.run([launcher, "-o", out, "--", *argv], capture_output=True, text=True,
                          env=clean_env(**settings))


def exit_watchers(output):
    """The pids of the exit watchers (preload/writer/exit_watch.c) of the programs writing to
    `output`: tasks named memtrace-watch whose environment, read from the program's memory
    they share, holds MEMTRACE_OUTPUT=output."""
    want = f"MEMTRACE_OUTPUT={output}".encode()
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm", "rb") as f:
                if f.read().strip() != b"memtrace-watch":
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if want in f.read().split(b"\0"):
                    pids.append(int(pid))
        except OSError:  # ended meanwhile, or another user's
            continue
    return pids


def wait_for_exit_watchers(output, timeout=60):
    """exit_watchers(output) once there is one (it names itself just after the program's
    capture starts), or [] after `timeout` seconds."""
    for _ in range(int(timeout / 0.01)):
        pids = exit_watchers(output)
        if pids:
            return pids
        time.sleep(0.01)
    return []


def memreport_sql(memreport, cap, query):
    """The values of a one-column query on a capture, as strings (`memreport sql --csv`);
    none where memreport cannot read it."""
    r = subprocess.run([memreport, "sql", cap, "--csv", query], capture_output=True, text=True)
    return r.stdout.split()[1:]


def capture_meta(capture):
    """A finished capture's meta rows, as strings (never a running one: tests/README.md)."""
    db = sqlite3.connect(capture)
    rows = {k: str(v) for k, v in db.execute("SELECT key, value FROM meta").fetchall()}
    db.close()
    return rows


UNIT_NS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
COMMIT_WAIT = 30  # s; the tracer commits every 10 ms: only a bound for one that never does


def callsite_rows(memreport, capture):
    """Every callsite (id, parent_id, frame_id, depth) as memreport sql shows table callsite:
    a schema 6 capture keeps them compressed in callsite_chunk."""
    r = subprocess.run([memreport, "sql", "--csv", capture,
                        "SELECT id, parent_id, frame_id, depth FROM callsite ORDER BY id"],
                       capture_output=True, text=True, check=True)
    return [tuple(int(v) for v in line.split(",")) for line in r.stdout.splitlines()[1:]]


def old_layout(memreport, src, dst):
    """A copy of capture src as a schema 5 tracer wrote it: one row per callsite in table
    callsite, no callsite_chunk."""
    rows = callsite_rows(memreport, src)
    shutil.copyfile(src, dst)
    db = sqlite3.connect(dst)
    db.execute("DELETE FROM callsite")
    db.executemany("INSERT INTO callsite VALUES(?,?,?,?)", rows)
    db.execute("DROP TABLE IF EXISTS callsite_chunk")
    db.execute("PRAGMA user_version = 5")
    db.commit()
    db.close()
    return rows


def committed_time(memreport, path):
    """The time of the capture as of the tracer's last commit (ns), or None if it cannot be
    read yet: `memreport live --once`, which reads a running capture without disturbing the
    tracer. (Not sqlite3 here: a connection closed without SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
    which Python cannot set, checkpoints a -wal the tracer has just created, empty, and
    deletes it: the tracer then writes into a file no one can read.)"""
    r = subprocess.run([memreport, "live", path, "--once"], capture_output=True, text=True,
                       timeout=120)
    m = re.search(r"^time:\s+([0-9.]+) (ns|us|ms|s)$", r.stdout, re.M)
    return float(m.group(1)) * UNIT_NS[m.group(2)] if r.returncode == 0 and m else None


def wait_for_commit_after_now(memreport, path):
    """Waits until the tracer has committed everything recorded before this call: two
    commits (each a later time) after the first one read. The first of them may have begun
    before the call; the second began after the first ended. With a tracer that never
    commits it returns after COMMIT_WAIT s, and the caller's checks fail on what it had."""
    seen, commits, deadline = None, 0, time.monotonic() + COMMIT_WAIT
    while commits < 2 and time.monotonic() < deadline:
        t = committed_time(memreport, path)
        if t is not None and seen is not None and t > seen:
            commits += 1
        if t is not None and (seen is None or t > seen):
            seen = t
        time.sleep(0.05)


def png_rows(path):
    """png_decode() of a file."""
    with open(path, "rb") as f:
        return png_decode(f.read())


def png_decode(data):
    """(width, height, rows of bytes) of an 8-bit RGB/RGBA PNG, decoded with zlib alone;
    rows is None for another kind of PNG, and the whole None for a damaged one."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if zlib.crc32(kind + body) != struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]:
            return None
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color, _, _, interlace = hdr
    if depth != 8 or color not in (2, 6) or interlace:
        return w, h, None
    bpp = 3 if color == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        at = y * (stride + 1)
        ftype, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        for i in range(stride):  # undo the PNG filters (type 0..4)
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows


def plot_layout(path):
    """The plot areas of a memreport plot (a cairo PNG) and what is drawn around them:
    [(left, top, right, bottom, dark_inside, colours_above)], a frame being found by its
    left and right edges (dark columns of one span, far apart); dark_inside counts the
    near-black pixels (text: a legend's) inside it (6 px in from the edges, which the axes'
    ticks may lengthen), colours_above the distinct saturated colours (the legend's
    swatches) in the 45 rows above it. None when the file is not an 8-bit PNG."""
    img = png_rows(path)
    if img is None or img[2] is None:
        return None
    w, h, rows = img
    bpp = len(rows[0]) // w

    def px(x, y):
        i = x * bpp
        return rows[y][i], rows[y][i + 1], rows[y][i + 2]

    def dark(c, limit=128):
        return max(c) < limit

    spans = {}  # (top, bottom) of dark vertical runs of 60 px or more -> their columns
    for x in range(w):
        y = 0
        while y < h:
            if not dark(px(x, y)):
                y += 1
                continue
            y0 = y
            while y < h and dark(px(x, y)):
                y += 1
            if y - y0 >= 60:  # with the span of about the same rows (a tick may lengthen
                # an edge by a few pixels), or a new one
                key = next((k for k in spans if abs(k[0] - y0) <= 6 and abs(k[1] - y + 1) <= 6),
                           (y0, y - 1))
                spans.setdefault(key, []).append((x, y0, y - 1))
    frames = []
    for cols in spans.values():
        left, right = min(cols), max(cols)
        if right[0] - left[0] < w // 2:
            continue
        l, r, t, b = left[0], right[0], max(left[1], right[1]), min(left[2], right[2])
        inside = sum(1 for y in range(t + 6, b - 5) for x in range(l + 6, r - 5)
                     if dark(px(x, y), 90))
        above = set()
        for y in range(max(0, t - 45), t - 1):
            for x in range(l, r + 1):
                c = px(x, y)
                if max(c) - min(c) > 60:  # saturated: a swatch, not text or grey
                    above.add(tuple(v >> 4 for v in c))
        frames.append((l, t, r, b, inside, len(above)))
    return sorted(frames, key=lambda f: f[1])


# Colours, (r, g, b) of 0..255: how far apart two look (CIEDE2000) and how well one reads on
# the other (WCAG contrast), for the checks of the pages' and the plots' series.
SERIES_APART = 20  # the least CIEDE2000 distance between two series of a plot or a page


def rgb(s):
    """(r, g, b) of a CSS rgb() or rgba() value."""
    return tuple(int(float(v)) for v in s.replace("rgba(", "").replace("rgb(", "")
                 .rstrip(")").split(",")[:3])


def luminance(c):
    lin = [v / 255 / 12.92 if v / 255 <= 0.04045 else ((v / 255 + 0.055) / 1.055) ** 2.4
           for v in c[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a, b):
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def lab(c):
    lin = [v / 255 / 12.92 if v / 255 <= 0.04045 else ((v / 255 + 0.055) / 1.055) ** 2.4
           for v in c[:3]]
    x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
    y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883
    f = [t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def de2000(c1, c2):
    """CIEDE2000 colour difference (Sharma, Wu and Dalal's formulation)."""
    (l1, a1, b1), (l2, a2, b2) = lab(c1), lab(c2)
    cb = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(cb ** 7 / (cb ** 7 + 25 ** 7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1, b1), math.hypot(a2, b2)
    h1, h2 = math.degrees(math.atan2(b1, a1)) % 360, math.degrees(math.atan2(b2, a2)) % 360
    dh = 0 if c1p * c2p == 0 else (h2 - h1 if abs(h2 - h1) <= 180 else
                                   h2 - h1 - 360 if h2 > h1 else h2 - h1 + 360)
    dl, dc = l2 - l1, c2p - c1p
    dhh = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    lb, cbp = (l1 + l2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        hb = h1 + h2
    elif abs(h1 - h2) <= 180:
        hb = (h1 + h2) / 2
    else:
        hb = (h1 + h2 + 360) / 2 if h1 + h2 < 360 else (h1 + h2 - 360) / 2
    t = (1 - 0.17 * math.cos(math.radians(hb - 30)) + 0.24 * math.cos(math.radians(2 * hb)) +
         0.32 * math.cos(math.radians(3 * hb + 6)) - 0.20 * math.cos(math.radians(4 * hb - 63)))
    rc = 2 * math.sqrt(cbp ** 7 / (cbp ** 7 + 25 ** 7))
    rt = -math.sin(math.radians(60 * math.exp(-((hb - 275) / 25) ** 2))) * rc
    sl = 1 + 0.015 * (lb - 50) ** 2 / math.sqrt(20 + (lb - 50) ** 2)
    sc, sh = 1 + 0.045 * cbp, 1 + 0.015 * cbp * t
    return math.sqrt((dl / sl) ** 2 + (dc / sc) ** 2 + (dhh / sh) ** 2 +
                     rt * (dc / sc) * (dhh / sh))


def legend_colours(path):
    """The series' colours of each legend of a memreport plot (a cairo PNG), read from its
    pixels: [[(r, g, b), ...] per plot area, in the legend's order], or None when the file is
    not an 8-bit PNG. A legend's swatch (a line sample or a band's rectangle) is a run of at
    least 20 pixels of one colour on a row, which no letter makes; a line's anti-aliased
    edges are runs too, paler, so each swatch gives the colour farthest from white of its
    runs. A marker (the peak's dot) is no run: it is not a series. The legend is what lies
    between a plot area and the one above it (or the image's top)."""
    img = png_rows(path)
    frames = plot_layout(path)
    if img is None or img[2] is None or frames is None:
        return None
    w, _, rows = img
    bpp = len(rows[0]) // w
    out, above = [], 0  # the rows between the plot area above (or the top) and this one
    for left, top, right, bottom, _, _ in frames:
        swatches = {}  # (first column, last column, row of the swatch) -> its colour
        rows_above, above = range(above, top - 1), bottom + 8  # past the axis line
        for y in rows_above:
            x = left
            while x <= right:
                c = tuple(rows[y][x * bpp:x * bpp + 3])
                end = x
                while end + 1 <= right and tuple(rows[y][(end + 1) * bpp:(end + 1) * bpp + 3]) == c:
                    end += 1
                if end - x + 1 >= 20 and c != (255, 255, 255):
                    # The runs of one swatch start and end at the same columns, on rows next
                    # to each other.
                    key = next((k for k in swatches if abs(k[0] - x) <= 1 and abs(k[1] - end) <= 1
                                and abs(k[2] - y) <= 16), (x, end, y))
                    old = swatches.get(key)
                    if old is None or sum(c) < sum(old):
                        swatches[key] = c
                x = end + 1
        out.append([c for _, c in sorted(swatches.items(), key=lambda kv: (kv[0][2] // 12,
                                                                           kv[0][0]))])
    return out
