// SPDX-License-Identifier: MIT
// A tiny test helper: CHECK macros that print file:line and both values, and a failure
// count that main() returns. One executable per module, registered with CTest.
#ifndef MT_CHECK_H
#define MT_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(expr)) {                                                                             \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #expr);               \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_I64(a, b)                                                                         \
    do {                                                                                           \
        check_count++;                                                                             \
        int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                                              \
        if (a_ != b_) {                                                                            \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: %s == %s failed: %" PRId64 " != %" PRId64 "\n", __FILE__,      \
                    __LINE__, #a, #b, a_, b_);                                                     \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                         \
    do {                                                                                           \
        check_count++;                                                                             \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                                   \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a,  \
                    #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                   \
        }                                                                                          \
    } while (0)

#define CHECK_NULL(p) CHECK((p) == NULL)

// Ends main(): prints a summary line and returns the failure count.
#define CHECK_DONE()                                                                               \
    do {                                                                                           \
        printf("%d checks, %d failed\n", check_count, check_failures);                             \
        return check_failures != 0;                                                                \
    } while (0)

#endif
