// SPDX-License-Identifier: MIT
// Two runs compared (diff.h): both runs' entries sorted by key and merged in one pass;
// the --fail-if limits parsed and checked against the totals.
#include "diff.h"

#include "memtrace/units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* const metric_names[MR_DIFF_NGATE] = {
    "peak_bytes",          "allocated_bytes",       "allocations",
    "leaked_bytes",        "definitely_lost_bytes", "indirectly_lost_bytes",
    "possibly_lost_bytes", "still_reachable_bytes", "runtime_held_bytes"};

const char* mr_diff_metric_name(mr_diff_metric m) {
    return metric_names[m];
}

bool mr_diff_metric_is_bytes(mr_diff_metric m) {
    return m != MR_DIFF_ALLOCATIONS;
}

static int cmp_str(const char* x, const char* y) {
    if (!x || !y)
        return (x != NULL) - (y != NULL);
    return strcmp(x, y);
}

static int cmp_key(const char* const* a, size_t na, const char* const* b, size_t nb) {
    for (size_t i = 0; i < na && i < nb; i++) {
        int c = cmp_str(a[i], b[i]);
        if (c)
            return c;
    }
    return (na > nb) - (na < nb);
}

// One entry of one run, for sorting both runs together.
typedef struct tagged {
    const mr_diff_entry* e;
    int run;
} tagged;

static int cmp_tagged(const void* a, const void* b) {
    const tagged *x = a, *y = b;
    return cmp_key(x->e->key, x->e->nkey, y->e->key, y->e->nkey);
}

int mr_diff_match(const mr_diff_entry* base, size_t nbase, const mr_diff_entry* next, size_t nnext,
                  mr_diff* out) {
    *out = (mr_diff){0};
    size_t n = nbase + nnext;
    tagged* all = malloc((n ? n : 1) * sizeof *all);
    out->rows = calloc(n ? n : 1, sizeof *out->rows);
    if (!all || !out->rows) {
        free(all);
        mr_diff_free(out);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nbase; i++)
        all[i] = (tagged){&base[i], MR_DIFF_BASE};
    for (size_t i = 0; i < nnext; i++)
        all[nbase + i] = (tagged){&next[i], MR_DIFF_NEW};
    if (n > 1) // qsort must never see the NULL of an empty vector
        qsort(all, n, sizeof *all, cmp_tagged);
    for (size_t i = 0; i < n; i++) {
        const mr_diff_entry* e = all[i].e;
        if (i == 0 || cmp_tagged(&all[i], &all[i - 1]) != 0)
            out->rows[out->n++] = (mr_diff_row){.key = e->key, .nkey = e->nkey};
        mr_diff_row* r = &out->rows[out->n - 1];
        if (all[i].run == MR_DIFF_BASE && !r->in[MR_DIFF_BASE]) // name it after the base
            r->key = e->key;
        r->in[all[i].run] = true;
        for (int m = 0; m < MR_DIFF_NMETRICS; m++)
            r->v[all[i].run][m] += e->v[m];
    }
    free(all);
    return 0;
}

void mr_diff_free(mr_diff* d) {
    free(d->rows);
    *d = (mr_diff){0};
}

int64_t mr_diff_delta(const mr_diff_row* r, mr_diff_metric m) {
    uint64_t b = r->v[MR_DIFF_BASE][m], n = r->v[MR_DIFF_NEW][m];
    if (n >= b)
        return n - b > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(n - b);
    return b - n > (uint64_t)INT64_MAX ? -INT64_MAX : -(int64_t)(b - n);
}

static uint64_t abs_delta(const mr_diff_row* r, mr_diff_metric m) {
    int64_t d = mr_diff_delta(r, m);
    return d < 0 ? (uint64_t)-d : (uint64_t)d;
}

static uint64_t weight(const mr_diff_row* r, int by) {
    if (by >= 0)
        return abs_delta(r, (mr_diff_metric)by);
    uint64_t w = 0;
    for (int m = 0; m < MR_DIFF_NMETRICS; m++)
        if (mr_diff_metric_is_bytes((mr_diff_metric)m) && abs_delta(r, (mr_diff_metric)m) > w)
            w = abs_delta(r, (mr_diff_metric)m);
    return w;
}

static int cmp_change(const void* a, const void* b) {
    const mr_diff_row *x = a, *y = b;
    if (x->weight != y->weight)
        return x->weight < y->weight ? 1 : -1;
    static const mr_diff_metric ties[] = {MR_DIFF_ALLOCATIONS, MR_DIFF_PEAK_BYTES,
                                          MR_DIFF_ALLOC_BYTES, MR_DIFF_LEAKED_BYTES};
    for (size_t i = 0; i < sizeof ties / sizeof *ties; i++) {
        uint64_t dx = abs_delta(x, ties[i]), dy = abs_delta(y, ties[i]);
        if (dx != dy)
            return dx < dy ? 1 : -1;
    }
    return cmp_key(x->key, x->nkey, y->key, y->nkey);
}

void mr_diff_sort(mr_diff* d, int by) {
    for (size_t i = 0; i < d->n; i++) // each row carries its key: qsort has no context
        d->rows[i].weight = weight(&d->rows[i], by);
    if (d->n > 1)
        qsort(d->rows, d->n, sizeof *d->rows, cmp_change);
}

// ---- --fail-if

static const struct {
    const char* name;
    double scale;
} units[] = {{"B", 1},
             {"KiB", 1024.0},
             {"MiB", 1048576.0},
             {"GiB", 1073741824.0},
             {"TiB", 1099511627776.0},
             {"KB", 1e3},
             {"MB", 1e6},
             {"GB", 1e9},
             {"TB", 1e12}};

