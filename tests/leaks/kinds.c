// SPDX-License-Identifier: MIT
// One block of each leak kind as memcheck names it, each allocated by a function of its own
// (the check compares per kind and allocating function with valgrind): a block whose only
// pointer was overwritten, a list whose head was lost, a block held only through a pointer
// inside it, a global cache, a block held only by another thread's stack, one only by TLS,
// one whose pointer is hidden by XOR, one held only from a mapped file, one only from shared
// memory. Ends by exit() with the other thread still blocked;
// with the argument "alone", at once and with no other thread, never having blocked.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE // memfd_create, MAP_ANONYMOUS
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct node {
    struct node* next;
    char pad[40];
};
static void* volatile cache[4];          // still reachable: a global cache
static char* volatile interior;          // possibly lost: only a pointer inside
static __thread void* volatile tls_keep; // still reachable: TLS
static volatile uintptr_t hidden;        // definitely lost: XOR-hidden
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;

__attribute__((noinline)) static void lose_one(void) {
    void* volatile p = malloc(100); // definitely lost: its only pointer overwritten
    memset(p, 1, 100);
    p = NULL;
}

static struct node* volatile list_head;

__attribute__((noinline)) static void lose_list(void) {
    for (int i = 0; i < 5; i++) {
        struct node* n = calloc(1, sizeof *n);
        n->next = list_head;
        list_head = n;
    }
    list_head = NULL; // head definitely lost, the other four indirectly
}

static void* hold_in_stack(void* arg) {
    (void)arg;
    void* volatile mine = malloc(333); // still reachable: only in this thread's stack
    pthread_mutex_lock(&mu);
    ready = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    for (;;)
        pause();
    return (void*)mine;
}

__attribute__((noinline)) static void fill_cache(void) {
    for (int i = 0; i < 4; i++)
        cache[i] = malloc(64 * (i + 1));
}

__attribute__((noinline)) static void keep_interior(void) {
    // 48 bytes in: past the offsets memcheck's heuristics take for a start (8, 24).
    interior = (char*)malloc(200) + 48;
}

__attribute__((noinline)) static void keep_in_tls(void) {
    tls_keep = malloc(77);
}

// Still reachable: memcheck reads writable file mappings and shared memory as roots.
__attribute__((noinline)) static void keep_in_file(void) {
    int fd = memfd_create("kinds", 0);
    if (fd < 0 || ftruncate(fd, 4096) != 0)
        abort();
    void** page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (page == MAP_FAILED)
        abort();
    close(fd);
    page[3] = malloc(91);
}

__attribute__((noinline)) static void keep_in_shared(void) {
    void** page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        abort();
    page[5] = malloc(93);
}

__attribute__((noinline)) static void hide_by_xor(void) {
    hidden = (uintptr_t)malloc(55) ^ 0x5a5a5a5a5a5a5a5aull;
}

int main(int argc, char** argv) {
    lose_one();
    lose_list();
    fill_cache();
    keep_interior();
    keep_in_tls();
    hide_by_xor();
    keep_in_file();
    keep_in_shared();
    if (argc > 1 && !strcmp(argv[1], "alone"))
        exit(0);
    pthread_t t;
    pthread_create(&t, NULL, hold_in_stack, NULL);
    pthread_mutex_lock(&mu);
    while (!ready)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    exit(0);
}
