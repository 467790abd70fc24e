// SPDX-License-Identifier: MIT
// e2e truth: 4 threads with cross-thread frees. The main thread first makes the peak (one
// 4 MiB block, freed); then each thread allocates blocks that the next thread frees, then
// the threads pass blocks round a ring of mailboxes so freed addresses are reused by other
// threads at once; each thread leaks one block of 1000 + i bytes. The concurrent phases
// never hold more than ~1 MiB, so the peak does not depend on the interleaving.
#include "truth.h"

#include <pthread.h>

enum { NT = 4, PER = 2000, RING = 64, ROUNDS = 20000 };

static void* blocks[NT][PER];
static pthread_barrier_t barrier;
// One slot per thread for its leaked block: a global all threads overwrite is a data race.
static void* volatile leaked[NT];

typedef struct mailbox {
    pthread_mutex_t lock;
    void* item[RING];
    size_t size[RING];
    unsigned head, tail;
} mailbox;
static mailbox box[NT];

static size_t block_size(int t, int j) {
    return (size_t)(16 * (t + 1) + j % 7);
}

static int push(mailbox* b, void* p, size_t size) {
    pthread_mutex_lock(&b->lock);
    int ok = b->tail - b->head < RING;
    if (ok) {
        b->item[b->tail % RING] = p;
        b->size[b->tail % RING] = size;
        b->tail++;
    }
    pthread_mutex_unlock(&b->lock);
    return ok;
}

static void* pop(mailbox* b, size_t* size) {
    void* p = NULL;
    pthread_mutex_lock(&b->lock);
    if (b->head != b->tail) {
        p = b->item[b->head % RING];
        *size = b->size[b->head % RING];
        b->head++;
    }
    pthread_mutex_unlock(&b->lock);
    return p;
}

static void* worker(void* arg) {
    int t = (int)(intptr_t)arg;
    pthread_barrier_wait(&barrier); // threads exist before any work starts
    if (t_baseline())
        return NULL;
    pthread_barrier_wait(&barrier); // main made the peak
    for (int j = 0; j < PER; j++)
        blocks[t][j] = T_malloc(block_size(t, j));
    pthread_barrier_wait(&barrier);
    int victim = (t + 1) % NT;
    for (int j = 0; j < PER; j++)
        T_free(blocks[victim][j], block_size(victim, j));
    pthread_barrier_wait(&barrier);
    mailbox* next = &box[(t + 1) % NT];
    for (int k = 0; k < ROUNDS; k++) {
        size_t size = 32 + (size_t)t, got;
        void* p = T_malloc(size);
        // Never wait for a full mailbox: a thread that finished its rounds no longer
        // empties its own, so waiting could deadlock.
        if (!push(next, p, size))
            T_free(p, size);
        void* q = pop(&box[t], &got);
        if (q)
            T_free(q, got);
    }
    pthread_barrier_wait(&barrier); // nobody pushes any more
    size_t got;
    for (void* q; (q = pop(&box[t], &got));)
        T_free(q, got);
    leaked[t] = T_malloc(1000 + (size_t)t);
    return NULL;
}

int main(void) {
    pthread_t th[NT];
    pthread_barrier_init(&barrier, NULL, NT + 1);
    for (int t = 0; t < NT; t++) {
        pthread_mutex_init(&box[t].lock, NULL);
        if (pthread_create(&th[t], NULL, worker, (void*)(intptr_t)t))
            t_fail(10, "pthread_create");
    }
    pthread_barrier_wait(&barrier);
    if (!t_baseline()) {
        void* big = T_malloc(4 << 20);
        T_free(big, 4 << 20);
        pthread_barrier_wait(&barrier);
        pthread_barrier_wait(&barrier);
        pthread_barrier_wait(&barrier);
        pthread_barrier_wait(&barrier);
        truth.threads = NT + 1;
    }
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    if (!t_baseline() && (truth.peak != 4 << 20 || truth.nlive != NT))
        t_fail(11, "model");
    return t_write("") ? 12 : 0;
}
