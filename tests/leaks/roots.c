// SPDX-License-Identifier: MIT
// A program whose bss is 4 MiB, in memory: past its file's last page, an anonymous mapping of
// its own. The only pointer to one block (still reachable) lies in it; another block's only
// pointer was overwritten (definitely lost). tests/leaks/check_roots.py reads the scan's roots.
#include <stdlib.h>
#include <string.h>

static void* volatile table[(4 << 20) / sizeof(void*)];

__attribute__((noinline)) static void lose_one(void) {
    void* volatile p = malloc(45);
    memset(p, 1, 45);
    p = NULL;
}

int main(void) {
    for (size_t i = 0; i < sizeof table / sizeof *table; i += 4096 / sizeof *table)
        table[i] = NULL; // every page in memory
    table[sizeof table / sizeof *table / 2] = malloc(123);
    lose_one();
    return 0;
}
