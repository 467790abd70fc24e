// SPDX-License-Identifier: MIT
// Allocates and frees N blocks of varied sizes, prints a sum of what it wrote into them and
// exits 3: run under a file size limit (RLIMIT_FSIZE) below what its capture needs, where a
// write past the limit raises SIGXFSZ, which kills by default.
// Usage: file_limit N
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    unsigned long sum = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned char* volatile p = malloc(16 + i % 512);
        p[0] = (unsigned char)i;
        sum += p[0];
        free(p);
    }
    printf("sum %lu\n", sum);
    return 3;
}
