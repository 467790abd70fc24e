// SPDX-License-Identifier: MIT
// The in-memory callsite tree and frame names every report walks (symbols.h). Loads the
// tables once, indexed by id; symbolizes through common/ when the capture lacks names.
// Never touches events; never writes anything but the symbols it stores in the capture.
#include "symbols.h"

#include "escape.h"
#include "inlined.h"

#include "memtrace/symbolize.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sym_frame {
    mr_symloc* locs; // inlined (innermost first), then the physical function
    size_t nlocs;
    const char* module;
    bool relevant;
    bool present;
    bool truncation; // the tracer's marker: root of a stack cut at the depth limit
} sym_frame;

typedef struct sym_callsite {
    uint32_t parent;
    uint32_t frame;
} sym_callsite;

struct mr_symbols {
    sym_frame* frames;
    uint32_t nframes; // highest id + 1
    sym_callsite* callsites;
    uint32_t ncallsites;
    uint8_t* noise_only; // per callsite: no frame of its stack is relevant
    char** strings;      // every string the tables point to, freed together
    size_t nstrings, capstrings;
};

// A callsite naming a frame row that does not exist: say so rather than show nothing.
static const mr_symloc unknown_loc = {.function = "[unknown frame]"};

int mr_symbols_ensure(mt_capture* cap, char* note, size_t notelen) {
    note[0] = 0;
    char* v = mt_capture_meta_text(cap, "symbolized");
    bool done = v && !strcmp(v, "1");
    free(v);
    if (done)
        return 0;
    char err[512], why[512];
    // Its program still writes it: named for this reader only, as the tracer will name them
    // at exit, and quietly (memreport live redraws a screen).
    if (mt_capture_is_live(cap)) {
        (void)mt_capture_symbolize_in_memory(cap, err, sizeof err);
        return 0;
    }
    int n = mt_capture_symbolize(cap, err, sizeof err);
    if (n < 0) {
        // Named for this report only, as the tracer would have named them.
        snprintf(why, sizeof why, "%s", err);
        n = mt_capture_symbolize_in_memory(cap, err, sizeof err);
        if (n < 0)
            snprintf(note, notelen, "cannot store symbols (%s); frames show as module+offset", why);
        else
            snprintf(note, notelen, "cannot store symbols (%s); named %d frames in memory", why, n);
    } else if (n > 0) {
        snprintf(note, notelen, "symbolized %d frames", n);
    }
    return 0;
}

// Stores a name, file or module for the reports, made valid UTF-8 (escape.h): every
// report can put it in JSON as it is, and invalid bytes read the same everywhere.
static char* keep(mr_symbols* s, const char* str) {
    if (!str)
        return NULL;
    if (s->nstrings == s->capstrings) {
        size_t nc = s->capstrings ? s->capstrings * 2 : 1024;
        char** p = realloc(s->strings, nc * sizeof *p);
        if (!p)
            return NULL;
        s->strings = p;
        s->capstrings = nc;
    }
    char* c = mr_escape(str, strlen(str), MR_ESCAPE_UTF8);
    if (c)
        s->strings[s->nstrings++] = c;
    return c;
}

static const char* basename_of(const char* path) {
    const char* b = strrchr(path, '/');
    return b ? b + 1 : path;
}

typedef struct inlined_ctx {
    mr_symbols* s;
    mr_symloc* locs;
} inlined_ctx;

static int add_inlined(void* ud, size_t i, const mr_inlined_call* call) {
    inlined_ctx* c = ud;
    c->locs[i] = (mr_symloc){.function = keep(c->s, call->function ? call->function : "??"),
                             .file = keep(c->s, call->file),
                             .line = call->line,
                             .inlined = true};
    return 0;
}

