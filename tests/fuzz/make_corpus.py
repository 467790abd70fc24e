#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the fuzzers' seed corpus (tests/fuzz/corpus/) from real inputs. Run by hand when
a format changes, then commit the files:

  make_corpus.py CORPUS_DIR --npu LOG... --capture CAPTURE...

- capture/: each CAPTURE (as NAME.capture), rewritten with 512-byte pages (VACUUM) so the fuzzer mutates
  a few kB instead of 4 kB pages of mostly zeros;
- codec/: every event chunk of those captures with fewer than 65536 events, as
  fuzz_codec reads them: 2 bytes little-endian event count, then the chunk's encoded
  events (without the checksum of codecs 2 and 3);
- npu/: the first 60 lines of each LOG (give both formats: current and legacy 2025).
Python 3 standard library only.
"""
import argparse
import hashlib
import os
import shutil
import sqlite3
import sys


def small_capture(src, dst):
    tmp = dst + ".tmp"
    shutil.copyfile(src, tmp)
    db = sqlite3.connect(tmp)
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("PRAGMA page_size=512")
    db.execute("VACUUM")
    db.close()
    os.replace(tmp, dst)


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("corpus")
    ap.add_argument("--npu", nargs="+", default=[])
    ap.add_argument("--capture", nargs="+", default=[])
    args = ap.parse_args()
    for sub in ("capture", "codec", "npu"):
        os.makedirs(os.path.join(args.corpus, sub), exist_ok=True)
    for cap in args.capture:
        # Not *.db: .gitignore leaves those out of the repository.
        name = os.path.splitext(os.path.basename(cap))[0]
        dst = os.path.join(args.corpus, "capture", f"{name}.capture")
        small_capture(cap, dst)
        db = sqlite3.connect(f"file:{dst}?mode=ro", uri=True)
        rows = db.execute("SELECT id, count, codec, data FROM event_chunk WHERE count < 65536")
        for _, count, codec, data in rows:
            if codec in (2, 3, 4, 5):  # the chunk's CRC32C (4 bytes) follows what the decoders read
                data = data[:-4]
            seed = count.to_bytes(2, "little") + data
            # Named by content: the same events in two captures make one seed.
            digest = hashlib.sha1(seed).hexdigest()[:16]
            with open(os.path.join(args.corpus, "codec", f"chunk-{digest}.bin"), "wb") as f:
                f.write(seed)
        db.close()
    for i, log in enumerate(args.npu):
        with open(log, "rb") as f:
            lines = f.read().splitlines(keepends=True)[:60]
        with open(os.path.join(args.corpus, "npu", f"log{i}.log"), "wb") as f:
            f.writelines(lines)


if __name__ == "__main__":
    main()