static int parse_metric(const char* s, size_t len, mr_diff_metric* m) {
    for (int i = 0; i < MR_DIFF_NGATE; i++)
        if (strlen(metric_names[i]) == len && !strncmp(s, metric_names[i], len)) {
            *m = (mr_diff_metric)i;
            return 0;
        }
    return -EINVAL;
}

static void trim_copy(char* to, size_t tolen, const char* from, size_t len) {
    while (len && from[0] == ' ')
        from++, len--;
    while (len && from[len - 1] == ' ')
        len--;
    snprintf(to, tolen, "%.*s", (int)len, from);
}

// The VALUE of a limit (diff.h) into l->kind and l->amount.
static int parse_value(const char* v, mr_diff_limit* l, char* err, size_t errlen) {
    const char* p = v;
    l->kind = MR_LIMIT_VALUE;
    if (*p == '+') {
        l->kind = MR_LIMIT_GROWTH;
        p++;
    }
    size_t n = strspn(p, "0123456789");
    if (n && p[n] == '.')
        n += 1 + strspn(p + n + 1, "0123456789");
    if (!n || p[n - 1] == '.') {
        snprintf(err, errlen, "'%s': expected a number, +number or +number%%", v);
        return -EINVAL;
    }
    l->amount = strtod(p, NULL);
    const char* unit = p + n;
    while (*unit == ' ')
        unit++;
    if (!*unit)
        return 0;
    if (!strcmp(unit, "%")) {
        if (l->kind != MR_LIMIT_GROWTH) {
            snprintf(err, errlen, "'%s': a percentage is a growth over base: write +%.*s%%", v,
                     (int)n, p);
            return -EINVAL;
        }
        l->kind = MR_LIMIT_PERCENT;
        return 0;
    }
    if (!mr_diff_metric_is_bytes(l->metric)) {
        snprintf(err, errlen, "'%s': %s is a count: no unit but %%", v, metric_names[l->metric]);
        return -EINVAL;
    }
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (!strcmp(unit, units[i].name)) {
            l->amount *= units[i].scale;
            return 0;
        }
    snprintf(err, errlen, "'%s': unknown unit '%s' (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB or %%)",
             v, unit);
    return -EINVAL;
}

int mr_diff_limit_parse(const char* text, mr_diff_limit* out, char* err, size_t errlen) {
    *out = (mr_diff_limit){0};
    const char* gt = strchr(text, '>');
    char metric[64];
    trim_copy(metric, sizeof metric, text, gt ? (size_t)(gt - text) : strlen(text));
    if (!gt || parse_metric(metric, strlen(metric), &out->metric)) {
        snprintf(err, errlen,
                 "'%s': expected METRIC>LIMIT, METRIC one of peak_bytes, allocated_bytes, "
                 "allocations, leaked_bytes, definitely_lost_bytes, indirectly_lost_bytes, "
                 "possibly_lost_bytes, still_reachable_bytes",
                 text);
        return -EINVAL;
    }
    trim_copy(out->text, sizeof out->text, gt + 1, strlen(gt + 1));
    if (parse_value(out->text, out, err, errlen))
        return -EINVAL;
    if (!(out->amount < 9.2e18)) {
        snprintf(err, errlen, "'%s': too large a limit", out->text);
        return -EINVAL;
    }
    return 0;
}

// "1.1 MiB" (one decimal: a message, not a table) or "512 B"; a count as it is.
static void format_amount(mr_diff_metric m, uint64_t v, char* buf, size_t len) {
    if (!mr_diff_metric_is_bytes(m)) {
        snprintf(buf, len, "%llu", (unsigned long long)v);
        return;
    }
    mt_byte_unit u = mt_units_for_bytes(v);
    if (u.scale == 1)
        snprintf(buf, len, "%llu B", (unsigned long long)v);
    else
        snprintf(buf, len, "%.1f %s", (double)v / (double)u.scale, u.name);
}

static void format_delta(mr_diff_metric m, uint64_t base, uint64_t next, char* buf, size_t len) {
    char a[48];
    format_amount(m, next >= base ? next - base : base - next, a, sizeof a);
    snprintf(buf, len, "%s%s", next >= base ? "+" : "-", a);
}

bool mr_diff_limit_broken(const mr_diff_limit* l, uint64_t base, uint64_t next, char* msg,
                          size_t msglen) {
    const char* name = metric_names[l->metric];
    char delta[64], value[48];
    format_delta(l->metric, base, next, delta, sizeof delta);
    double growth = (double)next - (double)base;
    switch (l->kind) {
    case MR_LIMIT_VALUE:
        if ((double)next <= l->amount)
            return false;
        format_amount(l->metric, next, value, sizeof value);
        snprintf(msg, msglen, "%s is %s (%s), limit %s", name, value, delta, l->text);
        return true;
    case MR_LIMIT_GROWTH:
        if (growth <= l->amount)
            return false;
        if (base)
            snprintf(msg, msglen, "%s grew %s (%.1f%%), limit %s", name, delta,
                     100.0 * growth / (double)base, l->text);
        else
            snprintf(msg, msglen, "%s grew %s (from 0), limit %s", name, delta, l->text);
        return true;
    case MR_LIMIT_PERCENT:
        if (base == 0 ? next == 0 : growth * 100.0 <= l->amount * (double)base)
            return false;
        if (base)
            snprintf(msg, msglen, "%s grew %.1f%% (%s), limit %s", name,
                     100.0 * growth / (double)base, delta, l->text);
        else
            snprintf(msg, msglen, "%s grew from 0 (%s), limit %s", name, delta, l->text);
        return true;
    }
    return false;
}
