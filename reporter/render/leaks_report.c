// SPDX-License-Identifier: MIT
// The leaks report (leaks_report.h): built as one JSON document, printed from it as text
// or as it is.
#include "leaks_report.h"

#include "escape.h"
#include "json.h"
#include "messages.h"
#include "procs_json.h"
#include "stack_json.h"

#include "memtrace/schema.h"
#include "memtrace/units.h"

#include <string.h>

// One section of the report (the program's leaks, or what the C runtime holds): totals of
// every group, and the largest `top` groups with their stacks.
typedef struct section {
    uint64_t bytes, blocks, stacks;
    json_t* groups;
} section;

// frames: the cache of frames shared by the groups' stacks (mr_stack_json_make_shared).
static void section_add(section* sec, json_t* frames, const mr_symbols* s, const mr_leaks_group* g,
                        size_t top, bool all_frames, bool scanned) {
    sec->bytes += g->bytes;
    sec->blocks += g->blocks;
    sec->stacks++;
    if (json_array_size(sec->groups) >= top)
        return;
    json_t* o = json_object();
    if (scanned)
        json_object_set_new(o, "kind", json_string(mt_leak_kind_name(g->kind)));
    json_object_set_new(o, "bytes", json_integer((json_int_t)g->bytes));
    json_object_set_new(o, "blocks", json_integer((json_int_t)g->blocks));
    json_t* stack = mr_stack_json_make_shared(frames, g->process ? g->process->sym : s, g->callsite,
                                              all_frames);
    if (g->process) // the process is the outermost frame, as in the flame graph
        json_array_append_new(stack, mr_procs_json_frame(g->process));
    json_object_set_new(o, "stack", stack);
    json_array_append_new(sec->groups, o);
}

static json_t* suppressions_json(const mr_leaks_report* rep) {
    json_t* a = json_array();
    for (size_t k = 0; k < rep->nsuppressions; k++) {
        const mr_leaks_suppression* x = &rep->suppressions[k];
        json_t* o = json_object();
        json_object_set_new(o, "line", json_integer(x->line));
        json_object_set_new(o, "pattern", mr_json_bytes(x->pattern));
        json_object_set_new(o, "format", json_string(x->lsan ? "leak" : "glob"));
        json_object_set_new(o, "bytes", json_integer((json_int_t)x->bytes));
        json_object_set_new(o, "blocks", json_integer((json_int_t)x->blocks));
        json_object_set_new(o, "stacks", json_integer((json_int_t)x->stacks));
        json_array_append_new(a, o);
    }
    return a;
}

// Each process of several captures with its leaks (the program's) and what the C runtime
// holds.
static json_t* processes_json(const mr_leaks_report* rep) {
    json_t* arr = json_array();
    for (size_t i = 0; i < rep->set->n; i++) {
        const mr_process* p = &rep->set->procs[i];
        uint64_t sum[2][3] = {{0}}; // [program, runtime][bytes, blocks, stacks]
        for (size_t k = 0; k < rep->n; k++) {
            const mr_leaks_group* g = &rep->groups[k];
            if (g->process != p || g->owner == MR_LEAKS_SUPPRESSED)
                continue;
            uint64_t* s = sum[g->owner == MR_LEAKS_RUNTIME];
            s[0] += g->bytes;
            s[1] += g->blocks;
            s[2]++;
        }
        json_t* o = mr_procs_json_process(p);
        json_object_set_new(o, "status",
                            json_string(mt_capture_truncated(p->cap) ? "truncated" : "complete"));
        json_object_set_new(o, "bytes", json_integer((json_int_t)sum[0][0]));
        json_object_set_new(o, "blocks", json_integer((json_int_t)sum[0][1]));
        json_object_set_new(o, "stacks", json_integer((json_int_t)sum[0][2]));
        json_object_set_new(o, "runtime_held_bytes", json_integer((json_int_t)sum[1][0]));
        json_array_append_new(arr, o);
    }
    return arr;
}

// Whether a capture of the report did not end normally.
static bool any_truncated(const mr_leaks_report* rep) {
    if (!rep->set)
        return mt_capture_truncated(rep->cap);
    for (size_t i = 0; i < rep->set->n; i++)
        if (mt_capture_truncated(rep->set->procs[i].cap))
            return true;
    return false;
}

static const char* input_name(const mr_leaks_report* rep) {
    return rep->input ? rep->input : mt_capture_path(rep->cap);
}

// The kinds in the order memcheck lists them, then the blocks without a verdict.
static const int kind_order[] = {MT_LEAK_DEFINITE, MT_LEAK_INDIRECT, MT_LEAK_POSSIBLE,
                                 MT_LEAK_REACHABLE, MT_LEAK_UNCLASSIFIED};
