// SPDX-License-Identifier: MIT
// Known truth for MEMTRACE_MMAP=1 (mmap_test.py): one 64 MiB anonymous mapping, its upper
// half unmapped (32 MiB live), then grown by mremap to 48 MiB (the mmap heap's peak stays
// 64 MiB, 48 MiB live at the end); 8 pages unmapped in two steps; a 3-page file mapping (not the
// mmap heap); a 40 MiB malloc that glibc serves with its own mmap (libc heap only) and 1000 small
// mallocs, 10 of them leaked. Prints a checksum of what it wrote, so output changes would show.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB (1024u * 1024u)

static void fail(const char* what) {
    perror(what);
    exit(1);
}

__attribute__((noinline)) static char* map_anonymous(size_t len) {
    char* p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        fail("mmap");
    return p;
}

__attribute__((noinline)) static char* grow(char* p, size_t old_len, size_t new_len) {
    char* q = mremap(p, old_len, new_len, MREMAP_MAYMOVE);
    if (q == MAP_FAILED)
        fail("mremap");
    return q;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: mmap_prog FILE\n");
        return 1;
    }
    char* big = map_anonymous(64 * MIB);
    memset(big, 1, 64 * MIB);
    if (munmap(big + 32 * MIB, 32 * MIB))
        fail("munmap");
    big = grow(big, 32 * MIB, 48 * MIB);
    big[48 * MIB - 1] = 2;

    long page = sysconf(_SC_PAGESIZE);
    // A hole: 8 pages, pages 2-3 unmapped (6 pages live in two mappings), then all 8 pages
    // unmapped at once, across both parts and the hole.
    char* holed = map_anonymous(8 * (size_t)page);
    if (munmap(holed + 2 * page, 2 * (size_t)page) || munmap(holed, 8 * (size_t)page))
        fail("munmap");
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, 3 * page))
        fail(argv[1]);
    char* file = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (file == MAP_FAILED)
        fail("mmap file");
    file[0] = 'x';
    munmap(file, 3 * page);
    close(fd);

    char* heap = malloc(40 * MIB);
    if (!heap)
        fail("malloc");
    memset(heap, 3, 40 * MIB);
    unsigned sum =
        (unsigned char)heap[12345] + (unsigned char)big[0] + (unsigned char)big[48 * MIB - 1];
    free(heap);
    for (int i = 0; i < 1000; i++) {
        char* s = malloc(100);
        if (!s)
            fail("malloc");
        s[0] = (char)i;
        sum += (unsigned char)s[0];
        if (i % 100)
            free(s);
    }
    printf("checksum %u\n", sum);
    return 7;
}
