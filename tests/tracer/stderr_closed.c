// SPDX-License-Identifier: MIT
// Run with its stderr closed: the data file it opens first gets descriptor 2. Writes one
// line there, allocates and frees N blocks of varied sizes, writes a last line, exits 0.
// Whatever the tracer has to say must not land in that file.
// Usage: stderr_closed DATAFILE N
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(int fd, const char* line) {
    if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
        exit(4);
}

int main(int argc, char** argv) {
    if (argc != 3)
        return 1;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 2;
    char line[64];
    snprintf(line, sizeof line, "data on descriptor %d\n", fd);
    say(fd, line);
    unsigned n = (unsigned)atoi(argv[2]);
    for (unsigned i = 0; i < n; i++) {
        unsigned char* volatile p = malloc(16 + i % 512);
        p[0] = (unsigned char)i;
        free(p);
    }
    say(fd, "end\n");
    return 0;
}
