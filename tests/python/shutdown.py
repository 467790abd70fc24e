# SPDX-License-Identifier: MIT
"""Interpreter shutdown while daemon threads still allocate, some with the GIL released (a
ctypes call): the tracer must not read the thread states the shutdown frees."""
import ctypes
import threading

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
started = threading.Barrier(5)


def python_loop():
    started.wait()
    while True:
        bytearray(4096)


def released_loop():
    started.wait()
    while True:
        libc.free(libc.malloc(4096))


for target in (python_loop, python_loop, released_loop, released_loop):
    threading.Thread(target=target, daemon=True).start()
started.wait()
print("done")
