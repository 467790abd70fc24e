// SPDX-License-Identifier: MIT
// The functions of no_unwind_info.c (built without unwind info) that no_unwind_info_main.c
// calls.
#ifndef NO_UNWIND_INFO_H
#define NO_UNWIND_INFO_H

void noinfo_paths(void);        // the paths, printed, then allocated from
void noinfo_callback(int n);    // mallocs 2100 + n bytes
void* noinfo_thread(void* arg); // a thread start routine: mallocs 3100 bytes

#endif
