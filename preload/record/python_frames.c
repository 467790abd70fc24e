// SPDX-License-Identifier: MIT
// Python frames (python_frames.h). The interpreter's frame chain of the calling thread is
// read from memory with each version's own layout: generated from its headers for 3.11 and
// 3.12 (python_layout_gen.h), read from _Py_DebugOffsets for 3.13. A run of frames is placed
// by address: its anchor (3.11: the _PyCFrame local of its evaluation loop; 3.12+: the
// entry frame, also a local there) lies in the stack frame of exactly one native frame.
// Code objects are named at first sight (they may be freed right after), keyed by (code,
// instruction offset) and checked on every hit, since a code object's address is reused;
// a frame found again unchanged is not checked again until some code object is freed.
// Runs inside malloc: never allocates from the traced heap, calls no Python function that
// allocates, locks or runs Python code; memory comes from mmap.
#include "python_frames.h"

#include "config.h"
#include "core.h"
#include "maps.h"
#include "say.h"
#include "trie.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

typedef struct py_layout {
    unsigned version; // major << 8 | minor
    unsigned runtime_tss_key, runtime_finalizing, runtime_interpreters_head;
    unsigned tstate_thread_id, tstate_cframe, cframe_current_frame, cframe_previous;
    unsigned tstate_current_frame; // 3.13+: frames hang off the thread state (no _PyCFrame)
    unsigned frame_code, frame_previous, frame_instr, frame_owner, frame_is_entry;
    unsigned code_firstlineno, code_filename, code_qualname, code_linetable;
    unsigned code_firsttraceable, code_adaptive, code_size;
    unsigned bytes_size, bytes_data;
    unsigned str_length, str_state, str_ascii_data, str_compact_data, str_utf8, str_utf8_length;
    unsigned str_kind_mask, str_compact_mask, str_ascii_mask;
    int owner_generator, owner_cstack; // owner_cstack -1: 3.11 (runs end at is_entry)
} py_layout;

static const py_layout generated[] = {
#include "python_layout_gen.h"
};

bool mt_python_frames_on;
static py_layout L;
static uintptr_t runtime, code_type, unicode_type, bytes_type;
static void* (*attached_state)(void);
static void* (*gilstate_state)(void);
static char status[160];
static _Atomic uint64_t walks_failed;
// Code objects freed so far, counted once CPython's allocators are wrapped: until the next
// one is, the frames the walks have checked need not be checked again (collect).
static _Atomic bool frees_watched;
static _Atomic uint64_t code_frees;

static inline uintptr_t rd(uintptr_t addr, unsigned off) {
    return *(const uintptr_t*)(addr + off);
}

static inline uintptr_t type_of(uintptr_t obj) {
    return rd(obj, 8); // ob_type, after ob_refcnt, in every default build
}

// ---- names: (function, file, line) interned once, shared by all threads

// Reserved at start, touched as used: a program names at most a few hundred thousand lines.
#define NAMES_MAX (1u << 20)
#define NAME_SLOTS (1u << 21)
#define ARENA_BYTES (64u << 20)
#define NAME_BYTES 512 // longer names and file names are cut

typedef struct py_name {
    uint32_t function, file; // offsets into the arena of NUL-terminated strings
    int32_t line;
    uint64_t hash;
} py_name;

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static py_name* names;       // by id - 1
static uint32_t* name_slots; // open addressing: id, 0 empty
static char* arena;
static size_t arena_used;
static _Atomic uint32_t names_count; // published after the entry is written
static uint64_t hash_key[2];

static uint64_t mix(uint64_t x) {
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    return x ^ (x >> 32);
}

// Keyed: names and file names are the program's.
static uint64_t hash_bytes(uint64_t h, const char* s, size_t n) {
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = 0;
        memcpy(&w, s + i, n - i < 8 ? n - i : 8);
        h = mix(h ^ w ^ hash_key[1]) + i;
    }
    return mix(h ^ n);
}

static void* map_reserve(size_t bytes) {
    void* p = mt_own_pages(mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0),
                           bytes);
    return p == MAP_FAILED ? NULL : p;
}

static uint32_t arena_put(const char* s, size_t n) {
    if (arena_used + n + 1 > ARENA_BYTES)
        return UINT32_MAX;
    uint32_t off = (uint32_t)arena_used;
    memcpy(arena + off, s, n);
    arena[off + n] = 0;
    arena_used += n + 1;
    return off;
}

