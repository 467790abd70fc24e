#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# e2e: the symbol cache names frames in reports, so only a cache private to the user is used.
# A real cache of the subject is filled, then forged (invented names and lines for the real
# build-id and addresses). The forged names must show when the cache is one's own (the
# control: it proves that every refusal below can fail), and must never show from a cache of
# another user, one that group or others can write, a symlink, or a foreign format; rows
# whose values memtrace would never write are ignored. Refused caches stay untouched.
# Two parts, two ctest tests: `other_owner` (another user's cache or directory: needs chown,
# so it exits 77, skipped, when not run as root) and `own_user` (everything else).
import argparse
import os
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_stacks as cs  # noqa: E402  (trace, stacks, frame_rows and the failure count)

NOBODY = 65534
FORGED_LINE = 4242


def fail(msg):
    cs.fail(msg)


def snapshot(path):
    """What a refused cache must keep: its bytes, mode, owner, and its directory's entries."""
    st = os.lstat(path)
    data = open(path, "rb").read() if os.path.isfile(path) else None
    return (data, st.st_mode, st.st_uid, st.st_mtime_ns,
            sorted(os.listdir(os.path.dirname(path))))


class Forger:
    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        fill = os.path.join(tmp, "fill", "symbols.db")
        cap, _ = cs.trace(args, "trust_fill", ["chain"], {"MEMTRACE_SYMBOL_CACHE": fill})
        self.real = {r[0]: r for r in cs.frame_rows(cap)}  # rel_pc -> (rel_pc, function, ...)
        db = sqlite3.connect(cap)
        self.build_id = db.execute("SELECT build_id FROM mapping WHERE path LIKE '%/subject'"
                                   " AND build_id IS NOT NULL LIMIT 1").fetchone()[0]
        db.close()
        db = sqlite3.connect(fill)
        cached = {r[0] for r in db.execute("SELECT rel_pc FROM sym WHERE build_id=?",
                                           (self.build_id,))}
        db.close()
        # The subject's frames that the cache holds: those are the ones to forge.
        self.pcs = sorted(pc for pc in self.real if pc in cached)
        if len(self.pcs) < 4 or not any(self.real[pc][1] == "chain_c" for pc in self.pcs):
            fail("the filled cache lacks the subject's frames: %s" % sorted(cached))
        self.fill = fill
        self.n = 0

    def make(self, edits=None, forge_all=True):
        """A private copy of the filled cache (dir 0700, file 0600) with every subject row
        forged (forge_all), then edits: {rel_pc: {column: value}} applied on top."""
        self.n += 1
        d = os.path.join(self.tmp, "c%d" % self.n)
        os.makedirs(d)
        os.chmod(d, 0o700)
        path = os.path.join(d, "symbols.db")
        shutil.copy(self.fill, path)
        os.chmod(path, 0o600)
        db = sqlite3.connect(path)
        if forge_all:
            db.execute("UPDATE sym SET function='forged_'||function, file='/forged.c', line=?"
                       " WHERE build_id=?", (FORGED_LINE, self.build_id))
        for pc, cols in (edits or {}).items():
            for col, value in cols.items():
                db.execute("UPDATE sym SET %s=? WHERE build_id=? AND rel_pc=?" % col,
                           (value, self.build_id, pc))
        db.commit()
        db.execute("PRAGMA journal_mode=DELETE")  # one file, nothing beside it
        db.close()
        return path

    def traced_rows(self, cache, label):
        cap, _ = cs.trace(self.args, label.replace(" ", "_"), ["chain"],
                          {"MEMTRACE_SYMBOL_CACHE": cache})
        return {r[0]: r for r in cs.frame_rows(cap)}

    def reported_rows(self, cache, label):
        """The same through memreport: an unsymbolized capture, named on first open."""
        cap, _ = cs.trace(self.args, label.replace(" ", "_"), ["chain"],
                          {"MEMTRACE_SYMBOLIZE": "0", "MEMTRACE_SYMBOL_CACHE": "0"})
        env = dict(os.environ, MEMTRACE_SYMBOL_CACHE=cache)
        p = subprocess.run([self.args.memreport, "stacks", cap], env=env, capture_output=True,
                           text=True)
        if p.returncode != 0:
            fail("%s: memreport exit %d: %s" % (label, p.returncode, p.stderr))
        return {r[0]: r for r in cs.frame_rows(cap)}

    def forged_shown(self, rows, label):
        forged = [r for r in rows.values() if (r[1] or "").startswith("forged_")]
        if not forged:
            fail("%s: control: the forged names of one's own cache are not shown: %s"
                 % (label, sorted(rows.values())))
        elif any(r[3] != FORGED_LINE for r in forged):
            fail("%s: control: forged names without their forged lines: %s" % (label, forged))

    def real_shown(self, rows, label):
        for pc in self.pcs:
            if rows.get(pc) != self.real[pc]:
                fail("%s: frame %#x named %s, the binary says %s"
                     % (label, pc, (rows.get(pc) or (0, None))[:4], self.real[pc][:4]))


def refused(forger, label, cache, through_memreport=False):
    """The cache at `cache` (prepared by the caller) must be ignored and left as it was."""
    before = snapshot(cache)
    forger.real_shown(forger.traced_rows(cache, label), label)
    if through_memreport:
        forger.real_shown(forger.reported_rows(cache, label + "_memreport"), label + " (memreport)")
    if snapshot(cache) != before:
        fail("%s: the refused cache was changed" % label)


