// SPDX-License-Identifier: MIT
// The one temporary directory of a test process, for the files a unit test writes: made
// on first use, removed with all it holds when the process that made it exits.
#ifndef MT_TEST_TMPDIR_H
#define MT_TEST_TMPDIR_H

// The directory's path (/tmp/mt-test-XXXXXX); exits 99 when it cannot be made.
const char* test_tmpdir(void);
// The path of name in that directory, in one of 8 buffers that are each overwritten 8
// calls later.
char* test_tmppath(const char* name);

#endif
