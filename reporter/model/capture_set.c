// SPDX-License-Identifier: MIT
// The captures of a process tree (capture_set.h).
#include "capture_set.h"

#include "replay.h"
#include "sampled.h"
#include "symbols.h"

#include "memtrace/vec.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool is_dir(const char* path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool mr_capture_set_wanted(int n, char* const* paths) {
    return n > 1 || (n == 1 && is_dir(paths[0]));
}

static bool ends_with(const char* s, const char* tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

static int cmp_str(const void* a, const void* b) {
    return strcmp(*(char* const*)a, *(char* const*)b);
}

typedef struct path_list {
    char** v;
    size_t n, cap;
} path_list;

static int push_path(path_list* l, char* p) {
    if (!p || MT_VEC_RESERVE(&l->v, &l->cap, l->n + 1)) {
        free(p);
        return -ENOMEM;
    }
    l->v[l->n++] = p;
    return 0;
}

// The *.db files of a directory, by name (readdir's order is the file system's).
static int list_dir(path_list* l, const char* dir, char* err, size_t errlen) {
    DIR* d = opendir(dir);
    if (!d) {
        int e = -errno;
        snprintf(err, errlen, "%s", strerror(-e));
        return e;
    }
    size_t first = l->n;
    int e = 0;
    struct dirent* de;
    while (!e && (de = readdir(d))) {
        if (de->d_name[0] == '.' || !ends_with(de->d_name, ".db"))
            continue;
        char* p;
        bool slash = ends_with(dir, "/");
        if (asprintf(&p, "%s%s%s", dir, slash ? "" : "/", de->d_name) < 0)
            p = NULL;
        if (!e && is_dir(p)) {
            free(p);
            continue;
        }
        e = push_path(l, p);
    }
    closedir(d);
    if (e)
        snprintf(err, errlen, "out of memory");
    else if (l->n == first) {
        snprintf(err, errlen, "no capture (*.db) in this directory");
        e = -EPROTO;
    } else
        qsort(l->v + first, l->n - first, sizeof *l->v, cmp_str);
    return e;
}

static void read_process(mr_process* p) {
    mt_capture* cap = p->cap;
    p->pid = mt_capture_meta_int(cap, "pid", 0);
    p->ppid = mt_capture_meta_int(cap, "ppid", 0);
    p->start_ns = mt_capture_meta_int(cap, "start_realtime_ns", 0);
    p->exe = mt_capture_meta_text(cap, "exe");
    p->cmdline = mt_capture_meta_text(cap, "cmdline");
    p->parent_capture = mt_capture_meta_text(cap, "parent_capture");
    const char* slash = strrchr(p->path, '/');
    p->name = slash ? slash + 1 : p->path;
}

// Started earlier (time, then pid, then name): the order of roots and siblings.
static int cmp_start(const mr_process* a, const mr_process* b) {
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return strcmp(a->name, b->name);
}

// The latest capture of `pid` that started no later than c (other than c itself).
static size_t running_at(const mr_process* v, size_t n, size_t c, int64_t pid) {
    size_t best = MR_PROCESS_ROOT;
    for (size_t i = 0; i < n; i++)
        if (i != c && v[i].pid == pid && cmp_start(&v[i], &v[c]) < 0 &&
            (best == MR_PROCESS_ROOT || cmp_start(&v[i], &v[best]) > 0))
            best = i;
    return best;
}

static size_t parent_of(const mr_process* v, size_t n, size_t c) {
    const mr_process* p = &v[c];
    if (p->parent_capture)
        for (size_t i = 0; i < n; i++)
            if (i != c && !strcmp(v[i].name, p->parent_capture))
                return i;
    if (!p->pid)
        return MR_PROCESS_ROOT;
    size_t before_exec = running_at(v, n, c, p->pid);
    if (before_exec != MR_PROCESS_ROOT)
        return before_exec;
    return p->ppid ? running_at(v, n, c, p->ppid) : MR_PROCESS_ROOT;
}

typedef struct tree_walk {
    const mr_process* v;
    size_t n;
    const size_t* parent;
    bool* placed;
    size_t* order;
    unsigned* depth;
    size_t out;
} tree_walk;

// The children of `parent` (MR_PROCESS_ROOT: the roots) in start order, each followed by
// its own subtree. Depth is bounded by the number of captures: a node is placed once.
static void place_children(tree_walk* w, size_t parent, unsigned depth) {
    for (;;) {
        size_t next = MR_PROCESS_ROOT;
        for (size_t i = 0; i < w->n; i++)
            if (!w->placed[i] && w->parent[i] == parent &&
                (next == MR_PROCESS_ROOT || cmp_start(&w->v[i], &w->v[next]) < 0))
                next = i;
        if (next == MR_PROCESS_ROOT)
            return;
        w->placed[next] = true;
        w->depth[w->out] = depth;
        w->order[w->out++] = next;
        place_children(w, next, depth + 1);
    }
}

// Sorts the set into tree order. Parents that form a cycle (a hostile meta) make their
// first member a root.
static int order_tree(mr_capture_set* s) {
    size_t n = s->n;
    size_t* parent = malloc(n * sizeof *parent);
    size_t* order = malloc(n * sizeof *order);
    unsigned* depth = malloc(n * sizeof *depth);
    bool* placed = calloc(n, sizeof *placed);
    mr_process* sorted = malloc(n * sizeof *sorted);
    size_t* newpos = malloc(n * sizeof *newpos);
    int e = parent && order && depth && placed && sorted && newpos ? 0 : -ENOMEM;
    if (!e) {
        for (size_t i = 0; i < n; i++)
            parent[i] = parent_of(s->procs, n, i);
        tree_walk w = {s->procs, n, parent, placed, order, depth, 0};
        place_children(&w, MR_PROCESS_ROOT, 0);
        while (w.out < n) { // a cycle: its earliest member becomes a root
            size_t first = MR_PROCESS_ROOT;
            for (size_t i = 0; i < n; i++)
                if (!placed[i] &&
                    (first == MR_PROCESS_ROOT || cmp_start(&s->procs[i], &s->procs[first]) < 0))
                    first = i;
            parent[first] = MR_PROCESS_ROOT;
            placed[first] = true;
            depth[w.out] = 0;
            order[w.out++] = first;
            place_children(&w, first, 1);
        }
        for (size_t k = 0; k < n; k++)
            newpos[order[k]] = k;
        for (size_t k = 0; k < n; k++) {
            sorted[k] = s->procs[order[k]];
            size_t p = parent[order[k]];
            sorted[k].parent = p == MR_PROCESS_ROOT ? MR_PROCESS_ROOT : newpos[p];
            sorted[k].depth = depth[k];
        }
        free(s->procs);
        s->procs = sorted;
        sorted = NULL;
    }
    free(parent);
    free(order);
    free(depth);
    free(placed);
    free(sorted);
    free(newpos);
    return e;
}

typedef struct file_id {
    dev_t dev;
    ino_t ino;
    size_t index;
} file_id;

static int cmp_file_id(const void* a, const void* b) {
    const file_id *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

// A capture given twice (by two names, or as a file and in its directory) would count its
// process twice. Returns 0, -EINVAL (*dup: the later path) or -ENOMEM. Paths that cannot be
// read are left to mt_capture_open to tell.
static int find_duplicate(const path_list* l, size_t* dup) {
    file_id* ids = malloc((l->n + 1) * sizeof *ids);
    if (!ids)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++) {
        struct stat st;
        if (stat(l->v[i], &st) == 0)
            ids[n++] = (file_id){st.st_dev, st.st_ino, i};
    }
    qsort(ids, n, sizeof *ids, cmp_file_id);
    int e = 0;
    for (size_t i = 1; i < n && !e; i++)
        if (ids[i].dev == ids[i - 1].dev && ids[i].ino == ids[i - 1].ino) {
            *dup = ids[i].index;
            e = -EINVAL;
        }
    free(ids);
    return e;
}

int mr_capture_set_open(mr_capture_set* s, char* const* paths, size_t n, char* bad, size_t badlen,
                        char* err, size_t errlen) {
    *s = (mr_capture_set){0};
    path_list l = {0};
    int e = 0;
    for (size_t i = 0; i < n && !e; i++) {
        if (is_dir(paths[i]))
            e = list_dir(&l, paths[i], err, errlen);
        else if ((e = push_path(&l, strdup(paths[i]))))
            snprintf(err, errlen, "out of memory");
        if (e)
            snprintf(bad, badlen, "%s", paths[i]);
    }
    size_t dup = 0;
    if (!e && (e = find_duplicate(&l, &dup))) {
        snprintf(bad, badlen, "%s", e == -EINVAL ? l.v[dup] : paths[0]);
        snprintf(err, errlen, "%s", e == -EINVAL ? "given more than once" : "out of memory");
    }
    size_t cap = 0;
    if (!e && MT_VEC_RESERVE(&s->procs, &cap, l.n)) {
        e = -ENOMEM;
        snprintf(bad, badlen, "%s", paths[0]);
        snprintf(err, errlen, "out of memory");
    }
    size_t taken = 0;
    for (; !e && taken < l.n; taken++) {
        mr_process* p = &s->procs[taken];
        *p = (mr_process){.path = l.v[taken]};
        if ((e = mt_capture_open(p->path, &p->cap, err, errlen))) {
            snprintf(bad, badlen, "%s", p->path);
            break;
        }
        s->n++;
        mr_sampled_note(p->cap);
        read_process(p);
    }
    for (size_t i = s->n; i < l.n; i++)
        free(l.v[i]); // the paths no process took
    free(l.v);
    if (!e && (e = order_tree(s))) {
        snprintf(bad, badlen, "%s", paths[0]);
        snprintf(err, errlen, "out of memory");
    }
    if (e)
        mr_capture_set_free(s);
    else
        mr_replay_share_limit(s->n); // the processes' sums add up: each gets its share
    return e;
}

void mr_capture_set_free(mr_capture_set* s) {
    for (size_t i = 0; i < s->n; i++) {
        mr_process* p = &s->procs[i];
        mr_symbols_free(p->sym);
        mt_capture_close(p->cap);
        free(p->path);
        free(p->exe);
        free(p->cmdline);
        free(p->parent_capture);
    }
    free(s->procs);
    *s = (mr_capture_set){0};
    mr_replay_share_limit(1);
}
