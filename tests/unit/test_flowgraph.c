// SPDX-License-Identifier: MIT
// The flow graph (reporter/model/flowgraph.h) on hand-built stacks whose every number is
// worked out below: recursion counted once per stack, chains of lines that allocate
// nothing merged, several moments, lines told apart by function, file and line, and
// hiding small lines and edges without changing any number.
#include "flowgraph.h"

#include "../check.h"

#include <stdio.h>
#include <string.h>

static uint32_t line(mr_flow* g, const char* fn, const char* file, int no) {
    uint32_t id = UINT32_MAX;
    CHECK_EQ_I64(mr_flowgraph_line_id(g, fn, file, no, &id), 0);
    return id;
}

static void add(mr_flow* g, size_t t, uint64_t bytes, size_t n, const uint32_t* lines) {
    CHECK_EQ_I64(mr_flowgraph_add_stack(g, t, lines, n, bytes), 0);
}

// The box whose first line is `first`, or NULL.
static const mr_flow_box* box_of(const mr_flow* g, uint32_t first) {
    for (size_t i = 0; i < g->nboxes; i++)
        if (g->boxes[i].lines[0] == first)
            return &g->boxes[i];
    return NULL;
}

static const mr_flow_link* link_of(const mr_flow* g, uint32_t from_first, uint32_t to_first) {
    for (size_t i = 0; i < g->nlinks; i++)
        if (g->boxes[g->links[i].from].lines[0] == from_first &&
            g->boxes[g->links[i].to].lines[0] == to_first)
            return &g->links[i];
    return NULL;
}

// Lines: main:1 calls a:2, d:6 and f:5; a:2 -> b:3 -> c:4 (a chain down to c's malloc);
// f:5 calls f (line 5) and, at the bottom, g:9. Leaf first, moment 0:
//   c:4 b:3 a:2 main:1                 100
//   d:6 main:1                          50
//   g:9 f:5 f:5 f:5 main:1              30   (f:5 three times: counted once)
//   f:5 main:1                           4   (f allocates at line 5 itself)
// moment 1: c's stack 300, d's 0 (freed), g's 30, f's own 0.
static void test_numbers(void) {
    mr_flow g;
    CHECK_EQ_I64(mr_flowgraph_init(&g, 2), 0);
    uint32_t main1 = line(&g, "main", "m.c", 1), a2 = line(&g, "a", "m.c", 2);
    uint32_t b3 = line(&g, "b", "m.c", 3), c4 = line(&g, "c", "m.c", 4);
    uint32_t d6 = line(&g, "d", "m.c", 6), f5 = line(&g, "f", "m.c", 5);
    uint32_t g9 = line(&g, "g", NULL, 9);
    CHECK_EQ_I64(line(&g, "c", "m.c", 4), c4); // the same line, the same id
    CHECK(line(&g, "c", "other.c", 4) != c4);  // another file, another line
    CHECK(line(&g, "c", "m.c", 40) != c4);
    CHECK(line(&g, "g", "9", 9) != g9); // no file is not the file "9"
    add(&g, 0, 100, 4, (uint32_t[]){c4, b3, a2, main1});
    add(&g, 0, 50, 2, (uint32_t[]){d6, main1});
    add(&g, 0, 30, 5, (uint32_t[]){g9, f5, f5, f5, main1});
    add(&g, 0, 4, 2, (uint32_t[]){f5, main1});
    add(&g, 1, 300, 4, (uint32_t[]){c4, b3, a2, main1});
    add(&g, 1, 30, 5, (uint32_t[]){g9, f5, f5, f5, main1});
    CHECK_EQ_I64(g.stack_bytes[0], 184);
    CHECK_EQ_I64(g.stack_bytes[1], 330);
    CHECK_EQ_I64(g.cumulative[main1 * 2], 184);
    CHECK_EQ_I64(g.cumulative[f5 * 2], 34); // 30 once + its own 4
    CHECK_EQ_I64(g.local[f5 * 2], 4);
    CHECK_EQ_I64(g.cumulative[f5 * 2 + 1], 30);
    CHECK_EQ_I64(g.local[main1 * 2], 0);
    CHECK_EQ_I64(g.local[c4 * 2 + 1], 300);

    uint64_t total[2] = {184, 330};
    CHECK_EQ_I64(mr_flowgraph_finish(&g, total, 0.0), 0);
    CHECK_EQ_I64(g.hidden_local[0] + g.hidden_local[1], 0);
    // Boxes: main:1; a:2 b:3 c:4 merged; d:6; f:5 (calls itself: not merged); g:9.
    CHECK_EQ_I64(g.nboxes, 5);
    const mr_flow_box* chain = box_of(&g, a2);
    CHECK(chain && chain->nlines == 3 && chain->lines[1] == b3 && chain->lines[2] == c4);
    CHECK(chain && chain->local[0] == 100 && chain->cumulative[0] == 100 &&
          chain->local[1] == 300 && chain->cumulative[1] == 300);
    CHECK(box_of(&g, b3) == NULL && box_of(&g, c4) == NULL);
    const mr_flow_box *m = box_of(&g, main1), *f = box_of(&g, f5);
    CHECK(m && m->nlines == 1 && m->cumulative[0] == 184 && m->cumulative[1] == 330);
    CHECK(f && f->nlines == 1 && f->local[0] == 4 && f->cumulative[0] == 34);
    CHECK(g.boxes[0].lines[0] == main1); // by share, largest first
    // Links: main -> chain 100|300, main -> d 50|0, main -> f 34|30, f -> f 30|30 (once per
    // stack), f -> g 30|30; none inside the chain.
    CHECK_EQ_I64(g.nlinks, 5);
    const mr_flow_link* l = link_of(&g, main1, a2);
    CHECK(l && l->bytes[0] == 100 && l->bytes[1] == 300);
    l = link_of(&g, main1, d6);
    CHECK(l && l->bytes[0] == 50 && l->bytes[1] == 0);
    l = link_of(&g, main1, f5);
    CHECK(l && l->bytes[0] == 34 && l->bytes[1] == 30);
    l = link_of(&g, f5, f5);
    CHECK(l && l->bytes[0] == 30 && l->bytes[1] == 30);
    l = link_of(&g, f5, g9);
    CHECK(l && l->bytes[0] == 30);
    mr_flowgraph_free(&g);
}

