// SPDX-License-Identifier: MIT
// The self-contained HTML flame graph page of `memreport flamegraph`.
#ifndef MR_FLAMEGRAPH_PAGE_H
#define MR_FLAMEGRAPH_PAGE_H

#include <jansson.h>
#include <stdio.h>

// Writes the page with `data` (the graph, as cmd_flamegraph.c builds it) embedded, every
// < > & escaped so that no name can end the script element. Returns 0, -EPROTO (template
// without its placeholder) or -EIO.
int mr_flamegraph_page_write(FILE* fp, json_t* data);

#endif
