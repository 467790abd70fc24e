// SPDX-License-Identifier: MIT
// Forks while another thread allocates and the tracer's writer is busy committing: every
// child must start its own capture without deadlocking on locks held at fork time by
// other threads (the tracer's own or SQLite's). Children allocate, then _exit.
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILDREN 40

static atomic_int stop;
void* volatile sink;

static void* churn(void* arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        void* p[64];
        for (int i = 0; i < 64; i++)
            p[i] = malloc(16 + (size_t)i * 8);
        for (int i = 0; i < 64; i++)
            free(p[i]);
        usleep(50);
    }
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, churn, NULL);
    int ok = 0;
    for (int i = 0; i < CHILDREN; i++) {
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
        usleep(2000); // let the writer commit between forks
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    printf("%d children ok\n", ok);
    return ok == CHILDREN ? 0 : 1;
}
