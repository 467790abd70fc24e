// SPDX-License-Identifier: MIT
// C++ benchmark workload: std::string appends, std::vector growth, std::map and
// std::unordered_map inserts and erases, made from a few call paths (bench_st's recursion,
// 8 stacks), every block allocated by libstdc++'s operator new (Debian builds libstdc++
// without frame pointers, so its frames sit between malloc and this program's code;
// std::string's members run inside libstdc++.so too). The program cannot see its heap
// calls, so it counts them from what the containers show, which is exact for libstdc++:
// a string or vector allocates exactly when its capacity changes (a string not for the 15
// bytes kept inside it), a map or unordered_map allocates one node per inserted key and
// frees one per erased key, and an unordered_map reallocates its bucket array exactly when
// bucket_count() changes (one bucket is kept inside it). BENCH_WORK iterations of work per
// malloc/free pair, as bench_st. Prints its counts and ns per pair on one stdout line.
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include "workload.h"
}

namespace {

constexpr unsigned kDocs = 256;
constexpr unsigned kKeys = 8192;
constexpr unsigned kPaths = 8;
constexpr size_t kStringInline = 15; // libstdc++'s small-string buffer

struct doc {
    std::string text;
    std::vector<uint32_t> items;
};

struct cxx_state {
    doc docs[kDocs];
    std::map<uint64_t, uint32_t> ordered;
    std::unordered_map<uint64_t, uint32_t> hashed;
    uint64_t rng = 0;
    uint64_t todo = 0; // mallocs still to make
    uint64_t mallocs = 0, frees = 0;
    unsigned work = 0;

    void count_string(size_t cap0, size_t cap1) {
        if (cap0 == cap1)
            return;
        mallocs += cap1 > kStringInline;
        frees += cap0 > kStringInline;
    }
    void count_vector(size_t cap0, size_t cap1) {
        if (cap0 == cap1)
            return;
        mallocs += cap1 > 0;
        frees += cap0 > 0;
    }
    void count_buckets(size_t n0, size_t n1) {
        if (n0 == n1)
            return;
        mallocs += n1 > 1;
        frees += n0 > 1;
    }
};

__attribute__((noinline)) void string_op(cxx_state& st, uint64_t r) {
    std::string& s = st.docs[(r >> 48) % kDocs].text;
    size_t cap0 = s.capacity();
    size_t limit = 64 + (r >> 20) % 16384;
    if (s.size() > limit) {
        std::string().swap(s); // give the buffer back, as a finished document would
    } else {
        size_t n = 1 + (r >> 8) % 200;
        std::string piece(n, (char)('a' + r % 26)); // a temporary of its own
        st.mallocs += n > kStringInline;
        s += piece;
        st.frees += n > kStringInline; // the temporary
    }
    st.count_string(cap0, s.capacity());
}

__attribute__((noinline)) void vector_op(cxx_state& st, uint64_t r) {
    std::vector<uint32_t>& v = st.docs[(r >> 48) % kDocs].items;
    size_t cap0 = v.capacity();
    if (v.size() > 64 + (r >> 20) % 8192) {
        std::vector<uint32_t>().swap(v);
        st.count_vector(cap0, v.capacity());
        return;
    }
    unsigned n = 1 + (unsigned)((r >> 8) % 32);
    for (unsigned i = 0; i < n; i++) {
        size_t c0 = v.capacity();
        v.push_back((uint32_t)(r >> i));
        st.count_vector(c0, v.capacity());
    }
}

__attribute__((noinline)) void map_op(cxx_state& st, uint64_t r) {
    uint64_t key = (r >> 40) % kKeys;
    st.mallocs += st.ordered.try_emplace(key, (uint32_t)r).second;
    st.frees += st.ordered.erase((r >> 8) % kKeys);
}

__attribute__((noinline)) void hash_op(cxx_state& st, uint64_t r) {
    size_t b0 = st.hashed.bucket_count();
    st.mallocs += st.hashed.try_emplace((r >> 40) % kKeys, (uint32_t)r).second;
    st.count_buckets(b0, st.hashed.bucket_count());
    st.frees += st.hashed.erase((r >> 8) % kKeys);
}

uint64_t cxx_leaf(void* arg) {
    cxx_state& st = *static_cast<cxx_state*>(arg);
    uint64_t acc = 0;
    for (int i = 0; i < BENCH_OPS_PER_LEAF && st.mallocs < st.todo; i++) {
        uint64_t r = rng_next(&st.rng);
        uint64_t before = st.mallocs;
        switch (r % 4) {
        case 0:
            string_op(st, r);
            break;
        case 1:
            vector_op(st, r);
            break;
        case 2:
            map_op(st, r);
            break;
        default:
            hash_op(st, r);
            break;
        }
        acc += burn(r, st.work * (unsigned)(st.mallocs - before));
    }
    return acc;
}

} // namespace

int main() {
    bench_settings cfg = bench_settings_load();
    static cxx_state st;
    st.rng = cfg.seed;
    st.todo = cfg.events / 2;
    st.work = cfg.work;

    uint64_t t0 = now_ns(), acc = 0;
    while (st.mallocs < st.todo)
        acc += bench_descend(rng_next(&st.rng) % kPaths, 6, cxx_leaf, &st);
    // Everything is given back, so that frees match mallocs in the counts below.
    for (doc& d : st.docs) {
        st.count_string(d.text.capacity(), kStringInline);
        std::string().swap(d.text);
        st.count_vector(d.items.capacity(), 0);
        std::vector<uint32_t>().swap(d.items);
    }
    st.frees += st.ordered.size();
    st.ordered.clear();
    st.frees += st.hashed.size() + (st.hashed.bucket_count() > 1);
    std::unordered_map<uint64_t, uint32_t>().swap(st.hashed);
    uint64_t elapsed = now_ns() - t0;
    bench_sink = acc;

    uint64_t pairs = st.mallocs ? st.mallocs : 1;
    printf("bench_cxx: threads=1 mallocs=%llu frees=%llu events=%llu elapsed_ns=%llu "
           "ns_per_pair=%.1f work=%u\n",
           (unsigned long long)st.mallocs, (unsigned long long)st.frees,
           (unsigned long long)(st.mallocs + st.frees), (unsigned long long)elapsed,
           (double)elapsed / (double)pairs, cfg.work);
    return 0;
}
