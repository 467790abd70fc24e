// SPDX-License-Identifier: MIT
// The tracer's file descriptors never collide with the program's. A program may close every
// descriptor it did not open (close_range, closefrom, daemons, shells) and then open its own
// files; the tracer must never read or write those. So the tracer's long-lived descriptors
// sit far above the program's (the kernel gives out the lowest free number), and its SQLite
// checks, before every use, that a descriptor is still the file it opened (reopening it by
// path when the program closed it).
#ifndef MT_FDGUARD_H
#define MT_FDGUARD_H

// Replaces the file system calls of the tracer's private SQLite by checked ones. Call once,
// before the first SQLite file is opened. Returns 0, or -1 if they cannot be replaced.
int mt_fdguard_install(void);

// Fork child: the parent's files are not the child's to write; closes its copies of them.
void mt_fdguard_forget_all(void);

// The lowest descriptor number the tracer keeps its files at.
int mt_fdguard_high_base(void);

// Moves `fd` up to mt_fdguard_high_base() or above (close-on-exec) and returns the new number;
// returns `fd` itself if it cannot.
int mt_fdguard_move_high(int fd);

#endif
