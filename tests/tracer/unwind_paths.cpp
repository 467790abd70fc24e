// SPDX-License-Identifier: MIT
// Many distinct allocation paths for comparing MEMTRACE_UNWIND=auto with =libunwind:
// recursion of varying depth through several functions, allocations through libstdc++
// (operator new, std::vector growth, std::string) and through libc callbacks (qsort), a
// function with a variable-size stack frame (alloca), all built with and without frame
// pointers. Deterministic: the same run twice gives the same stacks and counts.
#include <alloca.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static std::vector<void*> keep;

__attribute__((noinline)) static void leaf_malloc(size_t n) {
    keep.push_back(malloc(n));
}

__attribute__((noinline)) static void with_alloca(int depth, size_t n) {
    // A frame whose size depends on the argument: its CFA is not SP + constant.
    char* buf = static_cast<char*>(alloca(16 + (size_t)depth * 48));
    memset(buf, depth, 16);
    if (buf[3] == depth)
        leaf_malloc(n + (size_t)buf[0]);
}

__attribute__((noinline)) static void level_c(int depth, size_t n);

// A frame that realigns the stack (an over-aligned local) and has a variable-size part: its
// CFA is where its prologue left the old stack pointer, not a fixed offset from SP or RBP.
__attribute__((noinline)) static void realigned(int depth, size_t n) {
    alignas(64) volatile char aligned[128];
    aligned[0] = (char)depth;
    char* vla = static_cast<char*>(alloca(16 + (size_t)depth * 40));
    memset(vla, depth, 16);
    if (vla[3] == depth && aligned[0] == (char)depth)
        leaf_malloc(n + 7);
}

__attribute__((noinline)) static void level_a(int depth, size_t n) {
    if (depth <= 0) {
        leaf_malloc(n);
        return;
    }
    if (depth % 5 == 0)
        realigned(depth, n);
    if (depth % 3 == 0)
        level_c(depth - 1, n + 1);
    else
        level_a(depth - 1, n + 2);
}

__attribute__((noinline)) static void level_b(int depth, size_t n) {
    if (depth <= 0) {
        with_alloca((int)(n % 7), n);
        return;
    }
    level_a(depth - 1, n + 3);
}

__attribute__((noinline)) static void level_c(int depth, size_t n) {
    if (depth <= 0) {
        std::string s(40 + n % 50, 'x'); // operator new inside libstdc++
        keep.push_back(strdup(s.c_str()));
        return;
    }
    level_b(depth - 1, n + 5);
}

static int compare_allocating(const void* a, const void* b) {
    // Called by libc's qsort (no frame pointers): allocate from inside the callback.
    static int calls;
    if (calls++ % 50 == 0)
        leaf_malloc(24);
    return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

int main() {
    for (int round = 0; round < 40; round++) {
        for (int depth = 0; depth < 24; depth++) {
            level_a(depth, (size_t)round);
            level_b(depth, (size_t)round + 1);
            level_c(depth, (size_t)round + 2);
        }
        std::vector<int> v;
        for (int i = 0; i < 100; i++)
            v.push_back((i * 7919) % 1000);
        qsort(v.data(), v.size(), sizeof(int), compare_allocating);
    }
    for (void* p : keep)
        free(p);
    std::printf("%zu blocks\n", keep.size());
    return 0;
}
