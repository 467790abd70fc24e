// SPDX-License-Identifier: MIT
// Stored bytes read a window at a time (varstream.h).
#include "varstream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int mr_varstream_open(mr_varstream* s, mr_varstream_read_fn read, void* ud, size_t from, size_t end,
                      size_t window, bool sum, uint64_t k0, uint64_t k1) {
    *s = (mr_varstream){.read = read, .ud = ud, .next = from, .end = end < from ? from : end};
    s->window = window < 16 ? 16 : window;
    if (!(s->buf = malloc(s->window)))
        return -ENOMEM;
    s->r = (mr_varreader){s->buf, s->buf, false};
    s->summing = sum;
    if (sum)
        mr_siphash_begin(&s->sum, k0, k1);
    return 0;
}

void mr_varstream_close(mr_varstream* s) {
    free(s->buf);
    s->buf = NULL;
}

void mr_varstream_fill(mr_varstream* s) {
    size_t left = (size_t)(s->r.end - s->r.p);
    memmove(s->buf, s->r.p, left);
    size_t n = s->window - left;
    if (n > s->end - s->next)
        n = s->end - s->next;
    int e = s->err ? s->err : s->read(s->ud, s->next, s->buf + left, n);
    if (e) {
        s->err = e;
        s->r.bad = true;
        n = 0;
    } else if (s->summing) {
        mr_siphash_add(&s->sum, s->buf + left, n);
    }
    s->next += n;
    s->r.p = s->buf;
    s->r.end = s->buf + left + n;
}

int mr_varstream_sum(mr_varstream* s, uint64_t* sum) {
    while (!s->err && s->next < s->end) {
        s->r.p = s->r.end; // what is left in the window is summed already
        mr_varstream_fill(s);
    }
    *sum = mr_siphash_end(&s->sum);
    return s->err;
}
