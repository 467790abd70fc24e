// SPDX-License-Identifier: MIT
// memreport leaks: the blocks still live at the end of a run, grouped by allocation stack,
// largest first, with an optional suppressions file of function-name patterns.
// One replay; memory is the live set plus one counter pair per callsite.
#include "commands.h"
#include "escape.h"
#include "replay.h"
#include "sites.h"
#include "util.h"

#include "memtrace/schema.h"
#include "memtrace/units.h"

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char leaks_help[] =
    "usage: memreport leaks CAPTURE [--json] [--top N] [--suppressions FILE] [-o FILE] [-f]\n"
    "Blocks of the libc heap still live at the end of the run, grouped by allocation\n"
    "stack, largest first, with the full stack of each group and a totals line.\n"
    "  --json               machine-readable output\n"
    "  --top N              show the N largest groups only (totals still count all)\n"
    "  --suppressions FILE  hide groups with a frame whose function matches a pattern\n"
    "                       of FILE (one glob pattern a line, '#' starts a comment)\n"
    "  --all-frames         also show noise frames (allocator internals, start-up code);\n"
    "                       hidden by default, their bytes count in their callers\n"
    "  -o, --output FILE    write to FILE instead of stdout\n"
    "  -f, --force          overwrite FILE if it exists\n";

typedef struct patterns {
    char** v;
    size_t n;
} patterns;

static void patterns_free(patterns* p) {
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i]);
    free(p->v);
}

// Reads a suppressions file: one fnmatch pattern a line, blank lines and '#' comments
// ignored, surrounding white space trimmed. Returns 0 or an exit code.
static int load_suppressions(const char* path, patterns* p) {
    FILE* fp = fopen(path, "r");
    if (!fp) {
        mr_error(path, "cannot open suppressions: %s", strerror(errno));
        return MR_EXIT_IO;
    }
    char* line = NULL;
    size_t cap = 0;
    int rc = MR_EXIT_OK;
    while (getline(&line, &cap, fp) >= 0) {
        char* hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char* b = line;
        while (*b == ' ' || *b == '\t')
            b++;
        char* e = b + strlen(b);
        while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
            *--e = 0;
        if (!*b)
            continue;
        char** nv = realloc(p->v, (p->n + 1) * sizeof *nv);
        if (!nv || !(nv[p->n] = strdup(b))) {
            if (nv)
                p->v = nv;
            mr_error(path, "out of memory");
            rc = MR_EXIT_IO;
            break;
        }
        p->v = nv;
        p->n++;
    }
    free(line);
    fclose(fp);
    return rc;
}

static bool suppressed(const mr_symbols* s, uint32_t callsite, const patterns* p) {
    if (!p->n)
        return false;
    uint32_t frames[MR_SITES_MAX_DEPTH];
    size_t n = mr_symbols_stack(s, callsite, true, frames, MR_SITES_MAX_DEPTH);
    for (size_t i = 0; i < n && i < MR_SITES_MAX_DEPTH; i++) {
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(s, frames[i], &locs);
        for (size_t l = 0; l < nl; l++)
            for (size_t k = 0; k < p->n; k++)
                if (fnmatch(p->v[k], locs[l].function, 0) == 0)
                    return true;
    }
    return false;
}

typedef struct group {
    uint32_t callsite;
    uint64_t bytes, blocks;
} group;

static int by_bytes_desc(const void* a, const void* b) {
    const group *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    if (x->blocks != y->blocks)
        return x->blocks < y->blocks ? 1 : -1;
    return x->callsite < y->callsite ? -1 : x->callsite > y->callsite;
}

// Groups the live blocks by symbolized stack (ids outside the table count as "no stack").
static group* group_live(const mr_heapmap* live, const mr_symbols* s, size_t* ngroups) {
    uint32_t ncallsites = mr_symbols_callsite_count(s);
    group* g = calloc((size_t)ncallsites + 1, sizeof *g);
    uint32_t* canon = mr_sites_canonical(s);
    if (!g || !canon) {
        free(g);
        free(canon);
        return NULL;
    }
    const mr_block* b;
    for (size_t i = 0; mr_heapmap_next(live, &i, &b);) {
        uint32_t c = b->callsite < ncallsites ? canon[b->callsite] : 0;
        g[c].callsite = c;
        g[c].bytes += b->size;
        g[c].blocks++;
    }
    size_t n = 0;
    for (size_t i = 0; i <= ncallsites; i++)
        if (g[i].blocks)
            g[n++] = g[i];
    qsort(g, n, sizeof *g, by_bytes_desc);
    free(canon);
    *ngroups = n;
    return g;
}

