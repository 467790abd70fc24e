// SPDX-License-Identifier: MIT
// A thread with a 24 KiB stack allocating from a few frames deep: the tracer's hooks run on
// that stack too and must fit in it.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

void* volatile sink;
volatile char last;

__attribute__((noinline)) static void nest(int depth) {
    volatile char pad[256]; // a real frame of 256 bytes at every level
    pad[depth] = (char)depth;
    last = pad[depth];
    if (depth > 0) {
        nest(depth - 1);
        return;
    }
    for (int i = 0; i < 100; i++) {
        sink = malloc(32 + (size_t)i);
        free(sink);
    }
}

static void* run(void* arg) {
    (void)arg;
    nest(12); // about 4 KiB of the program's own frames
    return NULL;
}

int main(void) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 24 * 1024);
    pthread_t t;
    if (pthread_create(&t, &attr, run, NULL) != 0)
        return 2;
    pthread_join(t, NULL);
    puts("small stack ok");
    return 0;
}
