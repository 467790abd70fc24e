// SPDX-License-Identifier: MIT
// Inside common/ only: the SQLite connection of an open capture, for the modules that read
// its tables (capture_tables.c). Nothing outside common/ sees SQL.
#ifndef MEMTRACE_CAPTURE_DB_H
#define MEMTRACE_CAPTURE_DB_H

#include "memtrace/capture.h"

sqlite3* mt_capture_sqlite(mt_capture* cap);

#endif
