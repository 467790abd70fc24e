// SPDX-License-Identifier: MIT
// Thread after thread, as a server that starts one per request: the tracer's memory must
// follow the threads alive at once, not all that ever ran. Thread i is named w<i>,
// allocates 1000 + i % 97 bytes and frees them; every tenth leaks 5000 + i bytes.
// Prints its VmSize (kB) after the first rounds and at the end.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 40
#define PER_ROUND 100
#define WARM_ROUNDS 5

void* volatile leaked[ROUNDS * PER_ROUND / 10];

static void* run(void* arg) {
    int i = (int)(intptr_t)arg;
    char name[16];
    snprintf(name, sizeof name, "w%d", i);
    pthread_setname_np(pthread_self(), name);
    void* volatile p = malloc(1000 + (size_t)(i % 97));
    free(p);
    if (i % 10 == 0)
        leaked[i / 10] = malloc(5000 + (size_t)i);
    return NULL;
}

static long vm_size_kb(void) {
    FILE* f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmSize:", 7) == 0)
            kb = atol(line + 7);
    if (f)
        fclose(f);
    return kb;
}

int main(void) {
    long warm = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < PER_ROUND; k++) {
            pthread_t t;
            if (pthread_create(&t, NULL, run, (void*)(intptr_t)(r * PER_ROUND + k)) != 0)
                return 2;
            pthread_join(t, NULL);
        }
        struct timespec pause = {0, 20 * 1000 * 1000}; // a few of the writer's periods
        nanosleep(&pause, NULL);
        if (r == WARM_ROUNDS - 1)
            warm = vm_size_kb();
    }
    printf("vmsize_kb %ld %ld\n", warm, vm_size_kb());
    return 0;
}
