// SPDX-License-Identifier: MIT
// The leak scan's workload (bench/leaks/leaks.py): N blocks of SIZE bytes live at exit, half
// held from a global array (still reachable), half a chain whose head is lost (one
// definitely lost block, the rest indirectly lost). The scan reads every block's contents:
// the heap's size is what it costs.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void** volatile keep;

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: leak_heap BLOCKS SIZE\n");
        return 2;
    }
    size_t n = strtoull(argv[1], NULL, 10), size = strtoull(argv[2], NULL, 10);
    if (size < sizeof(void*))
        size = sizeof(void*);
    keep = malloc(n / 2 * sizeof *keep);
    void* head = NULL;
    for (size_t i = 0; i < n; i++) {
        void** b = malloc(size);
        memset(b, 0, size);
        if (i % 2 == 0 && i / 2 < n / 2) {
            keep[i / 2] = b;
        } else {
            b[0] = head;
            head = b;
        }
    }
    head = NULL;
    return 0;
}
