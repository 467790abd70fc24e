// SPDX-License-Identifier: MIT
// A program with known truth for sampling (tests/sampling/sampling_test.py). Its sites,
// each a function of its own, at the peak (all allocated, nothing of the last phase freed):
//   small_blocks   24 MiB in blocks of 16..1024 bytes, freed after the peak;
//   leak_medium     8 MiB in blocks of 1000..3000 bytes, leaked;
//   leak_large      8 MiB in 1 MiB blocks (above the mean interval: always sampled), leaked;
//   grow_by_realloc 8 MiB in 1024 blocks grown by realloc from 64 bytes to 8 KiB, leaked;
//   thread_alloc   16 MiB of 512-byte blocks allocated by one thread; another thread frees
//                  every other one before the peak (8 MiB live), the rest freed at the end;
//   churn          malloc/free pairs of 16..4096 bytes, never live at the peak.
// Sizes come from a fixed LCG, so every run allocates the same sequence. Prints a checksum of
// what it wrote and exits 3, so a tracer changing either is seen.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024 * 1024)

static uint64_t lcg = 12345;
static size_t rnd(size_t lo, size_t hi) { // in [lo, hi]
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (size_t)(lcg >> 33) % (hi - lo + 1);
}

static uint64_t checksum;
static void touch(char* p, size_t n) {
    memset(p, (int)(n & 0x7f), n);
    checksum = checksum * 31 + (unsigned char)p[n - 1] + n;
}

// The programs' lists of blocks live outside the heap, so they are no site of their own.
#define MAX_BLOCKS (1u << 17)
typedef struct blocks {
    char** p;
    size_t n;
} blocks;
static char* lists[3][MAX_BLOCKS];

// Blocks of sizes in [lo, hi] until `total` bytes.
static __attribute__((noinline)) blocks small_blocks(size_t total, size_t lo, size_t hi) {
    blocks b = {lists[0], 0};
    for (size_t sum = 0; sum < total && b.n < MAX_BLOCKS;) {
        size_t n = rnd(lo, hi);
        if (sum + n > total)
            n = total - sum;
        if (n < lo)
            break;
        b.p[b.n] = malloc(n);
        touch(b.p[b.n++], n);
        sum += n;
    }
    return b;
}

static __attribute__((noinline)) blocks leak_medium(size_t total) {
    blocks b = {lists[1], 0};
    for (size_t sum = 0; sum + 3000 <= total;) {
        size_t n = rnd(1000, 3000);
        b.p[b.n] = malloc(n);
        touch(b.p[b.n++], n);
        sum += n;
    }
    return b;
}

static __attribute__((noinline)) void leak_large(size_t count) {
    for (size_t i = 0; i < count; i++) {
        char* p = malloc(MIB);
        touch(p, MIB);
    }
}

static __attribute__((noinline)) void grow_by_realloc(size_t count) {
    for (size_t i = 0; i < count; i++) {
        char* p = NULL;
        for (size_t n = 64; n <= 8192; n *= 2) {
            p = realloc(p, n);
            touch(p, n);
        }
    }
}

static __attribute__((noinline)) void churn(size_t count) {
    for (size_t i = 0; i < count; i++) {
        size_t n = rnd(16, 4096);
        char* p = malloc(n);
        touch(p, n);
        free(p);
    }
}

static blocks shared;

static __attribute__((noinline)) blocks thread_alloc(size_t total) {
    blocks b = {lists[2], 0};
    for (size_t sum = 0; sum < total; sum += 512) {
        b.p[b.n] = malloc(512);
        touch(b.p[b.n++], 512);
    }
    return b;
}

static void* producer(void* arg) {
    (void)arg;
    shared = thread_alloc(16 * MIB);
    return NULL;
}

static void* consumer(void* arg) { // frees every other block of another thread
    (void)arg;
    for (size_t i = 0; i < shared.n; i += 2)
        free(shared.p[i]);
    return NULL;
}

static void run_thread(void* (*fn)(void*)) {
    pthread_t t;
    if (pthread_create(&t, NULL, fn, NULL) || pthread_join(t, NULL))
        exit(1);
}

int main(void) {
    run_thread(producer);
    run_thread(consumer);
    churn(200000);
    blocks medium = leak_medium(8 * MIB);
    leak_large(8);
    grow_by_realloc(1024);
    blocks small = small_blocks(24 * MIB, 16, 1024);
    // The peak: from here on only frees.
    for (size_t i = 0; i < small.n; i++)
        free(small.p[i]);
    for (size_t i = 1; i < shared.n; i += 2)
        free(shared.p[i]);
    printf("checksum %llu blocks %zu %zu\n", (unsigned long long)checksum, small.n, medium.n);
    return 3;
}
