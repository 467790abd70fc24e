// SPDX-License-Identifier: MIT
// An empty capture: the schema (schema.h) with its fixed rows, as a file is created. Built
// once, at build time, by capture_template_gen into the image every new capture starts
// from (capture_write.c), so no process parses the schema's CREATE statements to run them.
#ifndef MEMTRACE_CAPTURE_SCHEMA_H
#define MEMTRACE_CAPTURE_SCHEMA_H

typedef struct sqlite3 sqlite3;

// Makes the empty database db an empty capture: page size, application_id, user_version,
// the tables, the event kinds, meta schema_version and capture_status 'recording', and WAL
// mode. 0 or -EIO.
int mt_capture_schema_create(sqlite3* db);

#endif
