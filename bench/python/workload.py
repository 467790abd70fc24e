# SPDX-License-Identifier: MIT
"""Python workloads for bench/python.py: `json` (a 20,000-key dict through json, 20 times)
and `deep` (allocations under a recursion 30 Python frames deep)."""
import json
import sys


def json_round_trip():
    d = {f"key{i}": [i, str(i), {"v": i * 1.5}] for i in range(20000)}
    for _ in range(20):
        d = json.loads(json.dumps(d))
    return len(d)


def deep(n):
    if n:
        return deep(n - 1)
    out = 0
    for i in range(200000):
        out += len(bytearray(600 + (i & 63)))
    return out


if __name__ == "__main__":
    print(json_round_trip() if sys.argv[1] == "json" else deep(30))
