// SPDX-License-Identifier: MIT
// dlopen with RTLD_DEEPBIND (RTLD_NOW or RTLD_LAZY): deepbind_lib.c and its dependency make
// heap calls of known sizes and counts, which the tracer must see although they bind to
// libc's functions; deepbind_own.c has an allocator of its own, which must keep its calls.
// Usage: deepbind now|lazy LIB OWN_LIB
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
    if (argc != 4)
        return 2;
    int mode = (strcmp(argv[1], "lazy") == 0 ? RTLD_LAZY : RTLD_NOW) | RTLD_DEEPBIND;
    void* lib = dlopen(argv[2], mode);
    void* own = dlopen(argv[3], mode);
    if (!lib || !own) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 3;
    }
    if (dlerror() != NULL)
        return 4; // a successful dlopen leaves no error
    void (*work)(void);
    int (*own_work)(void);
    void* f = dlsym(lib, "deepbind_lib_work");
    void* g = dlsym(own, "deepbind_own_work");
    if (!f || !g)
        return 5;
    memcpy(&work, &f, sizeof f);
    memcpy(&own_work, &g, sizeof g);
    work();
    printf("own allocator: %d blocks\n", own_work());
    return 0;
}