// Hiding: with a share of 10%, d:6 (50 of 1000 at moment 0, nothing at 1) and its edge go;
// e:7, small at moment 0 but 200 of 1000 at moment 1, stays. Nothing shown changes, and the
// shown locals with hidden_local add up to every stack's bytes. Once d is gone, main:1
// calls only x:8 (which has one caller): main allocates nothing, so they merge.
static void test_hiding(void) {
    mr_flow g;
    CHECK_EQ_I64(mr_flowgraph_init(&g, 2), 0);
    uint32_t main1 = line(&g, "main", "m.c", 1), x8 = line(&g, "x", "m.c", 8);
    uint32_t d6 = line(&g, "d", "m.c", 6), e7 = line(&g, "e", "m.c", 7);
    uint32_t y9 = line(&g, "y", "m.c", 9);
    add(&g, 0, 900, 2, (uint32_t[]){x8, main1});
    add(&g, 0, 50, 2, (uint32_t[]){d6, main1});
    add(&g, 0, 50, 3, (uint32_t[]){e7, x8, main1});
    add(&g, 1, 800, 2, (uint32_t[]){x8, main1});
    add(&g, 1, 200, 3, (uint32_t[]){e7, x8, main1});
    add(&g, 1, 5, 3, (uint32_t[]){y9, x8, main1}); // below 10% at every moment
    uint64_t total[2] = {1000, 1005};
    CHECK_EQ_I64(mr_flowgraph_finish(&g, total, 0.10), 0);
    CHECK(box_of(&g, d6) == NULL && box_of(&g, y9) == NULL);
    CHECK_EQ_I64(g.hidden_local[0], 50);
    CHECK_EQ_I64(g.hidden_local[1], 5);
    for (size_t t = 0; t < 2; t++) {
        uint64_t sum = g.hidden_local[t];
        for (size_t i = 0; i < g.nboxes; i++)
            sum += g.boxes[i].local[t];
        CHECK_EQ_I64(sum, g.stack_bytes[t]);
    }
    const mr_flow_box* top = box_of(&g, main1);
    CHECK(top && top->nlines == 2 && top->lines[1] == x8);
    // The merged box's numbers: main's cumulative (d's 50 included: hiding changes nothing),
    // x's local.
    CHECK(top && top->cumulative[0] == 1000 && top->local[0] == 900 && top->local[1] == 800 &&
          top->cumulative[1] == 1005);
    const mr_flow_box* e = box_of(&g, e7);
    CHECK(e && e->local[0] == 50 && e->local[1] == 200);
    CHECK_EQ_I64(g.nboxes, 2);
    CHECK_EQ_I64(g.nlinks, 1);
    const mr_flow_link* l = link_of(&g, main1, e7);
    CHECK(l && l->bytes[0] == 50 && l->bytes[1] == 200);
    mr_flowgraph_free(&g);
}

