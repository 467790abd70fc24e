// SPDX-License-Identifier: MIT
// test_tmpdir and test_tmppath (tmpdir.h): built into every unit test and every fixture tool.
#define _XOPEN_SOURCE 700 // nftw

#include "tmpdir.h"

#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/mt-test-XXXXXX";
static pid_t owner;

static int remove_entry(const char* path, const struct stat* st, int flag, struct FTW* ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

// Only in the process that made it: a child that exits must not take it from its parent.
static void remove_dir(void) {
    if (getpid() == owner)
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char* test_tmpdir(void) {
    static bool made;
    if (!made) {
        if (!mkdtemp(dir)) {
            perror("test_tmpdir: mkdtemp");
            exit(99);
        }
        made = true;
        owner = getpid();
        atexit(remove_dir);
    }
    return dir;
}

char* test_tmppath(const char* name) {
    static char buf[8][512];
    static unsigned next;
    char* p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", test_tmpdir(), name);
    return p;
}
