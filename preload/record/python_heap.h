// SPDX-License-Identifier: MIT
// CPython's own allocators (python_heap.c): what PyMem_Malloc and PyObject_Malloc return,
// recorded as heap MT_HEAP_PYTHON, through wrappers installed with PyMem_SetAllocator once the
// interpreter has set its allocators up, as tracemalloc does.
#ifndef MT_PYTHON_HEAP_H
#define MT_PYTHON_HEAP_H

#include <stdatomic.h>
#include <stdbool.h>

// At start (the constructor, before any Python runs): whether this process is a CPython whose
// allocators can be wrapped (then mt_python_waiting is set), and what the capture says about
// it (mt_python_heap_status).
void mt_python_heap_init(void);
// At an attach (the interpreter running already, maybe on another thread than this one):
// whether this process is a CPython whose allocators can be wrapped, and if so a pending
// call that CPython runs in its main thread with the GIL held, at its next check between
// two instructions, wraps them (Py_AddPendingCall needs neither the GIL nor a thread
// state). The wrappers stay after a detach, passing calls through (the library stays).
void mt_python_heap_attach(void);
// Set while the wrappers wait for the interpreter's pre-initialisation to end: the shim's
// malloc calls mt_python_heap_poll, which installs them then.
extern _Atomic int mt_python_waiting;
void mt_python_heap_poll(void);
// The Python seen and what was done with its allocators ("3.11.2: allocators wrapped" or
// why not); NULL for a process that is no CPython.
const char* mt_python_heap_status(void);
// Whether the capture has a python heap (the interpreter's allocators are or will be wrapped).
bool mt_python_heap_on(void);

#endif
