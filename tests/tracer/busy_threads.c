// SPDX-License-Identifier: MIT
// THREADS threads allocating without pause, which the tracer's writer cannot outrun. Without
// FORKS: half a second after each has allocated, makes one block of MARK_SIZE bytes, prints
// "ready PID" and waits to be killed. With FORKS: forks that many times meanwhile (each child
// allocates, then _exit(7)), prints "N children ok" and ends.
//
// Usage: busy_threads THREADS [FORKS]
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define MARK_SIZE 123457

static atomic_int started, stop;
void* volatile sink;

static void* spin(void* arg) {
    (void)arg;
    void* pool[64] = {0};
    for (unsigned i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
        unsigned k = i % 64;
        free(pool[k]);
        pool[k] = malloc(16 + k * 8);
        if (i == 0)
            atomic_fetch_add(&started, 1);
    }
    for (unsigned k = 0; k < 64; k++)
        free(pool[k]);
    return NULL;
}

static int fork_children(int forks) {
    int ok = 0;
    for (int i = 0; i < forks; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            sink = malloc(1000);
            free(sink);
            _exit(7);
        }
        int status;
        if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
            WEXITSTATUS(status) == 7)
            ok++;
    }
    return ok;
}

int main(int argc, char** argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    int forks = argc > 2 ? atoi(argv[2]) : 0;
    if (threads < 1 || threads > MAX_THREADS || forks < 0) {
        fprintf(stderr, "usage: busy_threads THREADS(1-%d) [FORKS]\n", MAX_THREADS);
        return 2;
    }
    pthread_t t[MAX_THREADS];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, spin, NULL) != 0) {
            perror("pthread_create");
            return 1;
        }
    struct timespec ms = {0, 1000000};
    while (atomic_load(&started) < threads)
        nanosleep(&ms, NULL);
    if (forks) {
        int ok = fork_children(forks);
        atomic_store(&stop, 1);
        for (int i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
        printf("%d children ok\n", ok);
        return ok == forks ? 0 : 1;
    }
    // Half a second in: the writer has a backlog by then.
    struct timespec half = {0, 500000000};
    nanosleep(&half, NULL);
    sink = malloc(MARK_SIZE);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        pause();
}
