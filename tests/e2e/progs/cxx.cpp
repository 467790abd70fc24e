// SPDX-License-Identifier: MIT
// e2e truth for C++: new/delete, new[]/delete[], aligned new (aligned_alloc), and STL
// containers whose allocations are read back from the containers themselves (vector and
// string capacities, map and list node sizes). No iostreams; the truth goes out by write(2).
#include "truth.h"

#include <list>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

struct alignas(64) Wide {
    char bytes[192];
};

struct Obj {
    long a, b, c; // 24 bytes
};

static void* volatile sink;

static void test_new_delete() {
    Obj* o = new Obj();
    t_call(T_MALLOC);
    t_alloc(sizeof(Obj));
    delete o;
    t_call(T_FREE);
    t_free(sizeof(Obj));

    int* arr = new int[1000];
    t_call(T_MALLOC);
    t_alloc(4000);
    delete[] arr;
    t_call(T_FREE);
    t_free(4000);

    // libstdc++ sends over-aligned new to aligned_alloc (size a multiple of the alignment).
    Wide* w = new Wide;
    t_call(T_ALIGNED_ALLOC);
    t_alloc(sizeof(Wide));
    if (reinterpret_cast<uintptr_t>(w) % 64)
        t_fail(10, "aligned new");
    delete w;
    t_call(T_FREE);
    t_free(sizeof(Wide));

    Wide* wa = new Wide[3];
    t_call(T_ALIGNED_ALLOC);
    t_alloc(3 * sizeof(Wide));
    delete[] wa;
    t_call(T_FREE);
    t_free(3 * sizeof(Wide));

    // nothrow new that succeeds, and a leaked object.
    char* nt = new (std::nothrow) char[77];
    t_call(T_MALLOC);
    t_alloc(77);
    delete[] nt;
    t_call(T_FREE);
    t_free(77);
    sink = new Obj(); // leaked
    t_call(T_MALLOC);
    t_alloc(sizeof(Obj));
}

static void test_vector() {
    std::vector<int> v;
    size_t cap = 0;
    for (int i = 0; i < 1000; i++) {
        v.push_back(i);
        if (v.capacity() != cap) { // grew: the new array, then the old one freed
            t_call(T_MALLOC);
            t_alloc(v.capacity() * sizeof(int));
            if (cap) {
                t_call(T_FREE);
                t_free(cap * sizeof(int));
            }
            cap = v.capacity();
        }
    }
    std::vector<double> r;
    r.reserve(500);
    t_call(T_MALLOC);
    t_alloc(500 * sizeof(double));
    r.assign(500, 1.5);
    { std::vector<int>().swap(v); } // frees v's array now
    t_call(T_FREE);
    t_free(cap * sizeof(int));
    // r is freed at scope exit
    t_call(T_FREE);
    t_free(500 * sizeof(double));
}

static void test_string() {
    std::string s = "short"; // in the small buffer: no allocation
    size_t cap = s.capacity();
    for (int i = 0; i < 200; i++) {
        s += "0123456789";
        if (s.capacity() != cap) {
            t_call(T_MALLOC);
            t_alloc(s.capacity() + 1);
            if (cap > 15) {
                t_call(T_FREE);
                t_free(cap + 1);
            }
            cap = s.capacity();
        }
    }
    if (s.size() != 2005)
        t_fail(11, "string");
    t_call(T_FREE); // at scope exit
    t_free(cap + 1);
}

static void test_nodes() {
    typedef std::map<int, long> Map;
    const size_t map_node = sizeof(std::_Rb_tree_node<Map::value_type>);
    {
        Map m;
        for (int i = 0; i < 300; i++)
            m[i * 7] = i;
        truth.calls[T_MALLOC] += 300;
        for (int i = 0; i < 300; i++)
            t_alloc(map_node);
        m.erase(14);
        t_call(T_FREE);
        t_free(map_node);
        // 299 nodes freed at scope exit
        truth.calls[T_FREE] += 299;
        for (int i = 0; i < 299; i++)
            t_free(map_node);
    }
    const size_t list_node = sizeof(std::_List_node<long>);
    {
        std::list<long> l;
        for (int i = 0; i < 100; i++)
            l.push_back(i);
        truth.calls[T_MALLOC] += 100;
        for (int i = 0; i < 100; i++)
            t_alloc(list_node);
        truth.calls[T_FREE] += 100;
        for (int i = 0; i < 100; i++)
            t_free(list_node);
    }
    {
        std::unique_ptr<Obj> u = std::make_unique<Obj>();
        t_call(T_MALLOC);
        t_alloc(sizeof(Obj));
        u->a = 1;
    }
    t_call(T_FREE);
    t_free(sizeof(Obj));
}

int main() {
    if (!t_baseline()) {
        test_new_delete();
        test_vector();
        test_string();
        test_nodes();
        if (truth.nlive != 1 || truth.live != sizeof(Obj))
            t_fail(12, "model");
    }
    return t_write("") ? 13 : 0;
}
