// SPDX-License-Identifier: MIT
// e2e subject (check_lazy_libdw.py, part exit_in_dlopen): one thread calls exit() while
// another keeps calling dlopen/dlclose, so the tracer's pass at exit, which dlopen's libdw
// when the symbol cache is cold, competes with the program's own loads for the loader's
// lock. The library loaded is libc itself (always loaded: only its count moves, nothing is
// unmapped under a running destructor). Prints "exiting" and exits 0; one allocation of
// EXIT_IN_DLOPEN_SIZE bytes from a known chain (leaked) gives the driver a stack to name.
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define EXIT_IN_DLOPEN_SIZE 1013

static _Atomic long loads;
static void* volatile kept;

static void* load_forever(void* arg) {
    (void)arg;
    for (;;) {
        void* h = dlopen("libc.so.6", RTLD_NOW);
        if (h)
            dlclose(h);
        atomic_fetch_add(&loads, 1);
    }
    return NULL;
}

static void* exit_now(void* arg) {
    (void)arg;
    printf("exiting\n");
    fflush(stdout);
    exit(0);
}

__attribute__((noinline)) static void allocate_known(void) {
    kept = malloc(EXIT_IN_DLOPEN_SIZE);
}

int main(void) {
    allocate_known();
    pthread_t loader, exiter;
    if (pthread_create(&loader, NULL, load_forever, NULL) != 0)
        return 1;
    while (atomic_load(&loads) < 200)
        sched_yield();
    if (pthread_create(&exiter, NULL, exit_now, NULL) != 0)
        return 1;
    pthread_join(exiter, NULL); // exit() ends the process before this returns
    return 1;
}
