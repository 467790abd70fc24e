# SPDX-License-Identifier: MIT
"""Python workloads for bench/python.py: `json` (a 20,000-key dict through json, 20 times)
and `deep` (allocations under a recursion 30 Python frames deep); for bench/python_walk.py:
`depth D N` (N bytearrays made D Python frames deep, <module> included, in 10 rounds), which
prints the CPU time of this thread in its fastest round times 10, in ns: the hooks' own cost,
the writer's left out, the rounds a busy machine slowed down left out too."""
import json
import sys
import time

ROUNDS = 10


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


def alloc_loop(n):
    best = None
    for _ in range(ROUNDS):
        t = time.thread_time_ns()
        out = 0
        for i in range(n // ROUNDS):
            out += len(bytearray(600 + (i & 63)))
        t = time.thread_time_ns() - t
        best = t if best is None else min(best, t)
    return best * ROUNDS


def down(k, n):
    return down(k - 1, n) if k > 1 else alloc_loop(n)


if __name__ == "__main__":
    if sys.argv[1] == "depth":
        frames, n = int(sys.argv[2]), int(sys.argv[3])
        if frames > 2:  # <module>, down() frames - 2 times, alloc_loop: `frames` in all
            print(down(frames - 2, n))
        elif frames == 2:
            print(alloc_loop(n))
        else:  # alloc_loop's loop in <module> itself
            best = None
            for _ in range(ROUNDS):
                t = time.thread_time_ns()
                out = 0
                for i in range(n // ROUNDS):
                    out += len(bytearray(600 + (i & 63)))
                t = time.thread_time_ns() - t
                best = t if best is None else min(best, t)
            print(best * ROUNDS)
    else:
        print(json_round_trip() if sys.argv[1] == "json" else deep(30))
