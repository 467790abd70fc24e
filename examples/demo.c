// SPDX-License-Identifier: MIT
// The quick-start demo: a small word-index builder with a memory peak in the middle, a
// phase marked with the annotation API, and one deliberate leak, so the plot, the flame
// graph and the leak report each have something to show.
#include "memtrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char* word;
    size_t count;
    struct entry* next;
} entry;

#define BUCKETS 4096

static unsigned hash(const char* s) {
    unsigned h = 2166136261u;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

static entry** index_create(void) {
    return calloc(BUCKETS, sizeof(entry*));
}

static void index_add(entry** index, const char* word) {
    unsigned b = hash(word) % BUCKETS;
    for (entry* e = index[b]; e; e = e->next) {
        if (strcmp(e->word, word) == 0) {
            e->count++;
            return;
        }
    }
    entry* e = malloc(sizeof *e);
    e->word = strdup(word);
    e->count = 1;
    e->next = index[b];
    index[b] = e;
}

static void index_free(entry** index) {
    for (int b = 0; b < BUCKETS; b++) {
        for (entry* e = index[b]; e;) {
            entry* next = e->next;
            free(e->word);
            free(e);
            e = next;
        }
    }
    free(index);
}

// A temporary buffer per document, grown with realloc like a line reader would.
static char* make_document(int n) {
    size_t cap = 64, len = 0;
    char* doc = malloc(cap);
    for (int i = 0; i < 400; i++) {
        char word[32];
        int w = snprintf(word, sizeof word, "w%d ", (i * 7919 + n * 31) % 3000);
        if (len + (size_t)w + 1 > cap) {
            cap *= 2;
            doc = realloc(doc, cap);
        }
        memcpy(doc + len, word, (size_t)w + 1);
        len += (size_t)w;
    }
    return doc;
}

static void index_documents(entry** index, int docs) {
    for (int n = 0; n < docs; n++) {
        char* doc = make_document(n);
        for (char* tok = strtok(doc, " "); tok; tok = strtok(NULL, " "))
            index_add(index, tok);
        free(doc);
    }
}

static char* remember_config(void) {
    // The deliberate leak: never freed.
    char* cfg = malloc(4000);
    snprintf(cfg, 4000, "buckets=%d", BUCKETS);
    return cfg;
}

int main(void) {
    remember_config();
    memtrace_range_begin("indexing");
    entry** index = index_create();
    index_documents(index, 300);
    memtrace_range_end("indexing");
    memtrace_mark("index built");
    // The peak: a large snapshot buffer while the index is alive.
    size_t words = 0;
    char* snapshot = malloc(2u << 20);
    for (int b = 0; b < BUCKETS; b++)
        for (entry* e = index[b]; e; e = e->next)
            snapshot[words++ % (2u << 20)] = e->word[0];
    index_free(index);
    free(snapshot);
    memtrace_mark("index freed");
    printf("demo: indexed 300 documents, %zu distinct words\n", words);
    return 0;
}
