// SPDX-License-Identifier: MIT
// The flow graph of the aggregation model, heapprof's view: how live memory flows through
// the lines of code. A node is a line (function, file, line); a stack is its lines, leaf
// first (a physical frame expanded into its inlined functions). At each of several moments:
//   - local: the bytes of the stacks whose leaf-most line this is (where they were allocated);
//   - cumulative: the bytes of the stacks that pass through the line, once per stack even
//     when recursion shows it twice;
//   - an edge caller -> callee (two adjacent lines of a stack): the bytes of the stacks that
//     show that call, once per stack.
// mr_flowgraph_finish then decides what is drawn: lines whose cumulative bytes are below a share
// of the moment's total at every moment are hidden, and so are such edges; a chain of shown
// lines that allocate nothing at any moment, each with one shown callee that has no other
// shown caller, becomes one box listing its lines. Hiding never changes a number: the local
// bytes of the hidden lines are kept in hidden_local, so the boxes' locals and hidden_local
// add up to the bytes of all stacks. Pure computation; it never reads the capture.
#ifndef MR_FLOWGRAPH_H
#define MR_FLOWGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_flow_line {
    const char* function; // the caller's strings, which must outlive the graph
    const char* file;     // NULL without line info
    int line;             // 0 without line info
} mr_flow_line;

// A drawn node: one line, or a chain of lines merged (its caller first).
typedef struct mr_flow_box {
    uint32_t* lines; // ids into mr_flow.lines
    size_t nlines;
    uint64_t* local;      // [nt]: the locals of its lines (those of the last, the callee)
    uint64_t* cumulative; // [nt]: of its first line
    double share;         // the largest cumulative share of the moments' totals, 0..1
} mr_flow_box;

// A drawn edge between two boxes.
typedef struct mr_flow_link {
    uint32_t from, to; // indexes into mr_flow.boxes
    uint64_t* bytes;   // [nt]
} mr_flow_link;

typedef struct mr_flow_build mr_flow_build; // the tables used while adding stacks

typedef struct mr_flow {
    size_t nt; // moments
    mr_flow_line* lines;
    size_t nlines;
    uint64_t *local, *cumulative; // [line * nt + t]
    uint64_t* stack_bytes;        // [nt]: the bytes of every stack added
    // Set by mr_flowgraph_finish:
    uint64_t* total;        // [nt]: the totals shares are of
    uint64_t* hidden_local; // [nt]: the locals of hidden lines
    mr_flow_box* boxes;     // by largest share, then by first line id
    size_t nboxes;
    mr_flow_link* links; // by from, then to
    size_t nlinks;
    mr_flow_build* b;
} mr_flow;

// An empty graph of nt >= 1 moments. Returns 0 or -ENOMEM.
int mr_flowgraph_init(mr_flow* g, size_t nt);
void mr_flowgraph_free(mr_flow* g);

// The id of a line, added when new (lines are told apart by their strings). Returns 0 or
// -ENOMEM.
int mr_flowgraph_line_id(mr_flow* g, const char* function, const char* file, int line,
                         uint32_t* id);

// Adds `bytes` live at moment t along a stack of n >= 1 line ids, leaf first. Returns 0 or
// -ENOMEM.
int mr_flowgraph_add_stack(mr_flow* g, size_t t, const uint32_t* lines, size_t n, uint64_t bytes);

// Hides what is below min_share (0..1) of total[t] at every moment t and merges chains.
// Returns 0 or -ENOMEM. Call once, after the last stack.
int mr_flowgraph_finish(mr_flow* g, const uint64_t* total, double min_share);

#endif
