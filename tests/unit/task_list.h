// SPDX-License-Identifier: MIT
// The threads of this process, by tid (/proc/self/task): for the tests of which threads the
// event reader starts and ends. Threads are told apart by tid, not counted: a thread joined
// just before a list was taken may still be in it (the kernel wakes the joiner before it
// removes the task), and be gone from the next one.
#ifndef MT_TEST_TASK_LIST_H
#define MT_TEST_TASK_LIST_H

#include "../check.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct tids {
    int n;
    int tid[64];
} tids;

static inline tids threads_now(void) {
    tids t = {0};
    DIR* d = opendir("/proc/self/task");
    CHECK(d != NULL);
    struct dirent* e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' && t.n < 64)
            t.tid[t.n++] = atoi(e->d_name);
    if (d)
        closedir(d);
    return t;
}

static inline bool tids_has(const tids* t, int tid) {
    for (int k = 0; k < t->n; k++)
        if (t->tid[k] == tid)
            return true;
    return false;
}

#endif