static json_t* build_report(mt_capture* cap, const mr_symbols* s, group* g, size_t n, size_t top,
                            const patterns* supp, bool all_frames) {
    json_t* groups = json_array();
    uint64_t bytes = 0, blocks = 0, sup_bytes = 0, sup_blocks = 0, sup_groups = 0;
    for (size_t i = 0; i < n; i++) {
        if (suppressed(s, g[i].callsite, supp)) {
            sup_bytes += g[i].bytes;
            sup_blocks += g[i].blocks;
            sup_groups++;
            continue;
        }
        bytes += g[i].bytes;
        blocks += g[i].blocks;
        if (json_array_size(groups) >= top)
            continue;
        json_t* o = json_object();
        json_object_set_new(o, "bytes", json_integer((json_int_t)g[i].bytes));
        json_object_set_new(o, "blocks", json_integer((json_int_t)g[i].blocks));
        json_object_set_new(o, "stack", mr_sites_stack_json(s, g[i].callsite, all_frames));
        json_array_append_new(groups, o);
    }
    json_t* r = json_object();
    json_object_set_new(r, "capture", mr_json_bytes(mt_capture_path(cap)));
    json_object_set_new(r, "status",
                        json_string(mt_capture_truncated(cap) ? "truncated" : "complete"));
    json_object_set_new(r, "bytes", json_integer((json_int_t)bytes));
    json_object_set_new(r, "blocks", json_integer((json_int_t)blocks));
    json_object_set_new(r, "stacks", json_integer((json_int_t)(n - sup_groups)));
    json_object_set_new(r, "suppressed_bytes", json_integer((json_int_t)sup_bytes));
    json_object_set_new(r, "suppressed_blocks", json_integer((json_int_t)sup_blocks));
    json_object_set_new(r, "suppressed_stacks", json_integer((json_int_t)sup_groups));
    json_object_set_new(r, "groups", groups);
    return r;
}

#define INT(o, k) (unsigned long long)json_integer_value(json_object_get(o, k))

static void print_text(FILE* out, json_t* r) {
    char a[32], line[1024];
    size_t i;
    json_t* g;
    if (!strcmp(json_string_value(json_object_get(r, "status")), "truncated"))
        fputs("note: the capture is truncated (the program did not exit normally); blocks\n"
              "      live when it stopped are reported as leaks\n\n",
              out);
    json_array_foreach(json_object_get(r, "groups"), i, g) {
        fprintf(out, "%s (%llu bytes) in %llu block%s allocated at:\n",
                mt_format_bytes(INT(g, "bytes"), a, sizeof a), INT(g, "bytes"), INT(g, "blocks"),
                INT(g, "blocks") == 1 ? "" : "s");
        json_t* stack = json_object_get(g, "stack");
        if (json_array_size(stack) == 0)
            fputs("    (no stack recorded)\n", out);
        size_t k;
        json_t* f;
        json_array_foreach(stack, k, f) {
            fprintf(out, "    #%zu ", k);
            mr_fputs_text(out, mr_sites_format_json_frame(f, line, sizeof line));
            fputc('\n', out);
        }
        fputc('\n', out);
    }
    fprintf(out, "leaked: %s (%llu bytes) in %llu blocks from %llu stacks",
            mt_format_bytes(INT(r, "bytes"), a, sizeof a), INT(r, "bytes"), INT(r, "blocks"),
            INT(r, "stacks"));
    if (INT(r, "suppressed_stacks"))
        fprintf(out, "; suppressed: %llu bytes in %llu blocks from %llu stacks",
                INT(r, "suppressed_bytes"), INT(r, "suppressed_blocks"),
                INT(r, "suppressed_stacks"));
    fputc('\n', out);
}

static int progress(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)freed;
    const uint64_t* last = ud;
    if ((r->events & 0xfffff) == 0 && *last)
        mr_progress("leaks", (double)ev->seq / (double)*last);
    return 0;
}

int mr_cmd_leaks(int argc, char** argv) {
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"top", required_argument, NULL, 't'},
                                         {"suppressions", required_argument, NULL, 's'},
                                         {"all-frames", no_argument, NULL, 'a'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    mr_opts opt = MR_OPTS_INIT;
    bool all_frames = false;
    const char* supp_path = NULL;
    size_t top = SIZE_MAX;
    int c;
    while ((c = getopt_long(argc, argv, "jt:s:ao:fh", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (mr_parse_count("--top", optarg, &top))
                return MR_EXIT_USAGE;
            break;
        case 's':
            supp_path = optarg;
            break;
        case 'a':
            all_frames = true;
            break;
        default: {
            int orc = mr_opts_handle(&opt, c, leaks_help);
            if (orc != MR_OPT_NEXT)
                return orc;
        }
        }
    }
    const char* path = mr_opts_input(argc, argv, leaks_help);
    if (!path)
        return MR_EXIT_USAGE;
    patterns supp = {0};
    int rc = supp_path ? load_suppressions(supp_path, &supp) : MR_EXIT_OK;
    mt_capture* cap = NULL;
    mr_symbols* sites = NULL;
    if (rc || (rc = mr_open_capture_symbols(path, &cap, &sites))) {
        patterns_free(&supp);
        return rc;
    }
    int e;
    mr_replay r;
    uint64_t last_seq = (uint64_t)mt_capture_meta_int(cap, "events_written", 0);
    if (mr_replay_init(&r, cap, mr_capture_default_heap(cap))) {
        mr_error(path, "out of memory");
        rc = MR_EXIT_IO;
    } else if ((e = mr_replay_run(&r, UINT64_MAX, progress, &last_seq))) {
        mr_progress("leaks", -1);
        mr_error(path, "%s", r.err[0] ? r.err : "corrupt capture");
        rc = e == -ENOMEM ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
    } else {
        mr_progress("leaks", -1);
        size_t n;
        group* g = group_live(&r.live, sites, &n);
        json_t* rep = g ? build_report(cap, sites, g, n, top, &supp, all_frames) : NULL;
        if (!rep) {
            mr_error(path, "out of memory");
            rc = MR_EXIT_IO;
        } else {
            rc = mr_write_report(&opt, rep, print_text);
        }
        json_decref(rep);
        free(g);
    }
    mr_replay_free(&r);
    mr_symbols_free(sites);
    patterns_free(&supp);
    mt_capture_close(cap);
    return rc;
}
