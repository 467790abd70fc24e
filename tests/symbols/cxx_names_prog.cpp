// SPDX-License-Identifier: MIT
// A C++ program for cxx_names_test.py whose allocations go through the standard library's
// containers (string, vector, map, unordered_map, make_unique) from functions of its own,
// so reports must name app::load_names, app::build_index, app::Store<app::Record>::add,
// app::make_record and main as the sites, with std:: names shortened. The Store (its
// vector of 1024 Records, 24,576 B) and the record are still live at exit, for reports of
// the end (memreport live on the finished capture). argv[1] scales the work (1 or 2), for
// a diff of two runs. Built -O0 with frame pointers: nothing inlined.
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace app {
struct Record {
    long a, b, c;
};

template <typename T> struct Store {
    std::vector<T> items;
    __attribute__((noinline)) void add(const T& v) {
        items.push_back(v);
    }
};

__attribute__((noinline)) std::vector<std::string> load_names(int n) {
    std::vector<std::string> out;
    for (int i = 0; i < n; i++)
        out.push_back(std::string(100 + i % 3, 'x'));
    return out;
}

__attribute__((noinline)) std::map<std::string, std::vector<int>> build_index(int n) {
    std::map<std::string, std::vector<int>> m;
    for (int i = 0; i < n; i++)
        m[std::string(40, static_cast<char>('a' + i % 26)) + std::to_string(i)].push_back(i);
    return m;
}

__attribute__((noinline)) std::unique_ptr<Record> make_record() {
    return std::make_unique<Record>();
}
} // namespace app

int main(int argc, char** argv) {
    int scale = argc > 1 ? std::atoi(argv[1]) : 1;
    auto names = app::load_names(500 * scale);
    auto index = app::build_index(300 * scale);
    auto* store = new app::Store<app::Record>;
    for (int i = 0; i < 1000 * scale; i++)
        store->add(app::Record{});
    app::Record* record = app::make_record().release();
    std::unordered_map<std::string, int> seen;
    for (int i = 0; i < 200 * scale; i++)
        seen[std::string(30, 'q') + std::to_string(i)] = i;
    return names.size() + index.size() + seen.size() + store->items.size() > 0 && record ? 0 : 1;
}