// A cycle of lines that would each merge the next (p:1 -> q:2 -> p:1 only) stays as two
// boxes; a chain never swallows a line with two callers.
static void test_cycle(void) {
    mr_flow g;
    CHECK_EQ_I64(mr_flowgraph_init(&g, 1), 0);
    uint32_t p1 = line(&g, "p", "c.c", 1), q2 = line(&g, "q", "c.c", 2);
    uint32_t r3 = line(&g, "r", "c.c", 3), s4 = line(&g, "s", "c.c", 4);
    add(&g, 0, 10, 4, (uint32_t[]){q2, p1, q2, p1});
    add(&g, 0, 7, 3, (uint32_t[]){s4, r3, q2}); // (not reached from p: a second root)
    add(&g, 0, 3, 2, (uint32_t[]){s4, p1});
    uint64_t total = 20;
    CHECK_EQ_I64(mr_flowgraph_finish(&g, &total, 0.0), 0);
    // s:4 has two callers (r, p): r:3 merges nothing; q calls p and r: no merge either.
    for (size_t i = 0; i < g.nboxes; i++)
        CHECK_EQ_I64(g.boxes[i].nlines, 1);
    CHECK_EQ_I64(g.nboxes, 4);
    const mr_flow_link* l = link_of(&g, p1, q2);
    CHECK(l && l->bytes[0] == 10);
    l = link_of(&g, q2, p1);
    CHECK(l && l->bytes[0] == 10);
    mr_flowgraph_free(&g);
}

// A chain whose last line calls its first again (recursion through two lines): root p:1 ->
// q:2 -> p:1 -> q:2 -> z:3, and a stack of no bytes q:2 -> p:1 from the root. p allocates
// nothing and calls only q, whose one caller is p: they merge; q -> p is the box calling
// itself (once per stack: 10), q -> z leaves the box.
static void test_recursive_chain(void) {
    mr_flow g;
    CHECK_EQ_I64(mr_flowgraph_init(&g, 1), 0);
    uint32_t p1 = line(&g, "p", "c.c", 1), q2 = line(&g, "q", "c.c", 2);
    uint32_t z3 = line(&g, "z", "c.c", 3);
    add(&g, 0, 10, 5, (uint32_t[]){z3, q2, p1, q2, p1});
    add(&g, 0, 0, 2, (uint32_t[]){p1, q2});
    uint64_t total = 10;
    CHECK_EQ_I64(mr_flowgraph_finish(&g, &total, 0.0), 0);
    CHECK_EQ_I64(g.nboxes, 2);
    const mr_flow_box* b = box_of(&g, p1);
    CHECK(b && b->nlines == 2 && b->lines[1] == q2 && b->cumulative[0] == 10 && b->local[0] == 0);
    CHECK_EQ_I64(g.nlinks, 2);
    const mr_flow_link* l = link_of(&g, p1, p1);
    CHECK(l && l->bytes[0] == 10);
    l = link_of(&g, p1, z3);
    CHECK(l && l->bytes[0] == 10);
    mr_flowgraph_free(&g);
}

int main(void) {
    test_numbers();
    test_hiding();
    test_cycle();
    test_recursive_chain();
    printf("%d checks, %d failures\n", check_count, check_failures);
    return check_failures != 0;
}