// Fills one frame from its row: the inlined chain (inlined.h; a malformed one reads as
// none) then the physical function.
static int load_frame(mr_symbols* s, sym_frame* f, const mt_frame_info* row) {
    const char* fn = row->function;
    const char* path = row->module;
    f->relevant = row->relevant;
    f->truncation = row->pc == 0 && !path;
    f->module = path ? keep(s, basename_of(path)) : NULL;
    int counted = mr_inlined_parse(row->inlined, NULL, NULL);
    if (counted == -ENOMEM)
        return -ENOMEM;
    size_t ninl = counted > 0 ? (size_t)counted : 0;
    f->locs = calloc(ninl + 1, sizeof *f->locs);
    if (!f->locs)
        return -ENOMEM;
    if (ninl && mr_inlined_parse(row->inlined, add_inlined, &(inlined_ctx){s, f->locs}) < 0)
        return -ENOMEM;
    char buf[512];
    if (!fn) {
        // Not symbolized (read-only capture): the same module+offset text the symbolizer
        // writes when nothing resolves.
        snprintf(buf, sizeof buf, "%s+0x%" PRIx64, path ? basename_of(path) : "[unknown]",
                 row->rel_pc);
        fn = f->truncation ? MT_SYMBOLIZE_TRUNCATED : buf;
    }
    f->locs[ninl] =
        (mr_symloc){.function = keep(s, fn), .file = keep(s, row->file), .line = row->line};
    f->nlocs = ninl + 1;
    f->present = true;
    return f->locs[ninl].function ? 0 : -ENOMEM;
}

static int add_frame(void* ud, const mt_frame_info* row) {
    mr_symbols* s = ud;
    if (row->id > 0 && row->id < s->nframes)
        return load_frame(s, &s->frames[row->id], row);
    return 0;
}

static int add_callsite(void* ud, const mt_callsite_rec* c) {
    mr_symbols* s = ud;
    // A parent must be a valid id; a cycle-free tree is what the tracer writes, but
    // walks are bounded anyway (mr_symbols_stack) in case a file says otherwise.
    if (c->id <= 0 || c->id >= s->ncallsites || c->parent_id < 0 || c->parent_id >= s->ncallsites ||
        c->frame_id < 0 || c->frame_id >= UINT32_MAX)
        return 0;
    s->callsites[c->id] = (sym_callsite){(uint32_t)c->parent_id, (uint32_t)c->frame_id};
    return 0;
}

// ---- Python programs

// In a capture with Python frames, the interpreter's own frames are noise, hidden by
// default like start-up code and shown with --all-frames, where they say nothing a Python
// frame does not: its call machinery (evaluation loop, call and vectorcall trampolines, the
// start-up that runs the main module) wherever it is, and every frame of the interpreter
// that runs under a Python frame (the list, dict and object code a Python line calls), so
// that what it allocates is the Python line's, or the C extension's that called it. Its
// other frames, which never run under a Python frame (`main`, the initialisation, a
// thread's start), stay.
static bool python_machinery(const char* fn) {
    static const char* const prefixes[] = {"_PyEval_",
                                           "PyEval_",
                                           "_PyFunction_Vectorcall",
                                           "_PyObject_Vectorcall",
                                           "PyObject_Vectorcall",
                                           "_PyObject_Call",
                                           "PyObject_Call",
                                           "_PyObject_MakeTpCall",
                                           "_PyVectorcall_",
                                           "PyVectorcall_",
                                           "method_vectorcall",
                                           "cfunction_call",
                                           "cfunction_vectorcall",
                                           "vectorcall_",
                                           "slot_tp_call",
                                           "_PyCFunction",
                                           "Py_RunMain",
                                           "Py_BytesMain",
                                           "Py_Main",
                                           "pymain_",
                                           "_PyRun_",
                                           "PyRun_",
                                           "run_mod",
                                           "run_eval_code_obj",
                                           "pyrun_",
                                           "gen_send_ex",
                                           "_PyGen_Send",
                                           NULL};
    for (const char* const* p = prefixes; *p; p++)
        if (!strncmp(fn, *p, strlen(*p)))
            return true;
    return false;
}

// A module that is a CPython interpreter: python3.11, python3.13t, libpython3.12.so.1.0,
// libpython3.11d.so.1.0; not a program whose name only starts with "python".
static bool python_module(const char* module) {
    if (!module)
        return false;
    const char* v = !strncmp(module, "libpython", 9) ? module + 9
                    : !strncmp(module, "python", 6)  ? module + 6
                                                     : NULL;
    if (!v || !isdigit((unsigned char)*v))
        return false;
    do // the version: 3, 3.12
        v += strspn(v, "0123456789");
    while (v[0] == '.' && isdigit((unsigned char)v[1]) && v++);
    v += strspn(v, "dmt"); // ABI flags: debug, pymalloc (before 3.8), free-threaded
    return *v == '\0' || (module[0] == 'l' && !strncmp(v, ".so", 3));
}

