# SPDX-License-Identifier: MIT
"""Allocations whose Python stacks are known: each scenario allocates a bytearray of a size
no other allocation has, from a Python function, and writes down the Python stack that
CPython itself gives at that moment (frame by frame through f_back: qualname, file, and
f_lineno, which is PyCode_Addr2Line of the frame's instruction). check_python_frames.py
compares it with the capture's stack of that size.

Usage: scenarios.py OUT.json [SCENARIO...]   (all scenarios when none is named)
"""
import asyncio
import functools
import json
import re
import sys
import threading

expected = {}
lock = threading.Lock()
next_size = [1_000_003]


def stack_of(frame):
    out = []
    while frame is not None:
        out.append([frame.f_code.co_qualname, frame.f_code.co_filename, frame.f_lineno])
        frame = frame.f_back
    return out


def alloc(label):
    """A bytearray of a new size, its expected stack written down (this frame included)."""
    with lock:
        size = next_size[0]
        next_size[0] += 8
    frame = sys._getframe()
    stack = stack_of(frame)
    # This frame runs the bytearray call two lines down, not this one.
    stack[0][2] = frame.f_lineno + 2
    expected[label] = {"bytes": size + 1, "stack": stack}
    return bytearray(size)


# ---- the scenarios


def make_big():
    return bytearray(50_000_000)  # line: make_big


class K:
    def method(self):
        return alloc("method")


def outer():
    b = make_big()  # line: outer
    k = K().method()
    return b, k


def s_basic():
    global kept
    kept = outer()


def s_nested_calls():
    def level3():
        return alloc("nested")

    def level2():
        return level3()

    def level1():
        return [level2() for _ in range(1)]

    return level1()


def s_multiline_call():
    return functools.reduce(
        lambda acc, x: acc + [alloc(f"reduce {x}")],
        range(2),
        [],
    )


def s_generators():
    def inner_gen():
        yield alloc("generator")
        yield alloc("generator again")

    def outer_gen():
        yield from inner_gen()

    kept = list(outer_gen())
    kept.extend(alloc(f"genexpr {i}") for i in range(2))
    return kept


def s_coroutines():
    async def leaf():
        await asyncio.sleep(0)
        return alloc("coroutine")

    async def agen():
        yield alloc("async generator")

    async def main():
        a = await leaf()
        b = [x async for x in agen()]
        return a, b

    return asyncio.run(main())


def s_exceptions():
    kept = []
    try:
        try:
            raise ValueError("x")
        except ValueError:
            kept.append(alloc("except"))
            raise
        finally:
            kept.append(alloc("finally"))
    except ValueError:
        pass
    return kept


class WithDel:
    def __del__(self):
        kept_del.append(alloc("__del__"))


kept_del = []


def s_del():
    o = WithDel()
    del o


def s_callbacks():
    kept = []
    sorted([3, 1, 2], key=lambda v: kept.append(alloc(f"sort key {v}")) or v)
    re.sub("a", lambda m: kept.append(alloc("re.sub")) or "b", "xa")
    json.loads('{"k": 1}', object_hook=lambda d: kept.append(alloc("object_hook")) or d)
    return kept


def s_threads():
    kept = []

    def work(i):
        kept.append(alloc(f"thread {i}"))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return kept


def s_gil_released():
    import ctypes

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    with lock:
        size = next_size[0]
        next_size[0] += 8
    frame = sys._getframe()
    stack = stack_of(frame)
    stack[0][2] = frame.f_lineno + 2
    expected["ctypes malloc, GIL released"] = {"bytes": size, "stack": stack}
    p = libc.malloc(size)
    libc.free(p)


def s_many_threads():
    """500 short-lived threads, each allocating: no expected stack, nothing may break."""
    kept = []

    def work(i):
        kept.append(bytearray(2000 + i))

    for batch in range(10):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(kept) == 500


def s_fork():
    """A forked child's capture has its own Python stacks (written to OUT.child.json)."""
    import os

    pid = os.fork()
    if pid == 0:
        expected.clear()
        kept = alloc("fork child")
        with open(sys.argv[1] + ".child.json", "w") as f:
            json.dump({"pid": os.getpid(), "expected": expected}, f)
        os._exit(0 if kept else 1)
    _, status = os.waitpid(pid, 0)
    assert status == 0


def reuse_leaf(size):
    return bytearray(size)


def reuse_call(depth, size):
    return reuse_call(depth - 1, size) if depth else reuse_leaf(size)


def s_code_reuse():
    """Code objects made, run and freed in turn: each new one takes the address of the last
    (pymalloc hands out the block freed last), its frame the same place on the stack, calling
    from the same instruction, and all allocations in between come from fewer frames: each
    must still be named for what it is."""
    import gc

    for i in range(4):
        with lock:
            size = next_size[0]
            next_size[0] += 8
        ns = {"reuse_call": reuse_call}
        # The function's code object is made larger than the module's: a size class of its own.
        body = "    size += 0\n" * 12 + "    return reuse_call(5, size)\n"
        module = compile(f"def f_{i}(size):\n{body}", f"<reuse{i}>", "exec")
        exec(module, ns)
        kept = ns[f"f_{i}"](size)  # the first allocation this deep since the last one
        line = sys._getframe().f_lineno - 1
        stack = [["reuse_leaf", __file__, reuse_leaf.__code__.co_firstlineno + 1]]
        stack += [["reuse_call", __file__, reuse_call.__code__.co_firstlineno + 1]] * 6
        stack += [[f"f_{i}", f"<reuse{i}>", 14]] + stack_of(sys._getframe())
        stack[8][2] = line
        expected[f"code reuse {i}"] = {"bytes": size + 1, "stack": stack}
        del ns, kept
        gc.collect()  # the function and its globals are a cycle
        del module  # its code, then the function's, freed last: the next one's place


def child_work(n):
    return len(bytearray(n))


def s_multiprocessing():
    """Children made by multiprocessing (fork and spawn) are traced with Python frames."""
    import multiprocessing

    for method in ("fork", "spawn"):
        pool = multiprocessing.get_context(method).Pool(2)
        assert pool.map(child_work, [300000, 300008]) == [300000, 300008]
        pool.close()  # the workers end as they would untraced: no terminate
        pool.join()


SCENARIOS = {name[2:]: fn for name, fn in list(globals().items()) if name.startswith("s_")}

if __name__ == "__main__":
    out = sys.argv[1]
    for name in sys.argv[2:] or SCENARIOS:
        SCENARIOS[name]()
    import os

    with open(out, "w") as f:
        json.dump({"pid": os.getpid(), "expected": expected}, f, indent=1)
    print("scenarios done")
