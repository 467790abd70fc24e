// SPDX-License-Identifier: MIT
// A program that forks while another thread maps and unmaps memory (for MEMTRACE_MMAP=1,
// tests/trust/check_audit.py): each child maps, writes and unmaps a page, then exits 0;
// the parent checks every child did and prints "forks ok N". Under the tracer a child
// must never inherit the mapping table locked by a thread that does not exist in it.
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKS 200

static atomic_int stop;

static void* mapper(void* arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        char* p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            abort();
        p[0] = 1;
        munmap(p, 1 << 16);
    }
    return NULL;
}

int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, mapper, NULL) != 0)
        return 2;
    int ok = 0;
    for (int i = 0; i < FORKS; i++) {
        pid_t pid = fork();
        if (pid < 0)
            return 3;
        if (pid == 0) {
            char* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED)
                _exit(4);
            memset(p, 7, 4096);
            int seen = p[4095];
            _exit(munmap(p, 4096) == 0 && seen == 7 ? 0 : 5);
        }
        int status;
        if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0)
            ok++;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    printf("forks ok %d\n", ok);
    return ok == FORKS ? 0 : 1;
}
