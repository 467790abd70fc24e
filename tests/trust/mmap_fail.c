// SPDX-License-Identifier: MIT
// Mapping calls the kernel refuses (for MEMTRACE_MMAP=1, tests/trust/check_audit.py): each
// leaves every mapping as it was, so the capture must show none of them. Known truth:
// two anonymous mappings, A of 3 pages and B of 1 page, both unmapped at the end.
//   mmap MAP_FIXED over A's first page, neither shared nor private: EINVAL
//   mremap of B to A's address with MREMAP_FIXED but not MREMAP_MAYMOVE: EINVAL
//   munmap from A over a length beyond the address space: EINVAL
// Prints "refused 3" when the three failed and A and B still hold what was written there.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char* a = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char* b = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED || b == MAP_FAILED)
        return 2;
    memset(a, 'a', 3 * page);
    memset(b, 'b', page);
    int refused = 0;
    errno = 0;
    refused +=
        mmap(a, page, PROT_READ, MAP_FIXED | MAP_ANONYMOUS, -1, 0) == MAP_FAILED && errno == EINVAL;
    errno = 0;
    refused += mremap(b, page, page, MREMAP_FIXED, a) == MAP_FAILED && errno == EINVAL;
    errno = 0;
    refused += munmap(a, (size_t)1 << 62) != 0 && errno == EINVAL;
    int kept = a[0] == 'a' && a[3 * page - 1] == 'a' && b[0] == 'b' && b[page - 1] == 'b';
    munmap(a, 3 * page);
    munmap(b, page);
    printf("refused %d%s\n", refused, kept ? "" : ", contents lost");
    return refused == 3 && kept ? 0 : 1;
}