// The id of (function, file, line), 0 when the tables are full.
static uint32_t name_intern(const char* fn, size_t fn_len, const char* file, size_t file_len,
                            int line) {
    uint64_t h =
        hash_bytes(hash_bytes(hash_key[0] ^ (uint64_t)(uint32_t)line, fn, fn_len), file, file_len);
    uint32_t id = 0;
    // A signal handler of the program that allocates must not find the lock taken by the
    // thread it interrupted (it would wait forever): blocked while it is held.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pthread_mutex_lock(&names_lock);
    uint32_t n = atomic_load_explicit(&names_count, memory_order_relaxed);
    size_t j = h & (NAME_SLOTS - 1);
    for (; name_slots[j]; j = (j + 1) & (NAME_SLOTS - 1)) {
        const py_name* e = &names[name_slots[j] - 1];
        if (e->hash == h && e->line == line && !strncmp(arena + e->function, fn, fn_len) &&
            !arena[e->function + fn_len] && !strncmp(arena + e->file, file, file_len) &&
            !arena[e->file + file_len]) {
            id = name_slots[j];
            break;
        }
    }
    if (!id && n + 1 < NAMES_MAX && (n + 1) * 2 < NAME_SLOTS) {
        uint32_t f = arena_put(fn, fn_len), g = arena_put(file, file_len);
        if (f != UINT32_MAX && g != UINT32_MAX) {
            names[n] = (py_name){f, g, line, h};
            id = n + 1;
            name_slots[j] = id;
            atomic_store_explicit(&names_count, id, memory_order_release);
        }
    }
    pthread_mutex_unlock(&names_lock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return id;
}

bool mt_python_frames_name(uintptr_t pc, const char** function, const char** file, int* line) {
    if (pc <= MT_PY_PC_BASE || pc >= MT_PY_PC_END)
        return false;
    uint64_t id = pc - MT_PY_PC_BASE;
    if (id > atomic_load_explicit(&names_count, memory_order_acquire))
        return false;
    const py_name* e = &names[id - 1];
    *function = arena + e->function;
    *file = arena + e->file;
    *line = e->line;
    return true;
}

// ---- reading code objects (at first sight only)

// A str's text as UTF-8 into out (cut at cap - 1 bytes); its length, 0 if it is no str.
static size_t read_str(uintptr_t s, char* out, size_t cap) {
    if (!s || type_of(s) != unicode_type)
        return 0;
    uint32_t state = *(const uint32_t*)(s + L.str_state);
    if (!(state & L.str_compact_mask))
        return 0;
    size_t len = rd(s, L.str_length), n = 0;
    if (state & L.str_ascii_mask) {
        n = len < cap - 1 ? len : cap - 1;
        memcpy(out, (const char*)(s + L.str_ascii_data), n);
    } else if (rd(s, L.str_utf8)) {
        size_t u = rd(s, L.str_utf8_length);
        n = u < cap - 1 ? u : cap - 1;
        memcpy(out, (const char*)rd(s, L.str_utf8), n);
    } else {
        unsigned kind = (state & L.str_kind_mask) >> __builtin_ctz(L.str_kind_mask);
        const unsigned char* d = (const unsigned char*)(s + L.str_compact_data);
        for (size_t i = 0; i < len; i++) {
            uint32_t c = kind == 1   ? d[i]
                         : kind == 2 ? ((const uint16_t*)d)[i]
                                     : ((const uint32_t*)d)[i];
            char u[4];
            size_t k;
            if (c < 0x80) {
                u[0] = (char)c;
                k = 1;
            } else if (c < 0x800) {
                u[0] = (char)(0xc0 | c >> 6);
                u[1] = (char)(0x80 | (c & 0x3f));
                k = 2;
            } else if (c < 0x10000) {
                u[0] = (char)(0xe0 | c >> 12);
                u[1] = (char)(0x80 | (c >> 6 & 0x3f));
                u[2] = (char)(0x80 | (c & 0x3f));
                k = 3;
            } else {
                u[0] = (char)(0xf0 | c >> 18);
                u[1] = (char)(0x80 | (c >> 12 & 0x3f));
                u[2] = (char)(0x80 | (c >> 6 & 0x3f));
                u[3] = (char)(0x80 | (c & 0x3f));
                k = 4;
            }
            if (n + k > cap - 1)
                break;
            memcpy(out + n, u, k);
            n += k;
        }
    }
    out[n] = 0;
    return n;
}

static unsigned varint(const uint8_t** p, const uint8_t* end) {
    unsigned read = *p < end ? *(*p)++ : 0, val = read & 63, shift = 0;
    while ((read & 64) && *p < end && shift < 24) {
        read = *(*p)++;
        shift += 6;
        val |= (read & 63) << shift;
    }
    return val;
}

// The line of the instruction at byte offset addr, as PyCode_Addr2Line gives it, from the
// location table (the format of 3.11 to 3.13: entries of 1-8 code units, each starting
// with a byte whose top bit is set; codes 13 and 14 give a signed line delta, 10-12 a delta
// of 0-2, 15 no line).
static int addr_to_line(const uint8_t* p, size_t len, int firstlineno, int addr) {
    if (addr < 0)
        return firstlineno;
    const uint8_t* end = p + len;
    int line = firstlineno, ar_end = 0;
    while (p < end) {
        uint8_t first = *p++;
        int code = first >> 3 & 15, delta = 0;
        if (code == 13 || code == 14) {
            const uint8_t* q = p;
            unsigned u = varint(&q, end);
            delta = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
        } else if (code >= 10 && code <= 12) {
            delta = code - 10;
        }
        line += delta;
        ar_end += ((first & 7) + 1) * 2;
        if (addr < ar_end)
            return code == 15 ? -1 : line;
        while (p < end && !(*p & 128))
            p++;
    }
    return -1;
}

// ---- per thread: the code cache and the walk's buffers

#define CODE_SLOTS 1024
#define MAX_PY 1100

typedef struct code_entry {
    uintptr_t code, qualname, filename, linetable;
    int32_t lasti, firstlineno;
    uintptr_t pc;
} code_entry;

// A merged stack this thread made before, by its key, with its callsite id.
#define MEMO_SLOTS 1024
typedef struct stack_memo {
    uint64_t h1, h2;
    int n;
    mt_callsite_memo memo;
} stack_memo;

// A frame of the previous walks at one depth: its pc at the last few instructions it was
// seen at (a loop allocates at a handful of them in turn), by the instruction's offset from
// the code object. Two cache lines, the second one read only for the innermost frames.
#define LAST_INSTRS 8
typedef struct last_frame {
    _Alignas(64) uintptr_t frame; // 0: nothing kept
    uintptr_t code;
    uint32_t offset[LAST_INSTRS], id[LAST_INSTRS]; // id: the pc's name id, 0: slot unused
    uint32_t next;                                 // the slot replaced next
} last_frame;

// The code object's names the entry was made with (see collect).
typedef struct last_names {
    uintptr_t qualname, linetable;
} last_names;

typedef struct py_thread {
    code_entry codes[CODE_SLOTS];
    stack_memo memos[MEMO_SLOTS];
    int run_pos[MAX_PY];  // the native frame run r goes after, -1: not placeable
    uintptr_t pc[MAX_PY]; // Python frames, innermost first
    // The previous walks' frames, innermost first: a frame found again at the same place,
    // running the same code, at one of the instructions it was seen at there, takes its pc
    // without a lookup.
    last_frame last[MAX_PY];
    last_names last_names[MAX_PY];
    uint64_t last_epoch; // code_frees when last[0 .. last_valid - 1] were last checked
    int last_valid;
    // Run r's place among the native frames at the last walk (counted from the outermost:
    // the same for every allocation below that evaluation loop, whatever the native leaf).
    int run_at[MAX_PY];
    int run_end[MAX_PY];                     // run r: frames run_end[r - 1] .. run_end[r] - 1
    uintptr_t run_anchor[MAX_PY];            // where run r's evaluation loop keeps its state
    uintptr_t out[MT_UNWIND_MAX_FRAMES * 2]; // the merged stack
    char fn[NAME_BYTES], file[NAME_BYTES * 4];
} py_thread;

static __thread py_thread* tls_py __attribute__((tls_model("initial-exec")));

static py_thread* this_py_thread(void) {
    if (MT_UNLIKELY(!tls_py)) {
        void* p = mt_own_pages(mmap(NULL, sizeof(py_thread), PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                               sizeof(py_thread));
        tls_py = p == MAP_FAILED ? NULL : p;
    }
    return tls_py;
}

void mt_python_frames_thread_exit(void) {
    py_thread* pt = tls_py;
    tls_py = NULL;
    if (pt)
        munmap(pt, sizeof *pt);
}

// The pc of the frame running `code` at instr (0: cannot be named).
static uintptr_t frame_pc(py_thread* pt, uintptr_t code, uintptr_t instr) {
    int32_t lasti = (int32_t)(((intptr_t)instr - (intptr_t)(code + L.code_adaptive)) / 2);
    uintptr_t qualname = rd(code, L.code_qualname), filename = rd(code, L.code_filename);
    uintptr_t linetable = rd(code, L.code_linetable);
    int32_t firstlineno = *(const int32_t*)(code + L.code_firstlineno);
    code_entry* e = &pt->codes[mix(code ^ (uint64_t)(uint32_t)lasti << 48) & (CODE_SLOTS - 1)];
    // Another code object at the same address has other names or another line table.
    if (MT_LIKELY(e->code == code && e->lasti == lasti && e->qualname == qualname &&
                  e->filename == filename && e->linetable == linetable &&
                  e->firstlineno == firstlineno))
        return e->pc;
    if (!linetable || type_of(linetable) != bytes_type)
        return 0;
    int line = addr_to_line((const uint8_t*)(linetable + L.bytes_data),
                            (size_t)rd(linetable, L.bytes_size), firstlineno, lasti * 2);
    size_t fn_len = read_str(qualname, pt->fn, sizeof pt->fn);
    size_t file_len = read_str(filename, pt->file, sizeof pt->file);
    if (!fn_len)
        return 0;
    uint32_t id = name_intern(pt->fn, fn_len, pt->file, file_len, line);
    if (!id)
        return 0;
    *e = (code_entry){code, qualname, filename, linetable, lasti, firstlineno, MT_PY_PC_BASE + id};
    return e->pc;
}

// ---- the walk

void mt_python_frames_watch_frees(void) {
    atomic_store(&frees_watched, true);
    // Frames checked before were checked when frees were not seen: checked again.
    atomic_fetch_add(&code_frees, 1);
}

void mt_python_frames_freeing(const void* p) {
    // Read before the block is freed: a code object's header, else the start of a block of
    // at least 16 bytes (all that CPython's allocators give).
    if (type_of((uintptr_t)p) == code_type)
        atomic_fetch_add_explicit(&code_frees, 1, memory_order_release);
}

// Walks of threads whose GIL is released, counted in stripes so that threads walking at once
// do not share a cache line; the free and munmap hooks read them only while the runtime is
// finalizing.
#define STRIPES 64
static struct { _Alignas(64) _Atomic int n; } detached_walks[STRIPES];
static __thread int walking_detached __attribute__((tls_model("initial-exec")));

static inline uintptr_t finalizing_now(void) {
    return __atomic_load_n((const uintptr_t*)(runtime + L.runtime_finalizing), __ATOMIC_SEQ_CST);
}

void mt_python_frames_wait_walks(bool fence) {
    if (MT_LIKELY(!finalizing_now()) || walking_detached)
        return; // (a signal handler of a walking thread must not wait for its own walk)
    if (fence)
        atomic_thread_fence(memory_order_seq_cst);
    for (int i = 0; i < STRIPES; i++)
        while (atomic_load_explicit(&detached_walks[i].n, memory_order_acquire))
            __builtin_ia32_pause();
}

// This thread's own thread state: the attached one when it is this thread's (3.11 keeps
// the GIL holder's there), else the one the GIL state API keeps for it (a C call that
// released the GIL: *detached). 0 before the runtime has an interpreter, and while another
// thread finalizes the runtime (it frees other threads' states).
static uintptr_t this_state(bool* detached) {
    unsigned long me = (unsigned long)pthread_self();
    uintptr_t ts = (uintptr_t)attached_state();
    *detached = !ts || rd(ts, L.tstate_thread_id) != me;
    if (*detached) {
        if (!rd(runtime, L.runtime_interpreters_head))
            return 0;
        ts = (uintptr_t)gilstate_state();
        if (!ts || rd(ts, L.tstate_thread_id) != me)
            return 0;
    }
    uintptr_t finalizing = rd(runtime, L.runtime_finalizing);
    return finalizing && finalizing != ts ? 0 : ts;
}

// The pc kept for instr in a frame's entry, 0 if none.
static inline uintptr_t last_pc(const last_frame* lf, uintptr_t instr) {
    uint32_t offset = (uint32_t)(instr - lf->code);
    for (int i = 0; i < LAST_INSTRS; i++)
        if (lf->offset[i] == offset)
            return lf->id[i] ? MT_PY_PC_BASE + lf->id[i] : 0;
    return 0;
}

// A frame whose code object passed its check, not found in its depth's entry: named and
// kept as Python frame *nf unless it has not started yet or cannot be named.
static void name_frame(py_thread* pt, uintptr_t frame, uintptr_t code, uintptr_t instr, int owner,
                       int max, int* nf) {
    int32_t first = *(const int32_t*)(code + L.code_firsttraceable);
    // A frame pushed but not yet started (its prefix of cell set-up) is not shown, as in
    // tracebacks.
    if (*nf >= max ||
        (owner != L.owner_generator && instr < code + L.code_adaptive + (uintptr_t)first * 2))
        return;
    // Code objects may have been freed since the entry was made: a freed code object's
    // address may hold another one by now, with other names.
    last_frame* lf = &pt->last[*nf];
    last_names* ln = &pt->last_names[*nf];
    uintptr_t qualname = rd(code, L.code_qualname), linetable = rd(code, L.code_linetable);
    uintptr_t pc = 0;
    if (lf->frame == frame && lf->code == code && ln->qualname == qualname &&
        ln->linetable == linetable) {
        pc = last_pc(lf, instr);
    } else {
        *lf = (last_frame){.frame = frame, .code = code};
        *ln = (last_names){qualname, linetable};
    }
    if (!pc) {
        pc = frame_pc(pt, code, instr);
        if (!pc)
            return; // left out (a name that is no str, or full tables); looked at again
        uint32_t i = lf->next++ % LAST_INSTRS;
        lf->offset[i] = (uint32_t)(instr - code);
        lf->id[i] = (uint32_t)(pc - MT_PY_PC_BASE);
    }
    pt->pc[(*nf)++] = pc;
}

// Reads the frames of thread state ts, innermost first, into pt (at most max). Returns the
// number of runs, or -1 when a frame fails its check.
static int collect(py_thread* pt, uintptr_t ts, int max) {
    uintptr_t cframe = 0, frame;
    if (L.tstate_current_frame) {
        frame = rd(ts, L.tstate_current_frame);
    } else {
        cframe = rd(ts, L.tstate_cframe);
        if (!cframe)
            return 0;
        frame = rd(cframe, L.cframe_current_frame);
    }
    int nf = 0, nruns = 0;
    uint64_t epoch = atomic_load_explicit(&code_frees, memory_order_acquire);
    int valid =
        atomic_load_explicit(&frees_watched, memory_order_relaxed) && pt->last_epoch == epoch
            ? pt->last_valid
            : 0;
    // In registers: the stores below might otherwise be taken to change them.
    const unsigned o_code = L.frame_code, o_owner = L.frame_owner, o_instr = L.frame_instr;
    const unsigned o_previous = L.frame_previous, o_is_entry = L.frame_is_entry;
    const int cstack = L.owner_cstack;
    // Frames past `max` are not kept, but walked on for the anchors of those kept.
    for (int hops = 0; frame && hops < 4 * MAX_PY; hops++) {
        uintptr_t code = rd(frame, o_code);
        int owner = *(const uint8_t*)(frame + o_owner);
        if (owner == cstack) {
            // 3.12+: the entry frame of an evaluation loop ends the run inside it.
            if (nf > (nruns ? pt->run_end[nruns - 1] : 0)) {
                pt->run_end[nruns] = nf;
                pt->run_anchor[nruns++] = frame;
                if (nf >= max)
                    break;
            }
            frame = rd(frame, o_previous);
            continue;
        }
        uintptr_t instr = rd(frame, o_instr);
        uintptr_t pc = 0;
        last_frame* lf = &pt->last[nf < max ? nf : 0];
        // No code object freed since this depth's entry was checked: a frame at the same
        // place holding the same code pointer holds the very object checked then (a frame
        // owns a reference to its code), type and names included.
        if (nf < valid && lf->frame == frame && lf->code == code)
            pc = last_pc(lf, instr);
        if (pc) {
            pt->pc[nf++] = pc;
        } else if (!code || type_of(code) != code_type) {
            pt->last_valid = 0;
            return -1;
        } else {
            name_frame(pt, frame, code, instr, owner, max, &nf);
        }
        if (cstack < 0 && *(const uint8_t*)(frame + o_is_entry)) {
            // 3.11: the entry frame of an evaluation loop ends the run its _PyCFrame holds.
            if (nf > (nruns ? pt->run_end[nruns - 1] : 0)) {
                pt->run_end[nruns] = nf;
                pt->run_anchor[nruns++] = cframe;
            }
            cframe = cframe ? rd(cframe, L.cframe_previous) : 0;
            if (nf >= max)
                break;
        }
        frame = rd(frame, o_previous);
    }
    // Each depth up to nf was found again or checked now.
    pt->last_valid = nf > valid ? nf : valid;
    pt->last_epoch = epoch;
    return nruns;
}

void mt_python_frames_add(mt_stack* st, int max, uintptr_t stack_hi) {
    // A walk through a signal handler may find the interpreter mid-update: nothing then.
    if (!st->sps || st->signal_frame || !st->n)
        return;
    bool detached;
    uintptr_t ts = this_state(&detached);
    py_thread* pt = ts ? this_py_thread() : NULL;
    if (!pt)
        return;
    int nruns;
    if (detached) {
        // Counted before the flag is read again: a shutdown that began meanwhile either
        // sees this walk (and waits for it) or is seen here.
        _Atomic int* n = &detached_walks[(uintptr_t)pt / sizeof *pt % STRIPES].n;
        atomic_fetch_add_explicit(n, 1, memory_order_seq_cst);
        walking_detached = 1;
        nruns = finalizing_now() ? 0 : collect(pt, ts, max < MAX_PY ? max : MAX_PY);
        walking_detached = 0;
        atomic_fetch_sub_explicit(n, 1, memory_order_release);
    } else {
        nruns = collect(pt, ts, max < MAX_PY ? max : MAX_PY);
    }
    if (nruns <= 0) {
        if (nruns < 0)
            atomic_fetch_add_explicit(&walks_failed, 1, memory_order_relaxed);
        return;
    }
    // Native frames come outermost first, stack pointers falling; runs innermost first,
    // anchors rising. A run goes after the native frame i with sps[i] <= anchor < sps[i-1].
    const uintptr_t* pcs = st->pcs;
    const uintptr_t* sps = st->sps;
    int n = st->n, total = n;
    // The merged stack's key: the native stack's hash (known already) followed by each
    // run's place and frames; the merged pcs say both, so equal stacks hash equal.
    mt_stackhash h = st->hash_later ? mt_stackhash_of(pcs, n) : st->hash;
    for (int r = nruns - 1; r >= 0; r--) {
        uintptr_t anchor = pt->run_anchor[r];
        // The first i with sps[i] <= anchor: most often where it was at the last walk.
        int lo = pt->run_at[r];
        if (lo < 0 || lo >= n || sps[lo] > anchor || (lo && sps[lo - 1] <= anchor)) {
            int hi = n;
            lo = 0;
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (sps[mid] <= anchor)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            pt->run_at[r] = lo;
        }
        // Not on this thread's stack (a run of another C stack), or below the leaf: not
        // placeable.
        pt->run_pos[r] = (stack_hi && anchor >= stack_hi) || lo == n ? -1 : lo;
        if (pt->run_pos[r] < 0)
            continue;
        mt_stackhash_add(&h, (uintptr_t)lo);
        for (int k = pt->run_end[r] - 1, end = r ? pt->run_end[r - 1] : 0; k >= end; k--)
            mt_stackhash_add(&h, pt->pc[k]);
        total += pt->run_end[r] - (r ? pt->run_end[r - 1] : 0);
    }
    if (total == n)
        return;
    // A stack seen before on this thread: its callsite id, without merging or a lookup.
    stack_memo* sm = &pt->memos[(h.h1 ^ (uint64_t)total) & (MEMO_SLOTS - 1)];
    if (sm->h1 == h.h1 && sm->h2 == h.h2 && sm->n == total && mt_trie_memo_valid(&sm->memo)) {
        st->memo = &sm->memo;
        return;
    }
    uintptr_t* out = pt->out;
    int m = 0, r = nruns - 1;
    for (int i = 0; i < n; i++) {
        out[m++] = pcs[i];
        for (; r >= 0 && (pt->run_pos[r] < 0 || pt->run_pos[r] == i); r--)
            for (int k = pt->run_end[r] - 1, lo = r ? pt->run_end[r - 1] : 0;
                 pt->run_pos[r] >= 0 && k >= lo; k--)
                out[m++] = pt->pc[k];
    }
    int from = m > max ? m - max : 0;
    st->pcs = out + from;
    st->sps = NULL;
    st->n = m - from;
    st->truncated |= from > 0;
    st->hash_later = false;
    st->hash = from ? mt_stackhash_of(st->pcs, st->n) : h;
    // The walk cache's callsite is the native stack's alone: this stack's goes here.
    *sm = (stack_memo){.h1 = h.h1, .h2 = h.h2, .n = total};
    st->memo = &sm->memo;
}

// ---- start: which Python, and its layout

static void say(const char* why) {
    char line[256];
    int n = snprintf(line, sizeof line, "memtrace: Python frames off: %s\n", why);
    if (n > 0)
        mt_say(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

// 3.13's _Py_DebugOffsets, the start of _PyRuntime: 64-bit words by index.
enum {
    DO_VERSION = 1,
    DO_FREE_THREADED = 2,
    DO_FINALIZING = 4,
    DO_INTERPRETERS_HEAD = 5,
    DO_TSTATE_CURRENT_FRAME = 23,
    DO_TSTATE_THREAD_ID = 24,
    DO_FRAME_PREVIOUS = 29,
    DO_FRAME_EXECUTABLE = 30,
    DO_FRAME_INSTR = 31,
    DO_FRAME_OWNER = 33,
    DO_CODE_SIZE = 34,
    DO_CODE_FILENAME = 35,
    DO_CODE_QUALNAME = 37,
    DO_CODE_LINETABLE = 38,
    DO_CODE_FIRSTLINENO = 39,
    DO_CODE_ADAPTIVE = 43,
    DO_BYTES_OB_SIZE = 65,
    DO_BYTES_OB_SVAL = 66,
    DO_UNICODE_STATE = 68,
    DO_UNICODE_LENGTH = 69,
    DO_UNICODE_ASCII_SIZE = 70,
};

static int layout_from_debug_offsets(unsigned version, char* why, size_t len) {
    const uint64_t* d = (const uint64_t*)runtime;
    if (memcmp(d, "xdebugpy", 8) != 0 || (d[DO_VERSION] >> 16 & 0xffff) != version) {
        snprintf(why, len, "CPython %u.%u: _PyRuntime has no debug offsets of its version",
                 version >> 8, version & 0xff);
        return -1;
    }
    if (d[DO_FREE_THREADED]) {
        snprintf(why, len, "CPython %u.%u is a free-threaded build (not supported)", version >> 8,
                 version & 0xff);
        return -1;
    }
    if (version != 0x30d) { // the debug offsets' own layout changes with the version
        snprintf(why, len, "CPython %u.%u: its layout is not known (3.11 to 3.13 are)",
                 version >> 8, version & 0xff);
        return -1;
    }
    uint64_t ascii = d[DO_UNICODE_ASCII_SIZE];
    L = (py_layout){
        .version = version,
        .runtime_finalizing = (unsigned)d[DO_FINALIZING],
        .runtime_interpreters_head = (unsigned)d[DO_INTERPRETERS_HEAD],
        .tstate_thread_id = (unsigned)d[DO_TSTATE_THREAD_ID],
        .tstate_current_frame = (unsigned)d[DO_TSTATE_CURRENT_FRAME],
        .frame_code = (unsigned)d[DO_FRAME_EXECUTABLE],
        .frame_previous = (unsigned)d[DO_FRAME_PREVIOUS],
        .frame_instr = (unsigned)d[DO_FRAME_INSTR],
        .frame_owner = (unsigned)d[DO_FRAME_OWNER],
        .code_firstlineno = (unsigned)d[DO_CODE_FIRSTLINENO],
        .code_filename = (unsigned)d[DO_CODE_FILENAME],
        .code_qualname = (unsigned)d[DO_CODE_QUALNAME],
        .code_linetable = (unsigned)d[DO_CODE_LINETABLE],
        // Not among the debug offsets: _co_firsttraceable is an int followed by co_extra, a
        // pointer, just before co_code_adaptive (as in 3.11 and 3.12).
        .code_firsttraceable = (unsigned)d[DO_CODE_ADAPTIVE] - 16,
        .code_adaptive = (unsigned)d[DO_CODE_ADAPTIVE],
        .code_size = (unsigned)d[DO_CODE_SIZE],
        .bytes_size = (unsigned)d[DO_BYTES_OB_SIZE],
        .bytes_data = (unsigned)d[DO_BYTES_OB_SVAL],
        .str_length = (unsigned)d[DO_UNICODE_LENGTH],
        .str_state = (unsigned)d[DO_UNICODE_STATE],
        // PyCompactUnicodeObject: the ASCII object, then utf8_length and utf8.
        .str_ascii_data = (unsigned)ascii,
        .str_utf8_length = (unsigned)ascii,
        .str_utf8 = (unsigned)ascii + 8,
        .str_compact_data = (unsigned)ascii + 16,
        .str_kind_mask = 0x1c,
        .str_compact_mask = 0x20,
        .str_ascii_mask = 0x40,
        .owner_generator = 1,
        .owner_cstack = 3,
    };
    return 0;
}

// PyCode_Type as the layout expects it: named "code", its code units (2 bytes each) its
// items, after co_code_adaptive.
static bool code_type_fits(void) {
    const char* name = (const char*)rd(code_type, 24);
    return name && !strcmp(name, "code") && rd(code_type, 32) == L.code_adaptive &&
           rd(code_type, 40) == 2;
}

static int choose_layout(unsigned long hexversion, char* why, size_t len) {
    unsigned version = (unsigned)(hexversion >> 16 & 0xffff);
    if (version < 0x30b) {
        snprintf(why, len, "CPython %u.%u: Python frames need 3.11 or later", version >> 8,
                 version & 0xff);
        return -1;
    }
    if (version >= 0x30d) {
        if (layout_from_debug_offsets(version, why, len))
            return -1;
    } else {
        size_t i = 0;
        while (i < sizeof generated / sizeof *generated && generated[i].version != version)
            i++;
        if (i == sizeof generated / sizeof *generated) {
            snprintf(why, len, "CPython %u.%u: its layout is not known", version >> 8,
                     version & 0xff);
            return -1;
        }
        L = generated[i];
    }
    if (!code_type_fits()) {
        snprintf(why, len, "CPython %u.%u: its code objects are not laid out as expected",
                 version >> 8, version & 0xff);
        return -1;
    }
    return 0;
}

// dlsym returns void*; ISO C has no cast to function pointers, memcpy is the portable way.
static void symbol_fn(void* fn, size_t size, const char* name) {
    void* p = dlsym(RTLD_DEFAULT, name);
    memcpy(fn, &p, size);
}

static void fork_prepare(void) {
    pthread_mutex_lock(&names_lock);
}

static void fork_release(void) {
    pthread_mutex_unlock(&names_lock);
}

static void find_python(void) {
    const unsigned long* hexversion = dlsym(RTLD_DEFAULT, "Py_Version");
    runtime = (uintptr_t)dlsym(RTLD_DEFAULT, "_PyRuntime");
    if (!hexversion) {
        // Before 3.11 there is no Py_Version: the version string says which Python it is.
        const char* (*get_version)(void) = NULL;
        symbol_fn(&get_version, sizeof get_version, "Py_GetVersion");
        if (get_version && runtime) {
            const char* v = get_version();
            int n = (int)strcspn(v, " ");
            snprintf(status, sizeof status,
                     "CPython %.*s: native stacks only (Python frames need 3.11 or later)",
                     n < 32 ? n : 32, v);
        }
        return;
    }
    unsigned long v = *hexversion;
    char why[128];
    if (!mt_cfg.python) {
        snprintf(status, sizeof status,
                 "CPython %lu.%lu.%lu: native stacks only (MEMTRACE_PYTHON=0)", v >> 24,
                 v >> 16 & 0xff, v >> 8 & 0xff);
        return;
    }
    code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
    unicode_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    bytes_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
    symbol_fn(&attached_state, sizeof attached_state, "PyThreadState_GetUnchecked");
    if (!attached_state)
        symbol_fn(&attached_state, sizeof attached_state, "_PyThreadState_UncheckedGet");
    symbol_fn(&gilstate_state, sizeof gilstate_state, "PyGILState_GetThisThreadState");
    if (!runtime || !code_type || !unicode_type || !bytes_type || !attached_state ||
        !gilstate_state) {
        snprintf(why, sizeof why, "CPython %lu.%lu: some of its symbols are not exported", v >> 24,
                 v >> 16 & 0xff);
    } else if (choose_layout(v, why, sizeof why) == 0) {
        uint64_t k[2] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full};
        (void)!getrandom(k, sizeof k, GRND_NONBLOCK);
        hash_key[0] = k[0];
        hash_key[1] = k[1];
        names = map_reserve(NAMES_MAX * sizeof *names);
        name_slots = map_reserve(NAME_SLOTS * sizeof *name_slots);
        arena = map_reserve(ARENA_BYTES);
        if (names && name_slots && arena &&
            mt_maps_add_pseudo("[python]", MT_PY_PC_BASE, MT_PY_PC_END)) {
            snprintf(status, sizeof status, "CPython %lu.%lu.%lu: Python frames", v >> 24,
                     v >> 16 & 0xff, v >> 8 & 0xff);
            pthread_atfork(fork_prepare, fork_release, fork_release);
            mt_python_frames_on = true;
            return;
        }
        snprintf(why, sizeof why, "out of memory");
    }
    snprintf(status, sizeof status, "%s: native stacks only", why);
    say(why);
}

void mt_python_frames_init(void) {
    if (mt_python_frames_on || status[0])
        return;
    find_python();
    // A symbol not found (any program but CPython) leaves dlerror's state allocated under
    // the guard; the program's next dl* call would free it: a free the capture never saw
    // allocated. Read twice, dlerror frees it here.
    dlerror();
    dlerror();
}

const char* mt_python_frames_status(void) {
    return status[0] ? status : NULL;
}

uint64_t mt_python_frames_failed(void) {
    return atomic_load_explicit(&walks_failed, memory_order_relaxed);
}