static bool python_frame(const mr_symbols* s, uint32_t frame) {
    const sym_frame* f = frame < s->nframes ? &s->frames[frame] : NULL;
    return f && f->present && f->module && !strcmp(f->module, "[python]");
}

static bool interpreter_frame(const mr_symbols* s, uint32_t frame) {
    const sym_frame* f = frame < s->nframes ? &s->frames[frame] : NULL;
    return f && f->present && python_module(f->module);
}

enum { UNSEEN, NO, YES, WALKING };

// For every callsite, whether its frame or a caller's matches: YES or NO in a new array
// (NULL when out of memory). A cycle of parents (a corrupt file) reads as no match.
static uint8_t* match_at_or_above(const mr_symbols* s,
                                  bool (*match)(const mr_symbols*, uint32_t frame)) {
    uint8_t* seen = calloc(s->ncallsites, 1);
    uint32_t* path = malloc(s->ncallsites * sizeof *path);
    for (uint32_t cs = 1; seen && path && cs < s->ncallsites; cs++) {
        size_t n = 0;
        uint32_t c = cs;
        for (; c && c < s->ncallsites && seen[c] == UNSEEN; c = s->callsites[c].parent) {
            seen[c] = WALKING;
            path[n++] = c;
        }
        bool yes = c && c < s->ncallsites && seen[c] == YES;
        while (n-- > 0) { // from the outermost down
            yes = yes || match(s, s->callsites[path[n]].frame);
            seen[path[n]] = yes ? YES : NO;
        }
    }
    free(path);
    if (!path) {
        free(seen);
        return NULL;
    }
    return seen;
}

static int hide_python_interpreter(mr_symbols* s) {
    bool python = false;
    for (uint32_t i = 0; i < s->nframes && !python; i++)
        python = python_frame(s, i);
    if (!python)
        return 0;
    for (uint32_t i = 0; i < s->nframes; i++) {
        sym_frame* f = &s->frames[i];
        if (interpreter_frame(s, i) && python_machinery(f->locs[f->nlocs - 1].function))
            f->relevant = false;
    }
    uint8_t* under_python = match_at_or_above(s, python_frame);
    if (!under_python)
        return -ENOMEM;
    for (uint32_t cs = 1; cs < s->ncallsites; cs++) {
        uint32_t frame = s->callsites[cs].frame;
        if (interpreter_frame(s, frame) && under_python[s->callsites[cs].parent] == YES)
            s->frames[frame].relevant = false;
    }
    free(under_python);
    return 0;
}

// Which stacks have no relevant frame, to be shown whole (mr_symbols_stack).
static int find_noise_only(mr_symbols* s) {
    uint8_t* relevant = match_at_or_above(s, mr_symbols_frame_relevant);
    if (!relevant)
        return -ENOMEM;
    for (uint32_t cs = 1; cs < s->ncallsites; cs++)
        relevant[cs] = relevant[cs] != YES;
    s->noise_only = relevant;
    return 0;
}

// why: what is wrong when the capture's ids are (empty: SQLite's error says it).
static int load(mt_capture* cap, mr_symbols* s, char* why, size_t whylen) {
    int64_t fmax, cmax;
    if (mt_capture_stack_ids(cap, &fmax, &cmax))
        return -EPROTO;
    // Dense tables indexed by id: ids are 32-bit (the tracer's count from 1).
    if (fmax < 0 || fmax >= UINT32_MAX || cmax < 0 || cmax >= UINT32_MAX) {
        bool frame = fmax < 0 || fmax >= UINT32_MAX;
        snprintf(why, whylen, "%s id %lld is out of range (1 to %u)", frame ? "frame" : "callsite",
                 (long long)(frame ? fmax : cmax), UINT32_MAX - 1);
        return -EPROTO;
    }
    s->nframes = (uint32_t)fmax + 1;
    s->ncallsites = (uint32_t)cmax + 1;
    s->frames = calloc(s->nframes, sizeof *s->frames);
    s->callsites = calloc(s->ncallsites, sizeof *s->callsites);
    if (!s->frames || !s->callsites)
        return -ENOMEM;
    int rc = mt_capture_frames(cap, add_frame, s);
    if (rc == 0)
        rc = mt_capture_callsites(cap, add_callsite, s);
    if (rc == 0)
        rc = hide_python_interpreter(s);
    return rc ? rc : find_noise_only(s);
}

