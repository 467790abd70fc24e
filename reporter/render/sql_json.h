// SPDX-License-Identifier: MIT
// `memreport sql --json`: the rows of one statement as a JSON array of objects, one
// compact object per line, columns in their order, numbers as numbers and text made valid
// UTF-8. Streams: nothing is kept between rows.
#ifndef MR_SQL_JSON_H
#define MR_SQL_JSON_H

#include "memtrace/sql.h"

#include <stddef.h>
#include <stdio.h>

// Writes row number `index` (0 opens the array). Returns 0 or -ENOMEM.
int mr_sql_json_row(FILE* out, size_t index, const mt_sql_row* r);
// Closes the array of a statement that gave `rows` rows ("[]" for none).
void mr_sql_json_end(FILE* out, size_t rows);

#endif