#define NKINDS (sizeof kind_order / sizeof *kind_order)

// The report: suppressed groups are counted as such; the others go to the C runtime's
// section or to the program's, which a leak scan splits by kind (each kind's groups
// largest first, `top` of each).
static json_t* build_report(const mr_leaks_report* rep) {
    section prog = {.groups = json_array()}, runtime = {.groups = json_array()};
    section kinds[MT_LEAK_COUNT_];
    for (size_t k = 0; k < MT_LEAK_COUNT_; k++)
        kinds[k] = (section){.groups = json_array()};
    uint64_t sup_bytes = 0, sup_blocks = 0, sup_groups = 0;
    json_t* frames = json_object(); // each frame's entries once, in every stack that has it
    for (size_t i = 0; i < rep->n; i++) {
        const mr_leaks_group* g = &rep->groups[i];
        if (g->owner == MR_LEAKS_SUPPRESSED) {
            sup_bytes += g->bytes;
            sup_blocks += g->blocks;
            sup_groups++;
        } else if (g->owner == MR_LEAKS_RUNTIME) {
            section_add(&runtime, frames, rep->sym, g, rep->top, rep->all_frames, rep->scanned);
        } else {
            section* sec = rep->scanned ? &kinds[g->kind] : &prog;
            section_add(sec, frames, rep->sym, g, rep->top, rep->all_frames, rep->scanned);
        }
    }
    json_t* by_kind = NULL;
    if (rep->scanned) {
        by_kind = json_object();
        for (size_t k = 0; k < NKINDS; k++) {
            section* sec = &kinds[kind_order[k]];
            prog.bytes += sec->bytes;
            prog.blocks += sec->blocks;
            prog.stacks += sec->stacks;
            json_array_extend(prog.groups, sec->groups);
            json_t* o = json_object();
            json_object_set_new(o, "bytes", json_integer((json_int_t)sec->bytes));
            json_object_set_new(o, "blocks", json_integer((json_int_t)sec->blocks));
            json_object_set_new(o, "stacks", json_integer((json_int_t)sec->stacks));
            json_object_set_new(by_kind, mt_leak_kind_name(kind_order[k]), o);
        }
    }
    for (size_t k = 0; k < MT_LEAK_COUNT_; k++)
        json_decref(kinds[k].groups);
    json_decref(frames);
    json_t* r = json_object();
    json_object_set_new(r, "capture", mr_json_bytes(input_name(rep)));
    json_object_set_new(r, "status", json_string(any_truncated(rep) ? "truncated" : "complete"));
    json_object_set_new(r, "bytes", json_integer((json_int_t)prog.bytes));
    json_object_set_new(r, "blocks", json_integer((json_int_t)prog.blocks));
    json_object_set_new(r, "stacks", json_integer((json_int_t)prog.stacks));
    json_object_set_new(r, "suppressed_bytes", json_integer((json_int_t)sup_bytes));
    json_object_set_new(r, "suppressed_blocks", json_integer((json_int_t)sup_blocks));
    json_object_set_new(r, "suppressed_stacks", json_integer((json_int_t)sup_groups));
    json_object_set_new(r, "groups", prog.groups);
    if (by_kind) // the capture's leak scan ran: totals per kind (docs/leaks.md)
        json_object_set_new(r, "kinds", by_kind);
    else if (rep->no_scan)
        json_object_set_new(r, "no_leak_kinds", mr_json_bytes(rep->no_scan));
    json_t* held = json_object();
    json_object_set_new(held, "bytes", json_integer((json_int_t)runtime.bytes));
    json_object_set_new(held, "blocks", json_integer((json_int_t)runtime.blocks));
    json_object_set_new(held, "stacks", json_integer((json_int_t)runtime.stacks));
    json_object_set_new(held, "groups", runtime.groups);
    json_object_set_new(r, "runtime_held", held);
    json_object_set_new(r, "suppressions", suppressions_json(rep));
    if (rep->set)
        json_object_set_new(r, "processes", processes_json(rep));
    return r;
}

#define INT(o, k) (unsigned long long)json_integer_value(json_object_get(o, k))

// "4.70 KiB (4814 bytes) in 5 blocks from 4 stacks", in the singular where it is one.
static void print_amount(FILE* out, unsigned long long bytes, unsigned long long blocks,
                         unsigned long long stacks) {
    char a[32];
    fprintf(out, "%s (%llu byte%s) in %llu block%s from %llu stack%s",
            mt_units_format_bytes(bytes, a, sizeof a), bytes, bytes == 1 ? "" : "s", blocks,
            blocks == 1 ? "" : "s", stacks, stacks == 1 ? "" : "s");
}