int mr_symbols_load(mt_capture* cap, mr_symbols** out, char* msg, size_t msglen) {
    *out = NULL;
    mr_symbols_ensure(cap, msg, msglen);
    mr_symbols* s = calloc(1, sizeof *s);
    char why[96] = "";
    int rc = s ? load(cap, s, why, sizeof why) : -ENOMEM;
    if (rc) {
        mr_symbols_free(s);
        if (rc == -ENOMEM) {
            snprintf(msg, msglen, "out of memory");
            return -ENOMEM;
        }
        snprintf(msg, msglen, "corrupt capture: cannot read stacks: %s",
                 why[0] ? why : mt_capture_error(cap));
        return -EPROTO;
    }
    *out = s;
    return 0;
}

void mr_symbols_free(mr_symbols* s) {
    if (!s)
        return;
    for (uint32_t i = 0; i < s->nframes; i++)
        free(s->frames[i].locs);
    for (size_t i = 0; i < s->nstrings; i++)
        free(s->strings[i]);
    free(s->strings);
    free(s->frames);
    free(s->callsites);
    free(s->noise_only);
    free(s);
}

static const sym_frame* frame_at(const mr_symbols* s, uint32_t frame) {
    return frame < s->nframes && s->frames[frame].present ? &s->frames[frame] : NULL;
}

size_t mr_symbols_frame_locs(const mr_symbols* s, uint32_t frame, const mr_symloc** locs) {
    const sym_frame* f = frame_at(s, frame);
    if (f) {
        *locs = f->locs;
        return f->nlocs;
    }
    *locs = &unknown_loc;
    return 1;
}

const char* mr_symbols_frame_name(const mr_symbols* s, uint32_t frame) {
    const mr_symloc* locs;
    size_t n = mr_symbols_frame_locs(s, frame, &locs);
    return locs[n - 1].function;
}

bool mr_symbols_frame_relevant(const mr_symbols* s, uint32_t frame) {
    const sym_frame* f = frame_at(s, frame);
    return !f || f->relevant;
}

const char* mr_symbols_frame_module(const mr_symbols* s, uint32_t frame) {
    const sym_frame* f = frame_at(s, frame);
    return f ? f->module : NULL;
}

uint32_t mr_symbols_parent(const mr_symbols* s, uint32_t callsite) {
    return callsite < s->ncallsites ? s->callsites[callsite].parent : 0;
}

uint32_t mr_symbols_frame_of(const mr_symbols* s, uint32_t callsite) {
    return callsite < s->ncallsites ? s->callsites[callsite].frame : 0;
}

uint32_t mr_symbols_callsite_count(const mr_symbols* s) {
    return s->ncallsites;
}

bool mr_symbols_truncated(const mr_symbols* s, uint32_t leaf) {
    uint32_t root = 0;
    for (uint32_t cs = leaf, steps = 0; cs && cs < s->ncallsites && steps < s->ncallsites;
         cs = s->callsites[cs].parent, steps++)
        root = s->callsites[cs].frame;
    const sym_frame* f = frame_at(s, root);
    return f && f->truncation;
}

bool mr_symbols_noise_only(const mr_symbols* s, uint32_t leaf) {
    return leaf && leaf < s->ncallsites && s->noise_only && s->noise_only[leaf];
}

size_t mr_symbols_stack(const mr_symbols* s, uint32_t leaf, bool all_frames, uint32_t* out,
                        size_t max) {
    size_t n = 0;
    all_frames |= mr_symbols_noise_only(s, leaf);
    // Bounded by the number of callsites, so a corrupt file with a cycle cannot hang us.
    for (uint32_t cs = leaf, steps = 0; cs && cs < s->ncallsites && steps < s->ncallsites;
         cs = s->callsites[cs].parent, steps++) {
        uint32_t f = s->callsites[cs].frame;
        if (!all_frames && !mr_symbols_frame_relevant(s, f))
            continue;
        if (n < max)
            out[n] = f;
        n++;
    }
    return n;
}
