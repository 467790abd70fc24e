// SPDX-License-Identifier: MIT
// An interned-string table: each distinct string gets a dense id (0, 1, 2... in the order
// first seen) and one copy. Hashed with keyed SipHash (siphash.h) because the strings are
// names the traced program chose. For the model's name tables and string-keyed lookups
// (flame graph strings, canonical stacks, allocator wrappers); it never escapes or
// interprets the bytes it holds.
#ifndef MR_STRTAB_H
#define MR_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MR_STRTAB_NONE UINT32_MAX

typedef struct mr_strtab {
    char** strings;   // id -> its copy
    uint64_t* hashes; // id -> its hash
    size_t n, cap;
    uint32_t* slots; // open addressing of ids; MR_STRTAB_NONE = empty
    size_t mask;     // slot count - 1 (a power of two)
    uint64_t k0, k1;
} mr_strtab;

int mr_strtab_init(mr_strtab* t);
void mr_strtab_free(mr_strtab* t);
// The id of s, adding a copy when new (*added tells which; added may be NULL). Returns 0
// or -ENOMEM.
int mr_strtab_intern(mr_strtab* t, const char* s, uint32_t* id, bool* added);
// The id of s, or MR_STRTAB_NONE when it was never interned.
uint32_t mr_strtab_find(const mr_strtab* t, const char* s);
// The string of an id (id < t->n).
static inline const char* mr_strtab_get(const mr_strtab* t, uint32_t id) {
    return t->strings[id];
}

#endif