static void print_groups(FILE* out, json_t* groups) {
    size_t i;
    json_t* g;
    json_array_foreach(groups, i, g) {
        char a[32];
        fprintf(out, "%s (%llu bytes) in %llu block%s allocated at:\n",
                mt_units_format_bytes(INT(g, "bytes"), a, sizeof a), INT(g, "bytes"),
                INT(g, "blocks"), INT(g, "blocks") == 1 ? "" : "s");
        json_t* stack = json_object_get(g, "stack");
        if (json_array_size(stack) == 0)
            fputs("    (no stack recorded)\n", out);
        size_t k;
        json_t* f;
        json_array_foreach(stack, k, f) {
            fprintf(out, "    #%zu ", k);
            mr_stack_json_fputs_frame(out, f, true);
            fputc('\n', out);
        }
        fputc('\n', out);
    }
}

// "definitely_lost" as "definitely lost".
static void print_kind_name(FILE* out, const char* name) {
    for (const char* c = name; *c; c++)
        fputc(*c == '_' ? ' ' : *c, out);
}

// The groups under a heading per kind ("Definitely lost:"), in the order given.
static void print_by_kind(FILE* out, json_t* groups) {
    const char* shown = NULL;
    size_t i;
    json_t* g;
    json_array_foreach(groups, i, g) {
        const char* kind = json_string_value(json_object_get(g, "kind"));
        if (!shown || strcmp(shown, kind)) {
            fputc(kind[0] - 'a' + 'A', out);
            print_kind_name(out, kind + 1);
            fputs(":\n\n", out);
            shown = kind;
        }
        json_t* one = json_array();
        json_array_append(one, g);
        print_groups(out, one);
        json_decref(one);
    }
}

static void print_text(FILE* out, json_t* r) {
    if (!strcmp(json_string_value(json_object_get(r, "status")), "truncated"))
        fputs("note: the capture is truncated (the program did not exit normally); blocks\n"
              "      live when it stopped are reported as leaks\n\n",
              out);
    json_t* kinds = json_object_get(r, "kinds");
    if (kinds)
        print_by_kind(out, json_object_get(r, "groups"));
    else
        print_groups(out, json_object_get(r, "groups"));
    json_t* held = json_object_get(r, "runtime_held");
    if (json_array_size(json_object_get(held, "groups"))) {
        fputs("Held by the C runtime (allocated by libc or the dynamic loader for their own use\n"
              "and never freed: stdio buffers, thread DTVs and TLS, locale data...):\n\n",
              out);
        print_groups(out, json_object_get(held, "groups"));
    }
    const char* key;
    json_t* k;
    json_object_foreach(kinds, key, k) {
        if (!INT(k, "stacks") && !strcmp(key, "unclassified"))
            continue;
        print_kind_name(out, key);
        fputs(": ", out);
        print_amount(out, INT(k, "bytes"), INT(k, "blocks"), INT(k, "stacks"));
        fputc('\n', out);
    }
    fputs("leaked: ", out);
    print_amount(out, INT(r, "bytes"), INT(r, "blocks"), INT(r, "stacks"));
    if (INT(r, "suppressed_stacks")) {
        fputs("; ", out);
        print_amount(out, INT(r, "suppressed_bytes"), INT(r, "suppressed_blocks"),
                     INT(r, "suppressed_stacks"));
        fputs(" suppressed", out);
    }
    fputc('\n', out);
    const char* no_scan = json_string_value(json_object_get(r, "no_leak_kinds"));
    if (no_scan) {
        fputs("no leak kinds (not classified): ", out);
        mr_escape_fputs_text(out, no_scan);
        fputs(" (docs/leaks.md)\n", out);
    }
    if (INT(held, "stacks")) {
        fputs("held by the C runtime: ", out);
        print_amount(out, INT(held, "bytes"), INT(held, "blocks"), INT(held, "stacks"));
        fputc('\n', out);
    }
    size_t i;
    json_t* p;
    json_array_foreach(json_object_get(r, "processes"), i, p) {
        fputs("  ", out);
        mr_escape_fputs_text(out, json_string_value(json_object_get(p, "process")));
        fputs(": ", out);
        print_amount(out, INT(p, "bytes"), INT(p, "blocks"), INT(p, "stacks"));
        fputc('\n', out);
    }
}

int mr_leaks_report_write(const mr_report_to* to, const mr_leaks_report* r) {
    return mr_json_write_new_report(to, build_report(r), input_name(r), print_text);
}
