// SPDX-License-Identifier: MIT
// Allocates and frees 2 million blocks of varied sizes, prints a sum of what it wrote into
// them and exits 3: run under a file size limit (RLIMIT_FSIZE) far below what its capture
// needs, where writing past the limit raises SIGXFSZ, which kills by default.
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    unsigned long sum = 0;
    for (unsigned i = 0; i < 2000000; i++) {
        unsigned char* volatile p = malloc(16 + i % 512);
        p[0] = (unsigned char)i;
        sum += p[0];
        free(p);
    }
    printf("sum %lu\n", sum);
    return 3;
}
