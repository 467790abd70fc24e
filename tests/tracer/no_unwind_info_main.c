// SPDX-License-Identifier: MIT
// The part of no_unwind_info with unwind info: an indirect call site that calls code without
// unwind info and code with it, threads started with and without it, then noinfo_paths.
// Each allocation's size tells where it comes from (check_no_unwind_info.py).
#include <pthread.h>
#include <stdlib.h>

void noinfo_paths(void);
void noinfo_callback(int n);    // mallocs 2100 + n bytes
void* noinfo_thread(void* arg); // mallocs 3100 bytes

static void* blocks[8];
static int nblocks;
static volatile int sink;

__attribute__((noinline)) static void normal_callback(int n) {
    blocks[nblocks++] = malloc(2000 + (size_t)n);
    sink++;
}

__attribute__((noinline)) static void call_through(void (*cb)(int), int n) {
    cb(n);
    sink++; // no tail call
}

static void* normal_thread(void* arg) {
    void* p = malloc(3000);
    sink++;
    free(p);
    return arg;
}

static void run_thread(void* (*start)(void*)) {
    pthread_t t;
    if (pthread_create(&t, NULL, start, NULL) == 0)
        pthread_join(t, NULL);
}

int main(void) {
    normal_callback(1);               // its return address first walked in a normal stack
    call_through(noinfo_callback, 2); // the call site into code without unwind info,
    for (int i = 0; i < 5; i++)       // then into code with it
        call_through(normal_callback, 3);
    run_thread(noinfo_thread);
    run_thread(normal_thread);
    noinfo_paths();
    for (int i = 0; i < nblocks; i++)
        free(blocks[i]);
    return 0;
}
