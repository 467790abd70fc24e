// SPDX-License-Identifier: MIT
// memreport's messages from two threads at once stay whole lines: diff reads its two
// captures on two threads, and with --skip-corrupt each thread's event reader warns about
// the chunks it leaves out through mr_messages_error while the other may be warning too.
#include "messages.h"

#include "../check.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { LINES_PER_THREAD = 20000 };

static pthread_barrier_t start;

static void* warn_many(void* arg) {
    const char* path = arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < LINES_PER_THREAD; i++)
        mr_messages_error(path,
                          "warning: event chunk %d is corrupt (checksum mismatch); skipped its "
                          "100 events",
                          i);
    return NULL;
}

// Whether line is one of the messages warn_many writes for path.
static bool whole(const char* line, const char* path) {
    char head[64];
    int n = snprintf(head, sizeof head, "memreport: %s: warning: event chunk ", path);
    if (strncmp(line, head, (size_t)n))
        return false;
    char* end;
    long i = strtol(line + n, &end, 10);
    return end != line + n && i >= 0 && i < LINES_PER_THREAD &&
           !strcmp(end, " is corrupt (checksum mismatch); skipped its 100 events\n");
}

int main(void) {
    char path[] = "/tmp/mt_test_messages.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    pthread_barrier_init(&start, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, warn_many, "base.db");
    warn_many("new.db");
    pthread_join(t, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);

    FILE* f = fopen(path, "r");
    CHECK(f != NULL);
    char line[512];
    int lines = 0, broken = 0;
    while (f && fgets(line, sizeof line, f)) {
        lines++;
        if (!whole(line, "base.db") && !whole(line, "new.db") && broken++ < 3)
            fprintf(stderr, "broken line: %s", line);
    }
    if (f)
        fclose(f);
    unlink(path);
    CHECK_EQ_I64(broken, 0);
    CHECK_EQ_I64(lines, 2 * LINES_PER_THREAD);
    CHECK_DONE();
}
