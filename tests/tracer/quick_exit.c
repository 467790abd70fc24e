// SPDX-License-Identifier: MIT
// A program that ends a moment after it starts, by a raw exit_group as Go's runtime ends
// (check_quick_exit.py): 100 blocks of 300-309 B freed, one of 4242 B kept, "done" written,
// then status 7 with no exit handler run.
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    for (int i = 0; i < 100; i++) {
        char* volatile p = malloc(300 + i % 10);
        free(p);
    }
    void* volatile kept = malloc(4242);
    (void)kept;
    if (write(STDOUT_FILENO, "done\n", 5) != 5)
        return 1;
    syscall(SYS_exit_group, 7);
}