PARTS = ["own_user", "other_owner"]


def main():
    if sys.argv[1:] == ["--list"]:  # tests/symbols.cmake makes a test of each
        print("\n".join(PARTS))
        return 0
    ap = argparse.ArgumentParser()
    for opt in ("--memtrace", "--memreport", "--workdir", "--prog"):
        ap.add_argument(opt, required=True)
    ap.add_argument("part", choices=PARTS)
    args = ap.parse_args()
    if args.part == "other_owner" and os.geteuid() != 0:
        print("SKIP: not root, the other-owner cases need chown")
        return 77
    tmp = os.path.join(args.workdir, "cache_trust")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    prog = os.path.join(tmp, "subject")
    shutil.copy(args.prog, prog)
    args.prog = prog
    f = Forger(args, tmp)

    # (e) Control: one's own cache, private and valid, is believed (tracer and memreport).
    f.forged_shown(f.traced_rows(f.make(), "own"), "own")
    f.forged_shown(f.reported_rows(f.make(), "own_memreport"), "own (memreport)")

    # (a) Another user's file, or a file of ours in another user's directory.
    if args.part == "other_owner":
        path = f.make()
        os.chown(path, NOBODY, NOBODY)
        refused(f, "file of uid %d" % NOBODY, path, through_memreport=True)
        path = f.make()
        os.chown(os.path.dirname(path), NOBODY, NOBODY)
        os.chmod(os.path.dirname(path), 0o755)
        refused(f, "directory of uid %d" % NOBODY, path)
        return 1 if cs.failures else 0

    # (b) Writable by group or others: the file, or its directory.
    for mode in (0o666, 0o620, 0o602):
        path = f.make()
        os.chmod(path, mode)
        refused(f, "file mode %o" % mode, path)
    for mode in (0o777, 0o770, 0o1777):
        path = f.make()
        os.chmod(os.path.dirname(path), mode)
        refused(f, "directory mode %o" % mode, path)

    # (c) A symlink at the cache path: to one's own valid cache, and dangling.
    target = f.make()
    link = f.make()
    os.unlink(link)
    os.symlink(target, link)
    before = snapshot(target)
    refused(f, "symlink", link)
    if snapshot(target) != before:
        fail("symlink: its target was changed")
    dangling = os.path.join(os.path.dirname(link), "dangling.db")
    missing = os.path.join(os.path.dirname(link), "missing.db")
    os.symlink(missing, dangling)
    refused(f, "dangling symlink", dangling)
    if os.path.lexists(missing):
        fail("dangling symlink: its target was created")

    # Not our format: another application id (refused), another format version (which an own
    # cache starts over from). The forged names must not show either way.
    for pragma in ("application_id=1234", "user_version=99"):
        path = f.make()
        db = sqlite3.connect(path)
        db.execute("PRAGMA " + pragma)
        db.close()
        if pragma.startswith("application_id"):
            refused(f, pragma, path)
        else:
            f.real_shown(f.traced_rows(path, "version"), pragma)

    # (d) Rows with values memtrace never writes are ignored, each on its own; one row stays
    # validly forged, to show the cache was read at all.
    invalid = [
        {"line": -5},
        {"line": "forty"},
        {"line": 1 << 40},
        {"function": "forged_" + "x" * 70000},
        {"function": b"forged_blob"},
        {"function": ""},
        {"function": "forged_\0nul"},
        {"file": b"/forged_blob.c"},
        {"file": "/" + "f" * 5000},
        {"inlined": "forged_not_json"},
        {"inlined": '{"function":"forged_obj","file":null,"line":1}'},
        {"inlined": '[{"function":"forged_inl","file":null,"line":-1}]'},
        {"inlined": '[{"function":7,"file":null,"line":1}]'},
        {"inlined": '["forged_inl"]'},
        {"relevant": 7},
        {"dwarf": -1},
    ]
    keep, others = f.pcs[0], f.pcs[1:]
    for start in range(0, len(invalid), len(others)):
        batch = invalid[start:start + len(others)]
        edits = {pc: dict(bad, function=bad.get("function", "forged_invalid_row"))
                 for pc, bad in zip(others, batch)}
        path = f.make(edits, forge_all=False)
        db = sqlite3.connect(path)
        db.execute("UPDATE sym SET function='forged_kept', line=? WHERE build_id=? AND"
                   " rel_pc=?", (FORGED_LINE, f.build_id, keep))
        db.commit()
        db.close()
        rows = f.traced_rows(path, "invalid_rows")
        if (rows.get(keep) or (0, ""))[1] != "forged_kept":
            fail("invalid rows: control: the valid forged row is not shown: %s"
                 % (rows.get(keep),))
        for pc, bad in zip(others, batch):
            if rows.get(pc) != f.real[pc]:
                fail("invalid row %s was used: %s" % (
                    {k: (v[:40] if isinstance(v, (str, bytes)) else v) for k, v in bad.items()},
                    (rows.get(pc) or (0, ""))[:4]))
    return 1 if cs.failures else 0


if __name__ == "__main__":
    sys.exit(main())
